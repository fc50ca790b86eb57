package redisstore

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/joinery/joinery/persistence"
)

// Write generations (see the package doc, "Write generations"): every Save
// script bumps the generation key of each shard it writes — on a cluster
// the slot group's <prefix>:{<tag>}:gen, on one server the job's, which is
// group 0's — and first checks that it is not below the highest value this
// Store saw acknowledged, remembered per key in gens. The key only ever
// grows (INCR), so many nodes writing one shard each pass with what they
// saw; a store restored from an older snapshot shows a lower value to each
// of them, and their first write is refused.

// genKey is a shard's write generation key.
func genKey(gp string) string { return gp + "gen" }

// genRef is one shard's generation key and what this Store saw of it.
type genRef struct {
	key   string
	job   string
	group int           // the shard: the slot group, 0 on one server
	seen  *atomic.Int64 // the highest generation acknowledged to this Store
}

// genOf returns the generation of the shard of group g of job.
func (s *Store) genOf(job string, l *jobLayout, g int) genRef {
	if !s.cluster {
		g = 0
	}
	key := l.gens[g]
	v, ok := s.gens.Load(key)
	if !ok {
		v, _ = s.gens.LoadOrStore(key, new(atomic.Int64))
	}
	return genRef{key: key, job: job, group: g, seen: v.(*atomic.Int64)}
}

// note raises what was seen to g.
func (r genRef) note(g int64) {
	for {
		cur := r.seen.Load()
		if g <= cur || r.seen.CompareAndSwap(cur, g) {
			return
		}
	}
}

// check compares a generation read from the store (nil: missing, 0) with
// seen, what was seen before the read was sent: a
// *persistence.StaleStoreError when it is lower, else it notes it.
func (r genRef) check(v any, seen int64) error {
	var found int64
	switch v := v.(type) {
	case nil:
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("redisstore: write generation %q of job %q: %w", v, r.job, err)
		}
		found = n
	default:
		return fmt.Errorf("redisstore: write generation of job %q: unexpected value %T", r.job, v)
	}
	if found < seen {
		return &persistence.StaleStoreError{Job: r.job, Shard: r.group, Seen: seen, Found: found}
	}
	r.note(found)
	return nil
}

// gensMap is the type of Store.gens: generation key -> *atomic.Int64.
type gensMap = sync.Map
