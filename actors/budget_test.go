package actors

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestBudgetEvictsLeastRecentlyUsed: past the limit the budget asks the
// least recently used activations to passivate, oldest first, until it is
// under 90% of the limit; a key used again after eviction is not asked
// twice, and the one just touched is never evicted.
func TestBudgetEvictsLeastRecentlyUsed(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	var mu sync.Mutex
	got := map[string]int{}
	spawn := func(name string) *actor.PID {
		return system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			if _, ok := c.Message().(budgetPassivate); ok {
				mu.Lock()
				got[name]++
				mu.Unlock()
			}
		}))
	}
	b := NewBudget(1000, system.Root)
	pids := map[string]*actor.PID{}
	entries := map[string]*budgetEntry{}
	for _, n := range []string{"a", "b", "c", "d"} {
		pids[n] = spawn(n)
		entries[n] = b.touch(nil, pids[n], 240) // 960 in all: under the limit
	}
	entries["a"] = b.touch(entries["a"], pids["a"], 240) // a is the most recent now; b the least
	if st := b.Stats(); st.Live != 4 || st.Bytes != 960 || st.Evictions != 0 {
		t.Fatalf("before the limit: %+v", st)
	}
	entries["e"] = b.touch(nil, spawn("e"), 240) // 1200 > 1000: evict b, c (down to 720 <= 900)
	st := b.Stats()
	if st.Live != 3 || st.Bytes != 720 || st.Evictions != 2 {
		t.Fatalf("after the limit: %+v, want 3 live, 720 bytes, 2 evictions", st)
	}
	if !b.evicted(entries["b"]) || !b.evicted(entries["c"]) || b.evicted(entries["a"]) || b.evicted(entries["d"]) {
		t.Fatalf("evicted the wrong keys: b %v c %v a %v d %v", b.evicted(entries["b"]), b.evicted(entries["c"]), b.evicted(entries["a"]), b.evicted(entries["d"]))
	}
	// b is used again before it stopped: accounted again, no longer evicted.
	entries["b"] = b.touch(entries["b"], pids["b"], 240)
	if b.evicted(entries["b"]) {
		t.Fatal("b is evicted after being used again")
	}
	// One huge key is never evicted by its own touch (another budget).
	b2 := NewBudget(1000, system.Root)
	small := b2.touch(nil, spawn("small"), 10)
	big := b2.touch(nil, spawn("big"), 5000)
	if b2.evicted(big) || !b2.evicted(small) {
		t.Fatalf("big evicted %v, small evicted %v: want the older small one out", b2.evicted(big), b2.evicted(small))
	}
	b2.remove(big)
	if st := b2.Stats(); st.Live != 0 || st.Bytes != 0 {
		t.Fatalf("after remove: %+v", st)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		ok := got["b"] == 1 && got["c"] == 1 && got["small"] == 1
		mu.Unlock()
		if ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	time.Sleep(50 * time.Millisecond) // let any wrong extra request arrive
	if got["b"] != 1 || got["c"] != 1 || got["small"] != 1 || len(got) != 3 {
		t.Errorf("passivation requests %v, want b, c and small once, no other", got)
	}
}
