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
// Redis Cluster, one script per slot group: redisstore's LoadMany). An
// activation's Acquire goes with its load (Activate:
// persistence.Activator, the same round trip).
type loader struct {
	store  persistence.Store // a persistence.BatchLoader, or loads go one by one (persistence.LoadMany)
	mu     sync.Mutex
	queue  []*loadReq
	flying int
}

type loadReq struct {
	job     string
	key     record.Key
	acquire bool // take the key (Acquire) before reading it
	done    chan struct{}
	epoch   int64
	snap    persistence.Snapshot
	err     error
}

// newLoader returns a loader over store.
func newLoader(store persistence.Store) *loader { return &loader{store: store} }

// Load returns key's snapshot as Store.Load does (ErrNotFound for none).
func (l *loader) Load(ctx context.Context, job string, key record.Key) (persistence.Snapshot, error) {
	_, sn, err := l.do(ctx, &loadReq{job: job, key: key, done: make(chan struct{})})
	return sn, err
}

// Activate takes key (Store.Acquire) and then returns its snapshot, as
// Load does; both share the round trip (persistence.Activator).
func (l *loader) Activate(ctx context.Context, job string, key record.Key) (int64, persistence.Snapshot, error) {
	return l.do(ctx, &loadReq{job: job, key: key, acquire: true, done: make(chan struct{})})
}

func (l *loader) do(ctx context.Context, r *loadReq) (int64, persistence.Snapshot, error) {
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
		return 0, persistence.Snapshot{}, ctx.Err()
	}
	if r.err != nil {
		return 0, persistence.Snapshot{}, r.err
	}
	if len(r.snap.State) == 0 {
		return r.epoch, persistence.Snapshot{}, persistence.ErrNotFound
	}
	return r.epoch, r.snap, nil
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

// load reads batch (grouped by job and by whether they acquire: a
// LoadMany or AcquireLoadMany is per job) and answers it.
func (l *loader) load(batch []*loadReq) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type group struct {
		job     string
		acquire bool
	}
	byGroup := map[group][]*loadReq{}
	var groups []group
	for _, r := range batch {
		g := group{r.job, r.acquire}
		if byGroup[g] == nil {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], r)
	}
	for _, g := range groups {
		rs := byGroup[g]
		keys := make([]record.Key, len(rs))
		for i, r := range rs {
			keys[i] = r.key
		}
		var epochs []int64
		var out []persistence.Snapshot
		var err error
		if g.acquire {
			epochs, out, err = persistence.AcquireLoadMany(ctx, l.store, g.job, keys)
		} else {
			out, err = persistence.LoadMany(ctx, l.store, g.job, keys)
		}
		for i, r := range rs {
			switch {
			case err != nil:
				r.err = err
			case g.acquire:
				r.epoch, r.snap = epochs[i], out[i]
			default:
				r.snap = out[i]
			}
			close(r.done)
		}
	}
}
