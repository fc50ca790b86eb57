package actors

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// keyActors starts a local actor system (stopped with the test) and returns
// it and a function that spawns a key actor of a users ⋈ domains join on
// store and w, initialised as the cluster would for key: a new activation.
func keyActors(t testing.TB, store persistence.Store, w *Writer) (*actor.ActorSystem, func(key string) *actor.PID) {
	return keyActorsWith(t, store, w, nil)
}

// keyActorsWith is keyActors with set applied to the actors' Deps.
func keyActorsWith(t testing.TB, store persistence.Store, w *Writer, set func(*Deps)) (*actor.ActorSystem, func(key string) *actor.PID) {
	spec := &joins.CDCSpec{Type: joins.Inner,
		Left:  joins.SideSpec{Name: "users", PK: "id", JoinOn: "id"},
		Right: joins.SideSpec{Name: "domains", PK: "id", JoinOn: "user_id"}}
	deps := &Deps{Job: "j", CDC: spec, Store: store, Writer: w, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if set != nil {
		set(deps)
	}
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	return system, func(key string) *actor.PID {
		// The kind's mailbox (NewKind): a message left in it when the
		// actor stops is a dead letter, answered (WatchDeadLetters), not
		// dropped.
		pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &keyActor{deps: deps} }, actor.WithMailbox(deadLetterMailbox())))
		system.Root.Send(pid, &cluster.ClusterInit{Identity: &cluster.ClusterIdentity{Identity: key, Kind: "k"}})
		return pid
	}
}

// embeddedKeyActors is keyActors on a new embedded store and a Writer
// over it (closed with the test), and the store.
func embeddedKeyActors(t testing.TB) (persistence.Store, *actor.ActorSystem, func(key string) *actor.PID) {
	store := newEmbedded(t)
	w := NewWriter(store, WriterOptions{})
	t.Cleanup(func() { w.Close(context.Background()) })
	system, spawn := keyActors(t, store, w)
	return store, system, spawn
}

// TestKeyActorAnswersOnlyWhenDurable: a re-sent request whose events the
// key already applied, arriving while the write of those events is still
// pending, is not answered before that write: when the write is then
// refused (a newer activation took the key), both answers are errors. An
// early success for the re-sent request would let the sender commit
// changes that were never written.
func TestKeyActorAnswersOnlyWhenDurable(t *testing.T) {
	ctx := context.Background()
	inner := newEmbedded(t)
	gs := &gateStore{Store: inner, gate: make(chan struct{})}
	w := NewWriter(gs, WriterOptions{})
	defer w.Close(ctx)
	system, spawn := keyActors(t, inner, w)
	pid := spawn("7")

	ev := record.Event{Key: "7", Side: record.Left, Op: record.OpCreate,
		After: record.Row{"id": "7", "name": "x"}, Pos: record.Position{Source: "s", Partition: 0, Offset: 1}}
	send := func(resend bool) chan any {
		ke := KeyEvent(ev, "")
		ch := make(chan any, 1)
		system.Root.Send(pid, &LocalApply{Req: &keycore.Request{Events: []keycore.Event{ke}, Resend: resend}, Reply: ReplyChan(ch)})
		return ch
	}
	first := send(false)
	again := send(true) // its event is applied (in memory); the first write is pending
	select {
	case x := <-again:
		t.Errorf("re-sent request answered %+v before the write of its events", x)
		again <- x // for the check below
	case <-time.After(100 * time.Millisecond):
	}
	// A newer activation takes the key: the pending write will be refused.
	if _, err := inner.Acquire(ctx, "j", "7"); err != nil {
		t.Fatal(err)
	}
	close(gs.gate)
	for name, ch := range map[string]chan any{"first": first, "re-sent": again} {
		select {
		case x := <-ch:
			var ap *keypb.Applied
			switch a := x.(type) {
			case *LocalApplied:
				ap = a.Applied
			case *keypb.Applied:
				ap = a
			}
			if ap == nil || ap.Error == "" {
				t.Errorf("%s request answered %#v, want a write error (fenced)", name, x)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s request: no answer", name)
		}
	}
	if _, err := inner.Load(ctx, "j", "7"); err != persistence.ErrNotFound {
		t.Errorf("the stale activation's state was written: %v", err)
	}
}

// TestKeyActorStaleActivationReloadsOnGap: two activations of one key (a
// topology change activated it twice); the newer one applies and writes
// more of the key's changes; a request that builds on them then reaches
// the older one, which has not written since and so was never fenced out.
// It must not refuse that request as a gap for ever: it takes the key again,
// reloads the durable state and applies the request.
func TestKeyActorStaleActivationReloadsOnGap(t *testing.T) {
	ctx := context.Background()
	store, system, spawn := embeddedKeyActors(t)
	apply := func(pid *actor.PID, off int64, prev map[string]int64) *keypb.Applied {
		t.Helper()
		ev := record.Event{Key: "7", Side: record.Right, Op: record.OpCreate,
			After: record.Row{"id": fmt.Sprint(off), "user_id": "7"}, Pos: record.Position{Source: "s", Partition: 0, Offset: off}}
		ke := KeyEvent(ev, "")
		ch := make(chan any, 1)
		system.Root.Send(pid, &LocalApply{Req: &keycore.Request{Events: []keycore.Event{ke}, Prev: prev}, Reply: ReplyChan(ch)})
		select {
		case x := <-ch:
			switch a := x.(type) {
			case *LocalApplied:
				return a.Applied
			case *keypb.Applied:
				return a
			}
			t.Fatalf("answer %T", x)
		case <-time.After(5 * time.Second):
			t.Fatal("no answer")
		}
		return nil
	}
	part := record.Position{Source: "s", Partition: 0}.PartitionID()
	stale := spawn("7")
	if ap := apply(stale, 1, nil); ap.Error != "" {
		t.Fatal(ap.Error)
	}
	owner := spawn("7") // the same key activated again: it takes a newer epoch
	for off := int64(2); off <= 5; off++ {
		if ap := apply(owner, off, map[string]int64{part: off - 1}); ap.Error != "" {
			t.Fatalf("owner, offset %d: %s", off, ap.Error)
		}
	}
	// The next request builds on offset 5 and reaches the stale activation.
	if ap := apply(stale, 6, map[string]int64{part: 5}); ap.Error != "" {
		t.Fatalf("stale activation refused a request building on the owner's durable writes: %s", ap.Error)
	}
	snap, err := store.Load(ctx, "j", "7")
	if off, _ := snap.Offsets.Get(part); err != nil || off != 6 {
		t.Fatalf("durable offsets %v, %v; want %s at 6", snap.Offsets, err, part)
	}
	// The other activation, now behind, does the same with the next one.
	if ap := apply(owner, 7, map[string]int64{part: 6}); ap.Error != "" {
		t.Fatalf("offset 7: %s", ap.Error)
	}
	snap, err = store.Load(ctx, "j", "7")
	if off, _ := snap.Offsets.Get(part); err != nil || off != 7 {
		t.Fatalf("durable offsets %v, %v; want %s at 7", snap.Offsets, err, part)
	}
}

// TestKeyActorWritesEachRequest: requests that reach a key while its
// write is in flight each write the state once their turn comes; none is
// answered before its write, and the durable state holds every change.
func TestKeyActorWritesEachRequest(t *testing.T) {
	ctx := context.Background()
	inner := newEmbedded(t)
	gs := &gateStore{Store: inner, gate: make(chan struct{})}
	w := NewWriter(gs, WriterOptions{})
	defer w.Close(ctx)
	system, spawn := keyActors(t, inner, w)
	pid := spawn("7")

	send := func(off int64, ev record.Event) chan any {
		ev.Key, ev.Pos = "7", record.Position{Source: "s", Partition: 0, Offset: off}
		ke := KeyEvent(ev, "")
		ch := make(chan any, 1)
		system.Root.Send(pid, &LocalApply{Req: &keycore.Request{Events: []keycore.Event{ke}}, Reply: ReplyChan(ch)})
		return ch
	}
	chans := []chan any{send(1, record.Event{Side: record.Left, Op: record.OpCreate, After: record.Row{"id": "7", "name": "x"}})}
	for i := int64(2); i <= 6; i++ {
		chans = append(chans, send(i, record.Event{Side: record.Right, Op: record.OpCreate, After: record.Row{"id": fmt.Sprint(i), "user_id": "7"}}))
	}
	time.Sleep(100 * time.Millisecond) // all six are in the actor's hands; the first write waits at the gate
	for i, ch := range chans {
		select {
		case x := <-ch:
			t.Fatalf("request %d answered %#v before its write", i+1, x)
		default:
		}
	}
	close(gs.gate)
	var outs int
	for i, ch := range chans {
		select {
		case x := <-ch:
			la, ok := x.(*LocalApplied)
			if !ok || la.Applied.Error != "" {
				t.Fatalf("request %d answered %#v", i+1, x)
			}
			outs += len(la.Outputs)
		case <-time.After(5 * time.Second):
			t.Fatalf("request %d: no answer", i+1)
		}
	}
	if outs != 5 {
		t.Errorf("%d outputs, want 5 (one per domain)", outs)
	}
	if n := w.Submitted(); n != 6 {
		t.Errorf("%d snapshots encoded and submitted for 6 requests, want one each", n)
	}
	snap, err := inner.Load(ctx, "j", "7")
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := snap.Offsets.Get("s/0"); off != 6 {
		t.Errorf("durable offsets %v, want s/0=6", snap.Offsets)
	}
}

// refusingStore refuses every Save as a store gone back in time.
type refusingStore struct{ persistence.Store }

func (s refusingStore) Save(context.Context, []persistence.Snapshot) error {
	return &persistence.StaleStoreError{Job: "j", Seen: 2, Found: 1}
}

// TestKeyActorStopAnswersQueuedRequests: a key whose write is refused
// (here: the store went back in time) stops, with requests still queued in
// its mailbox. Each of them must be answered at once, as if no actor had
// been there, so the sender resends it to the next activation: an actor
// that stops drops the messages left in its mailbox without a dead letter,
// and their senders used to wait out the whole request timeout (30 s) —
// the node that found the rollback took that long to stop.
func TestKeyActorStopAnswersQueuedRequests(t *testing.T) {
	ctx := context.Background()
	inner := newEmbedded(t)
	w := NewWriter(refusingStore{inner}, WriterOptions{})
	defer w.Close(ctx)
	system, spawn := keyActors(t, inner, w)
	WatchDeadLetters(system)
	pid := spawn("7")
	const n = 300
	chs := make([]chan any, n)
	for i := range chs {
		ev := record.Event{Key: "7", Side: record.Left, Op: record.OpCreate,
			After: record.Row{"id": "7", "name": fmt.Sprint(i)}, Pos: record.Position{Source: "s", Partition: 0, Offset: int64(i + 1)}}
		ke := KeyEvent(ev, "")
		chs[i] = make(chan any, 1)
		system.Root.Send(pid, &LocalApply{Req: &keycore.Request{Events: []keycore.Event{ke}}, Reply: ReplyChan(chs[i])})
	}
	deadline := time.After(5 * time.Second)
	for i, ch := range chs {
		select {
		case x := <-ch:
			if la, ok := x.(*LocalApplied); ok && la.Applied.Error == "" {
				t.Fatalf("request %d answered %+v on a store that refuses every write", i, la.Applied)
			}
		case <-deadline:
			t.Fatalf("request %d of %d: no answer after the activation stopped", i, n)
		}
	}
}

// TestKeyActorResendAfterOffload: once its writes are durable a key keeps
// its outbox entries in the store only (keycore.Core.Offload); an input
// re-sent before it is committed (a sender that lost the answer) makes
// the key reload its durable state and answer the same outputs again.
func TestKeyActorResendAfterOffload(t *testing.T) {
	_, system, spawn := embeddedKeyActors(t)
	pid := spawn("7")
	apply := func(ev record.Event, resend bool) *LocalApplied {
		t.Helper()
		ke := KeyEvent(ev, "")
		ch := make(chan any, 1)
		system.Root.Send(pid, &LocalApply{Req: &keycore.Request{Events: []keycore.Event{ke}, Resend: resend}, Reply: ReplyChan(ch)})
		select {
		case x := <-ch:
			a, ok := x.(*LocalApplied)
			if !ok || a.Applied.Error != "" {
				t.Fatalf("answer %#v", x)
			}
			return a
		case <-time.After(5 * time.Second):
			t.Fatal("no answer")
		}
		return nil
	}
	user := record.Event{Key: "7", Side: record.Left, Op: record.OpCreate,
		After: record.Row{"id": "7", "name": "x"}, Pos: record.Position{Source: "s", Partition: 0, Offset: 1}}
	domain := record.Event{Key: "7", Side: record.Right, Op: record.OpCreate,
		After: record.Row{"id": "d", "user_id": "7"}, Pos: record.Position{Source: "s", Partition: 0, Offset: 2}}
	apply(user, false)
	first := apply(domain, false)
	if len(first.Outputs) != 1 {
		t.Fatalf("outputs %v, want the joined row", first.Outputs)
	}
	again := apply(domain, true) // answered after the first write was durable: offloaded by now
	if again.Applied.Skipped != 1 || len(again.Outputs) != 1 || again.Outputs[0].ID != first.Outputs[0].ID ||
		fmt.Sprint(again.Outputs[0].Row) != fmt.Sprint(first.Outputs[0].Row) {
		t.Fatalf("re-sent: skipped %d, outputs %v; want the first's %v", again.Applied.Skipped, again.Outputs, first.Outputs)
	}
}

// BenchmarkKeyActorLocalApply sends a key actor one LocalApply of one
// event at a time (an update of one of the key's 10 right rows) and waits
// for its answer: a key request's cost on the local path, the actor's
// message, the key core's step, the Writer and the embedded store's write
// included:
//
//	go test -run '^$' -bench BenchmarkKeyActorLocalApply -benchmem ./actors/
func BenchmarkKeyActorLocalApply(b *testing.B) {
	_, system, spawn := embeddedKeyActors(b)
	pid := spawn("7")
	off := int64(0)
	apply := func(e record.Event) {
		off++
		e.Key, e.Pos = "7", record.Position{Source: "s", Offset: off}
		ke := KeyEvent(e, "")
		ch := make(chan any, 1)
		system.Root.Send(pid, &LocalApply{Req: &keycore.Request{Events: []keycore.Event{ke}}, Reply: ReplyChan(ch)})
		la, ok := (<-ch).(*LocalApplied)
		if !ok || la.Applied.Error != "" {
			b.Fatalf("answer %+v", la)
		}
	}
	apply(record.Event{Side: record.Left, Op: record.OpCreate, After: record.Row{"id": "7", "name": "x"}})
	rows := make([]record.Row, 10)
	for i := range rows {
		rows[i] = record.Row{"id": fmt.Sprint(i), "user_id": "7", "host": fmt.Sprintf("d%d.example.com", i)}
		apply(record.Event{Side: record.Right, Op: record.OpCreate, After: rows[i]})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r := rows[i%len(rows)]
		apply(record.Event{Side: record.Right, Op: record.OpUpdate, Before: r, After: r})
	}
}

// TestKeyActorPrunesIdleOutbox: a key that idles with an outbox entry
// keeps it in the store until its sources commit past it, then prunes it
// when the Pruner asks (Deps.Committed, Deps.Pruner), with no request; and Budget.Prune
// makes a key prune at once (a node stopping).
func TestKeyActorPrunesIdleOutbox(t *testing.T) {
	for _, idle := range []bool{true, false} {
		t.Run(fmt.Sprint("idle=", idle), func(t *testing.T) {
			store := newEmbedded(t)
			w := NewWriter(store, WriterOptions{})
			t.Cleanup(func() { w.Close(context.Background()) })
			var committed atomic.Pointer[map[string]int64]
			var budget *Budget
			var deps *Deps
			system, spawn := keyActorsWith(t, store, w, func(d *Deps) {
				deps = d
				d.Committed = func() map[string]int64 {
					if m := committed.Load(); m != nil {
						return *m
					}
					return nil
				}
			})
			budget = NewBudget(0, system.Root)
			if idle {
				deps.Pruner = NewPruner(system.Root, 10*time.Millisecond)
				t.Cleanup(deps.Pruner.Close)
			}
			pid := spawn("7")
			apply := func(ev record.Event) {
				t.Helper()
				ch := make(chan any, 1)
				system.Root.Send(pid, &LocalApply{Req: &keycore.Request{Events: []keycore.Event{KeyEvent(ev, "")}}, Reply: ReplyChan(ch)})
				select {
				case x := <-ch:
					if a, ok := x.(*LocalApplied); !ok || a.Applied.Error != "" {
						t.Fatalf("answer %#v", x)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no answer")
				}
			}
			outbox := func() int {
				t.Helper()
				snap, err := store.Load(context.Background(), "j", "7")
				if err != nil {
					t.Fatal(err)
				}
				info, err := keycore.DecodeStateInfo(snap.State, nil)
				if err != nil {
					t.Fatal(err)
				}
				return info.Outbox
			}
			apply(record.Event{Key: "7", Side: record.Left, Op: record.OpCreate,
				After: record.Row{"id": "7", "name": "x"}, Pos: record.Position{Source: "s", Offset: 1}})
			apply(record.Event{Key: "7", Side: record.Right, Op: record.OpCreate,
				After: record.Row{"id": "d", "user_id": "7"}, Pos: record.Position{Source: "s", Offset: 2}})
			if n := outbox(); n != 1 {
				t.Fatalf("stored outbox %d, want the joined row's entry", n)
			}
			committed.Store(&map[string]int64{"s/0": 1}) // not past the entry (offset 2)
			if !idle {
				budget.touch(nil, pid, 1)
				if err := budget.Prune(context.Background()); err != nil {
					t.Fatal(err)
				}
				if n := outbox(); n != 1 {
					t.Fatalf("stored outbox %d after a prune below it, want 1", n)
				}
			}
			committed.Store(&map[string]int64{"s/0": 2})
			if !idle {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := budget.Prune(ctx); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for outbox() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("stored outbox %d 5 s after the commit, want 0", outbox())
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
