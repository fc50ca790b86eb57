package actors

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// ActivationBytes is what a live key actor is accounted beyond its state:
// protoactor's activation (process, mailbox, identity maps), the actor and
// its core, allocator overhead. Measured by node's TestNodeMemoryLiveKeys
// (docs/performance.md): about 4 KB of heap per live key beyond its rows.
const ActivationBytes = 4096

// StateFactor is how many bytes of heap a key's state takes per byte of its
// encoded state: decoded rows (maps of interface values) and the outbox's
// outputs are several times their JSON.
const StateFactor = 4

// Budget keeps the live key actors of a node within a memory budget: each
// activation is accounted ActivationBytes plus StateFactor × its encoded
// state plus its join's snapshot caches (keycore.Write.Cached), and when
// the total passes the limit the least recently used activations are asked
// to passivate (their state is durable; the next request reactivates them
// from the store) until it is back under the low water mark (90% of the
// limit). Methods are safe for concurrent use; the
// key actors call them from their mailboxes.
type Budget struct {
	limit int64
	root  *actor.RootContext

	mu    sync.Mutex
	lru   budgetEntry // the ring's sentinel: next is the most recent entry, prev the least
	live  int         // entries in the ring
	bytes int64       // accounted bytes of the entries in the ring

	evictions atomic.Int64 // passivations the budget asked for
}

// budgetEntry is an activation in the budget's LRU ring. It is intrusive
// (its links in it, no container/list element and boxed value: ≈ 60 B less
// per live key) and a key actor holds its own by value.
type budgetEntry struct {
	pid        *actor.PID
	bytes      int64
	prev, next *budgetEntry // nil once evicted or removed
}

func (b *Budget) pushFront(e *budgetEntry) {
	e.prev, e.next = &b.lru, b.lru.next
	b.lru.next.prev = e
	b.lru.next = e
	b.live++
}

func (b *Budget) unlink(e *budgetEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	b.live--
}

// budgetPassivate asks a key actor to passivate because of the budget.
type budgetPassivate struct{}

// NewBudget returns a budget of limit bytes (<= 0: no limit, only
// accounting) whose evictions are sent through root.
func NewBudget(limit int64, root *actor.RootContext) *Budget {
	b := &Budget{limit: limit, root: root}
	b.lru.prev, b.lru.next = &b.lru, &b.lru
	return b
}

// BudgetStats are a budget's figures.
type BudgetStats struct {
	Limit     int64 // bytes (0: none)
	Live      int   // activations accounted
	Bytes     int64 // their accounted bytes
	Evictions int64 // passivations asked for by the budget, ever
}

// Stats returns the budget's figures.
func (b *Budget) Stats() BudgetStats {
	if b == nil {
		return BudgetStats{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return BudgetStats{Limit: max(b.limit, 0), Live: b.live, Bytes: b.bytes, Evictions: b.evictions.Load()}
}

// touch records that the activation e (nil: a new one, for pid) was just
// used and is now accounted bytes, and returns its entry. It evicts the
// least recently used activations when the budget is exceeded.
func (b *Budget) touch(e *budgetEntry, pid *actor.PID, bytes int64) *budgetEntry {
	if b == nil {
		return nil
	}
	var evict []*actor.PID
	b.mu.Lock()
	if e == nil {
		e = &budgetEntry{}
	}
	if e.pid == nil {
		e.pid = pid
	}
	if e.next == nil {
		b.pushFront(e)
		e.bytes = 0
	} else if b.lru.next != e {
		b.unlink(e)
		b.pushFront(e)
	}
	b.bytes += bytes - e.bytes
	e.bytes = bytes
	if b.limit > 0 && b.bytes > b.limit {
		low := b.limit / 10 * 9
		for b.bytes > low && b.live > 1 {
			v := b.lru.prev
			if v == e {
				break
			}
			b.unlink(v)
			b.bytes -= v.bytes
			v.bytes = 0
			evict = append(evict, v.pid)
		}
	}
	b.mu.Unlock()
	for _, p := range evict {
		b.evictions.Add(1)
		b.root.Send(p, budgetPassivate{})
	}
	return e
}

// remove stops accounting e (the activation stopped).
func (b *Budget) remove(e *budgetEntry) {
	if b == nil || e == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if e.next != nil {
		b.unlink(e)
		b.bytes -= e.bytes
		e.bytes = 0
	}
}

// pruneNow asks a key actor to prune its outbox now (Pruner, Budget.Prune)
// and, when done is set, tell it once it has (or has nothing to prune).
type pruneNow struct{ done *sync.WaitGroup }

// Prune asks every live key actor with outbox entries to prune those its
// sources committed (Deps.Committed) and hand the write that deletes them
// to the Writer, and waits until all have, or ctx ends. A node calls it as
// it stops, after its readers' last commit and before the Writer's Close
// (which makes the writes durable): a key idle since its last input would
// otherwise leave that input's outputs in the store until it is next used.
func (b *Budget) Prune(ctx context.Context) error {
	if b == nil {
		return nil
	}
	var pids []*actor.PID
	b.mu.Lock()
	for e := b.lru.next; e != &b.lru; e = e.next {
		pids = append(pids, e.pid)
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(len(pids))
	for _, p := range pids {
		b.root.Send(p, pruneNow{done: &wg})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// evicted reports whether e was evicted and not used since.
func (b *Budget) evicted(e *budgetEntry) bool {
	if b == nil || e == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return e.next == nil
}
