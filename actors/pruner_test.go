package actors

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestPrunerQueue: keys are due in the order of their last write, after
// the Pruner's wait; a key requeued after a prune that dropped nothing
// waits twice as long (up to a minute); a removed key is never due.
func TestPrunerQueue(t *testing.T) {
	p := &Pruner{after: time.Second}
	p.list.prev, p.list.next = &p.list, &p.list
	t0 := time.Unix(1000, 0)
	pids := []*actor.PID{{Id: "a"}, {Id: "b"}, {Id: "c"}}
	var es [3]pruneEntry
	p.queue(&es[0], pids[0], t0, false)
	p.queue(&es[1], pids[1], t0.Add(100*time.Millisecond), false)
	p.queue(&es[2], pids[2], t0.Add(200*time.Millisecond), false)
	p.queue(&es[0], pids[0], t0.Add(300*time.Millisecond), false) // written again: last
	ids := func(ps []*actor.PID) (out []string) {
		for _, p := range ps {
			out = append(out, p.Id)
		}
		return out
	}
	if got := ids(p.dueAt(t0.Add(999 * time.Millisecond).UnixNano())); len(got) != 0 {
		t.Fatalf("due before a second: %v", got)
	}
	p.remove(&es[2])
	if got := ids(p.dueAt(t0.Add(1250 * time.Millisecond).UnixNano())); len(got) != 1 || got[0] != "b" {
		t.Fatalf("due at 1.25 s: %v, want [b]", got)
	}
	if got := ids(p.dueAt(t0.Add(1300 * time.Millisecond).UnixNano())); len(got) != 1 || got[0] != "a" {
		t.Fatalf("due at 1.3 s: %v, want [a]", got)
	}
	if p.Len() != 0 {
		t.Fatalf("%d queued, want 0", p.Len())
	}
	// Backoff: 1 s, then 2 s, 4 s, … up to a minute; a write resets it.
	now := t0
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		p.queue(&es[1], pids[1], now, want != time.Second)
		if es[1].wait != want {
			t.Fatalf("wait %v, want %v", es[1].wait, want)
		}
		if got := p.dueAt(now.Add(want - 1).UnixNano()); len(got) != 0 {
			t.Fatalf("due early after %v", want)
		}
		if got := p.dueAt(now.Add(want).UnixNano()); len(got) != 1 {
			t.Fatalf("not due after %v", want)
		}
		now = now.Add(want)
	}
	for range 10 {
		p.queue(&es[1], pids[1], now, true)
	}
	if es[1].wait != time.Minute {
		t.Fatalf("wait %v after many backoffs, want a minute", es[1].wait)
	}
	p.queue(&es[1], pids[1], now, false)
	if es[1].wait != time.Second {
		t.Fatalf("wait %v after a write, want a second", es[1].wait)
	}
}
