package node

import (
	"context"
	"fmt"
	"time"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

// collect waits for each batch's answers in order, writes outputs, then
// commits the batch's offsets.
func (r *reader) collect(ctx context.Context, queue <-chan *batch) error {
	n := r.n
	var failed error
	for b := range queue {
		if failed == nil {
			if err := r.complete(ctx, b); err != nil {
				failed = err
			}
		}
		// Drain after a failure so the reader never blocks.
		n.evt.release(b)
		r.wg.Done()
	}
	return failed
}

func (r *reader) complete(ctx context.Context, b *batch) error {
	n := r.n
	var outs, owned []record.Output // owned: the keys' owners wrote them to the shared sinks
	for _, c := range b.calls {
		ap, kouts, written, err := r.await(ctx, c)
		if err != nil {
			return err
		}
		n.stats.addSkipped(int(ap.Skipped))
		n.stats.Duplicates.Add(int64(ap.Duplicates))
		for _, l := range ap.Late {
			r.late(b, c.key, l)
		}
		if written {
			owned = append(owned, kouts...)
		} else {
			outs = append(outs, kouts...)
		}
	}
	keys := make([]record.Key, len(b.calls))
	for i, c := range b.calls {
		keys[i] = c.key
	}
	n.inflight.mu.Lock()
	r.sender.Answered(&n.inflight.keys, b.seq, keys)
	n.inflight.mu.Unlock()
	if err := r.repartition(ctx, b); err != nil { // before the raw offsets are committed
		return err
	}
	if err := n.out.write(ctx, outs, n.retry); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	if err := n.out.writeTo(ctx, localSinks, owned, n.retry); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	n.stats.addOut(len(outs) + len(owned))
	if len(b.dead) > 0 && r.dl != nil {
		// Like the outputs, dead letters are durable before the offsets
		// that pass their records are committed.
		if err := n.retry(ctx, "write dead letters", func(ctx context.Context) error {
			return r.dl.Write(ctx, b.dead)
		}); err != nil {
			return fmt.Errorf("dead letter: %w", err)
		}
		n.stats.DeadLettered.Add(int64(len(b.dead)))
		for _, d := range b.dead {
			n.metrics.DeadLetters.WithLabelValues(n.spec.Name, d.Source).Inc()
		}
	}
	positions := make([]record.Position, 0, len(b.last))
	offsets := make(map[string]int64, len(b.last))
	for part, p := range b.last {
		positions = append(positions, p)
		offsets[part] = p.Offset
	}
	// Both commits are idempotent (offsets never go back), so a failure —
	// Redis restarting — is retried until it passes: ingestion stalls rather
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
	r.sender.Commit(offsets, b.fireWm)
	r.mu.Unlock()
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
