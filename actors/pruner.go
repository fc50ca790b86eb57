package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Pruner asks key actors that idle with outbox entries to prune them
// (Deps.Committed): a key hears of commits in its next request only, so a
// key that idles after its last input would keep that input's outputs in
// the store for as long as it idles. Keys with outbox entries queue
// themselves after each write (in the order of their last write, an
// intrusive list: no timer and no allocation per key); one goroutine
// sends each key idle for After a prune message, and a key whose entries
// are not committed yet is asked again after twice as long, up to a
// minute. Its methods are safe for concurrent use.
type Pruner struct {
	root  *actor.RootContext
	after time.Duration

	mu   sync.Mutex
	list pruneEntry // the ring's sentinel: next is the oldest entry

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// DefaultPruneAfter is how long a key idles before it is asked to prune,
// unless NewPruner is given another.
const DefaultPruneAfter = time.Second

// pruneEntry is a key actor in the Pruner's queue; the actor holds its
// own by value.
type pruneEntry struct {
	pid        *actor.PID
	due        int64         // when to ask, Unix nanoseconds
	wait       time.Duration // the wait before due; doubles while nothing prunes
	prev, next *pruneEntry   // nil when not queued
}

// NewPruner starts a Pruner sending through root; after <= 0 is
// DefaultPruneAfter. Close stops it.
func NewPruner(root *actor.RootContext, after time.Duration) *Pruner {
	if after <= 0 {
		after = DefaultPruneAfter
	}
	p := &Pruner{root: root, after: after, stop: make(chan struct{}), done: make(chan struct{})}
	p.list.prev, p.list.next = &p.list, &p.list
	go p.run()
	return p
}

// Close stops the Pruner's goroutine and waits for it. It is idempotent.
func (p *Pruner) Close() {
	if p == nil {
		return
	}
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

func (p *Pruner) run() {
	defer close(p.done)
	t := time.NewTicker(max(p.after/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			for _, pid := range p.dueAt(now.UnixNano()) {
				p.root.Send(pid, pruneNow{})
			}
		}
	}
}

// dueAt unlinks and returns the keys due at now (Unix nanoseconds).
func (p *Pruner) dueAt(now int64) []*actor.PID {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*actor.PID
	for e := p.list.next; e != &p.list && e.due <= now; e = p.list.next {
		p.unlinkLocked(e)
		out = append(out, e.pid)
	}
	return out
}

// queue (re)queues e, the key actor pid's entry, to be asked after its
// wait: the base wait after a write (backoff false), twice the last one
// after a prune that dropped nothing (backoff true).
func (p *Pruner) queue(e *pruneEntry, pid *actor.PID, now time.Time, backoff bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.next != nil {
		p.unlinkLocked(e)
	}
	switch {
	case !backoff || e.wait == 0:
		e.wait = p.after
	default:
		e.wait = min(2*e.wait, time.Minute)
	}
	e.pid, e.due = pid, now.Add(e.wait).UnixNano()
	// Almost always the latest due: insert from the back.
	at := p.list.prev
	for at != &p.list && at.due > e.due {
		at = at.prev
	}
	e.prev, e.next = at, at.next
	at.next.prev = e
	at.next = e
}

// remove takes e out of the queue (the key has no outbox entry, or
// stopped).
func (p *Pruner) remove(e *pruneEntry) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.next != nil {
		p.unlinkLocked(e)
	}
}

func (p *Pruner) unlinkLocked(e *pruneEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// Len is the number of keys queued.
func (p *Pruner) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for e := p.list.next; e != &p.list; e = e.next {
		n++
	}
	return n
}
