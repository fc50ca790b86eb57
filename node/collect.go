package node

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter"
	"github.com/joinery/joinery/sinks/deadletter/reason"
	"github.com/joinery/joinery/sources"
)

// collect waits for each batch's answers in order, writes outputs, then
// commits the batch's offsets. The batches queued behind one whose answers
// came are completed with it (completeGroup): one sink write, one offset
// commit and one source commit for all of them, so these round trips are
// paid per group, and a group grows with the load (at a trickle it is one
// batch, and nothing waits for another).
func (r *reader) collect(ctx context.Context, queue <-chan *batch) error {
	n := r.n
	var failed error
	group := make([]*batch, 0, maxInflight)
	var answered []answeredBatch
	for b := range queue {
		group, answered = append(group[:0], b), answered[:0]
		if failed == nil {
			var a answeredBatch
			if a, failed = r.answers(ctx, b); failed == nil {
				answered = append(answered, a)
			}
		}
		// The batches already queued join the group; their answers are
		// awaited in order, as a batch's own are.
	more:
		for failed == nil && len(group) < maxInflight {
			select {
			case nb, ok := <-queue:
				if !ok {
					break more
				}
				group = append(group, nb)
				var a answeredBatch
				if a, failed = r.answers(ctx, nb); failed == nil {
					answered = append(answered, a)
				}
			default:
				break more
			}
		}
		if failed == nil && r.txn != nil {
			// Exactly once: one transaction, without the batches an
			// aborted one made stale (exactlyonce.go).
			fresh, fa := r.dropStale(group, answered)
			if failed = r.completeTxn(ctx, fresh, fa); failed != nil && r.stopRead != nil {
				r.stopRead() // nothing read from here on could be committed
			}
		} else if failed == nil {
			failed = r.completeGroup(ctx, group, answered)
		}
		// Drain after a failure so the reader never blocks.
		for _, b := range group {
			n.evt.release(b)
			r.wg.Done()
		}
		r.pending.Add(-int64(len(group)))
		select {
		case r.freed <- struct{}{}:
		default:
		}
	}
	return failed
}

// answeredBatch is a batch's answers: the outputs the reader writes to
// every sink (outs) and to its node-local sinks alone (owned: the keys'
// owners wrote them to the shared sinks), as each key answered them, in
// order. completeGroup copies a group's into one slice each, of its
// length: one allocation, not a growth per key here and a copy there.
type answeredBatch struct {
	outs, owned [][]record.Output
}

// flatten is the outputs (owned: the owned ones) of answered, in order,
// in one slice (nil when there are none).
func flatten(answered []answeredBatch, owned bool) []record.Output {
	pick := func(a answeredBatch) [][]record.Output {
		if owned {
			return a.owned
		}
		return a.outs
	}
	n := 0
	for _, a := range answered {
		for _, o := range pick(a) {
			n += len(o)
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]record.Output, 0, n)
	for _, a := range answered {
		for _, o := range pick(a) {
			out = append(out, o...)
		}
	}
	return out
}

// answers awaits b's answers in order and forgets its requests as
// answered.
func (r *reader) answers(ctx context.Context, b *batch) (answeredBatch, error) {
	n := r.n
	var a answeredBatch
	a.outs = make([][]record.Output, 0, len(b.calls))
	// The counts, added once for the batch: the skipped ones' Prometheus
	// series is a labelled lookup.
	var skipped, dups int64
	defer func() {
		n.stats.addSkipped(int(skipped))
		n.stats.Duplicates.Add(dups)
	}()
	for _, c := range b.calls {
		ap, kouts, written, err := r.await(ctx, c)
		if err != nil {
			return a, err
		}
		skipped += int64(ap.Skipped)
		dups += int64(ap.Duplicates)
		for _, l := range ap.Late {
			r.late(b, c.key, l)
		}
		switch {
		case len(kouts) == 0:
		case written:
			a.owned = append(a.owned, kouts)
		default:
			a.outs = append(a.outs, kouts)
		}
	}
	keys := make([]record.Key, len(b.calls))
	for i, c := range b.calls {
		keys[i] = c.key
	}
	n.inflight.mu.Lock()
	r.sender.Answered(&n.inflight.keys, b.seq, keys)
	n.inflight.mu.Unlock()
	return a, nil
}

// completeGroup finishes answered batches, in order: their repartition
// writes, then their outputs (in batch order) and dead letters, then the
// offsets they cover, committed to the store and the source at once (every
// batch before them is committed, so the group's highest position of each
// partition closes a contiguous completed range).
func (r *reader) completeGroup(ctx context.Context, group []*batch, answered []answeredBatch) error {
	n := r.n
	outs, owned := flatten(answered, false), flatten(answered, true)
	var dead []deadletter.Record
	var forward []sources.Forward
	last := map[string]record.Position{}
	for _, b := range group {
		dead = append(dead, b.dead...)
		forward = append(forward, b.forward...)
		for part, p := range b.last {
			if q, ok := last[part]; !ok || p.Offset > q.Offset {
				last[part] = p
			}
		}
	}
	if err := r.repartition(ctx, forward); err != nil { // before the raw offsets are committed
		return err
	}
	if err := n.out.write(ctx, outs, n.retry); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	if err := n.out.writeTo(ctx, localSinks, owned, n.retry); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	n.stats.addOut(len(outs) + len(owned))
	if len(dead) > 0 && r.dl != nil {
		// Like the outputs, dead letters are durable before the offsets
		// that pass their records are committed.
		if err := n.retry(ctx, "write dead letters", func(ctx context.Context) error {
			return r.dl.Write(ctx, dead)
		}); err != nil {
			return fmt.Errorf("dead letter: %w", err)
		}
		n.stats.DeadLettered.Add(int64(len(dead)))
		for _, d := range dead {
			n.metrics.DeadLetters.WithLabelValues(n.spec.Name, d.Source).Inc()
		}
	}
	positions := make([]record.Position, 0, len(last))
	offsets := make(map[string]int64, len(last))
	for part, p := range last {
		positions = append(positions, p)
		offsets[part] = p.Offset
	}
	// Both commits are idempotent (offsets never go back), so a failure —
	// Redis restarting — is retried until it passes: reading stalls rather
	// than moves on with an uncommitted position.
	if err := n.retry(ctx, "commit offsets", func(ctx context.Context) error {
		return n.commitOffsets(ctx, offsets) // rollback.go
	}); err != nil {
		return err
	}
	if err := n.retry(ctx, "commit source", func(ctx context.Context) error {
		return r.src.Commit(ctx, positions)
	}); err != nil {
		return err
	}
	r.mu.Lock()
	for _, b := range group {
		r.sender.Commit(offsets, b.fireWm)
	}
	r.mu.Unlock()
	n.committed.add(offsets)
	return nil
}

// committedOffsets is the offsets a node's readers committed, partition
// id -> offset, each the highest committed: a partition moves between
// readers, and offsets never go back. Readers add to it; key actors read
// it (get) from their own goroutines.
type committedOffsets struct {
	mu sync.Mutex // serializes add; get reads the pointer only
	m  atomic.Pointer[map[string]int64]
}

// add records a commit. The map get returns is never changed: add makes
// a new one (a commit names a few partitions; it is once per batch).
func (c *committedOffsets) add(offsets map[string]int64) {
	if len(offsets) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var next map[string]int64
	if old := c.m.Load(); old != nil {
		next = maps.Clone(*old)
	} else {
		next = make(map[string]int64, len(offsets))
	}
	for part, off := range offsets {
		if cur, ok := next[part]; !ok || off > cur {
			next[part] = off
		}
	}
	c.m.Store(&next)
}

// get returns the committed offsets, read-only; nil before any commit.
func (c *committedOffsets) get() map[string]int64 {
	if m := c.m.Load(); m != nil {
		return *m
	}
	return nil
}

// late counts an input an event-time join found late and, when the job names
// a dead-letter output, writes it there with the reason ("late: …"). Late data
// is never dropped silently.
func (r *reader) late(b *batch, key record.Key, l *keypb.Late) {
	n := r.n
	n.stats.Late.Add(1)
	n.metrics.Late.WithLabelValues(n.spec.Name).Inc()
	e := l.Event
	if e == nil {
		return
	}
	pos := record.Position{Source: e.Source, Partition: e.Partition, Offset: e.Offset}
	n.log.Debug("late input", "key", key, "position", pos.String(), "ts", e.Ts, "reason", l.Reason)
	if r.dl != nil {
		b.dead = append(b.dead, deadletter.New(string(reason.Late(l.Reason)), fmt.Errorf("key %s, event time %d", key, e.Ts), pos, e.After, time.Now()))
	}
}
