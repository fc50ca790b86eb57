package actors

import (
	"context"
	"sync"
	"time"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// loadFlights is how many LoadMany round trips a loader keeps in flight at
// once; loadMaxBatch bounds the keys of one.
const (
	loadFlights  = 2
	loadMaxBatch = 512
)

// loader shares store round trips between the loads of key actors that
// activate at once (a sender's batch reaches many new keys together, and
// each activation loads its state before its first step): a Load that
// finds fewer than loadFlights round trips in flight goes out at once, as
// a LoadMany of itself and whatever else is queued; one that finds them
// all busy queues, and goes with the next. So at a trickle a load costs
// one round trip and never waits for a timer, and under a burst of
// activations the loads of one round trip's time share the next one (on a
// Redis Cluster, one script per slot group: redisstore's LoadMany).
type loader struct {
	store  persistence.Store // a persistence.BatchLoader, or loads go one by one (persistence.LoadMany)
	mu     sync.Mutex
	queue  []*loadReq
	flying int
}

type loadReq struct {
	job  string
	key  record.Key
	done chan struct{}
	snap persistence.Snapshot
	err  error
}

// newLoader returns a loader over store.
func newLoader(store persistence.Store) *loader { return &loader{store: store} }

// Load returns key's snapshot as Store.Load does (ErrNotFound for none).
func (l *loader) Load(ctx context.Context, job string, key record.Key) (persistence.Snapshot, error) {
	r := &loadReq{job: job, key: key, done: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, r)
	start := l.flying < loadFlights
	if start {
		l.flying++
	}
	l.mu.Unlock()
	if start {
		go l.fly()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return persistence.Snapshot{}, ctx.Err()
	}
	if r.err != nil {
		return persistence.Snapshot{}, r.err
	}
	if len(r.snap.State) == 0 {
		return persistence.Snapshot{}, persistence.ErrNotFound
	}
	return r.snap, nil
}

// fly sends what is queued, one round trip after the other, until the
// queue is empty.
func (l *loader) fly() {
	for {
		l.mu.Lock()
		n := min(len(l.queue), loadMaxBatch)
		if n == 0 {
			l.flying--
			l.mu.Unlock()
			return
		}
		batch := l.queue[:n:n]
		l.queue = l.queue[n:]
		if len(l.queue) == 0 {
			l.queue = nil
		}
		l.mu.Unlock()
		l.load(batch)
	}
}

// load reads batch (grouped by job: LoadMany is per job) and answers it.
func (l *loader) load(batch []*loadReq) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	byJob := map[string][]*loadReq{}
	var jobs []string
	for _, r := range batch {
		if byJob[r.job] == nil {
			jobs = append(jobs, r.job)
		}
		byJob[r.job] = append(byJob[r.job], r)
	}
	for _, job := range jobs {
		rs := byJob[job]
		keys := make([]record.Key, len(rs))
		for i, r := range rs {
			keys[i] = r.key
		}
		out, err := persistence.LoadMany(ctx, l.store, job, keys)
		for i, r := range rs {
			if err != nil {
				r.err = err
			} else {
				r.snap = out[i]
			}
			close(r.done)
		}
	}
}
