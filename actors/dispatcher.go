package actors

import (
	"runtime"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// warmDispatcher runs key actors' mailboxes on a pool of long-lived
// goroutines, queueing them while every worker is busy, and on a new
// goroutine when the queue is full.
//
// protoactor's default dispatcher starts a goroutine every time a mailbox
// is scheduled; a key actor's call chain (cluster middleware, the join, the
// state encoding) outgrows a new goroutine's stack, so every request paid
// for copying stacks as they grew: 10% of a node's CPU on the cdc benchmark
// (runtime.newstack/copystack). A pooled goroutine keeps its grown stack.
// A reader sends a batch's key requests at once, so mailboxes are
// scheduled in bursts: they queue for the workers (in order) rather than
// each get a cold goroutine. Schedule never blocks — a full queue spills to
// a new goroutine as before — so an actor that sends while running on a
// worker cannot deadlock the pool. No key actor handler waits for another
// actor; a worker can wait on the store (a key loading its state), which
// is why there are several workers per core.
type warmDispatcher struct {
	work       chan func()
	throughput int
}

const (
	dispatchWorkersPerCPU = 16
	dispatchQueue         = 8192
)

var (
	sharedDispatcher     *warmDispatcher
	sharedDispatcherOnce sync.Once
)

// keyDispatcher is the process's warm dispatcher (one pool for every node
// of the process), started on first use.
func keyDispatcher() *warmDispatcher {
	sharedDispatcherOnce.Do(func() {
		d := &warmDispatcher{work: make(chan func(), dispatchQueue), throughput: 300}
		for range dispatchWorkersPerCPU * runtime.GOMAXPROCS(0) {
			go d.worker()
		}
		sharedDispatcher = d
	})
	return sharedDispatcher
}

func (d *warmDispatcher) worker() {
	for fn := range d.work {
		fn()
	}
}

// Schedule queues fn for the workers, or runs it on a new goroutine when
// the queue is full.
func (d *warmDispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
	default:
		go fn()
	}
}

// Throughput is how many messages a mailbox processes per schedule
// (protoactor's default, 300).
func (d *warmDispatcher) Throughput() int { return d.throughput }

var _ actor.Dispatcher = (*warmDispatcher)(nil)
