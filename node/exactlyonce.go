package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/internal/backoff"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks"
	"github.com/joinery/joinery/sinks/deadletter"
	"github.com/joinery/joinery/sources"
)

// Exactly-once output (sinks[].kafka.exactly_once, docs/guides/exactly-once.md):
// every source of the job is a transactional Kafka source
// (sources.Transactional), and a reader completes a group of batches in
// one Kafka transaction of its source (completeTxn): the outputs to the
// exactly-once sinks and the dead letters to a Kafka dead-letter output
// on the same brokers go in it, the offsets are committed to the store
// before it ends and to the source's group in it. Either the outputs and
// the source offsets commit together or neither does.
//
// An aborted transaction (a rebalance, a failed write) rewinds the source
// to its committed offsets and raises its Epoch: the batches read before
// are stale, and the collector awaits their answers but writes and commits
// nothing of them (dropStale). The records are read again; their keys
// applied them already, so they skip them and answer with the outputs
// they keep in their outbox for every input not yet committed — the same
// outputs with the same ids — which the next transaction carries. A key
// prunes its outbox only up to the offsets the sender committed
// (sendstate.Reader.Commit, after the transaction committed), so nothing
// an aborted transaction carried is pruned before it is written again.
//
// The keys' owners do not write the shared sinks (owner_writes is off): a
// key's outputs go back to the reader, whose transaction carries them.

// txnWriteTimeout bounds the writes into one transaction and the offset
// commit to the store (a write that outlasts it aborts the transaction):
// with the end's bound it stays within the source's transaction timeout
// (sources/kafka DefaultTxnTimeout).
const txnWriteTimeout = 30 * time.Second

// transactionalID is the transactional id of a source's reader on this
// node: one per node and source, stable across restarts of a node with
// the same name (cluster.node_name), so a restarted node fences its
// previous incarnation's producer.
func (n *Node) transactionalID(source, consumer string) string {
	return "joinery-" + n.spec.Name + "-" + source + "-" + consumer
}

// dropStale returns group and answered without the batches read before
// the source's last aborted transaction (an Epoch below the current):
// their records are delivered again.
func (r *reader) dropStale(group []*batch, answered []answeredBatch) ([]*batch, []answeredBatch) {
	if r.txn == nil {
		return group, answered
	}
	now := r.txn.Epoch()
	var g []*batch
	var a []answeredBatch
	for i, b := range group {
		if b.epoch < now {
			continue
		}
		g = append(g, b)
		if i < len(answered) {
			a = append(a, answered[i])
		}
	}
	return g, a
}

// completeTxn is completeGroup for an exactly-once job: the group's
// outputs, dead letters and offsets in one transaction of the source. An
// aborted transaction is logged and its batches are dropped (their records
// come again); aborts that go on for retryFor stop the reader, as other
// failures that outlast their retries do.
func (r *reader) completeTxn(ctx context.Context, group []*batch, answered []answeredBatch) error {
	n := r.n
	if len(group) == 0 {
		return nil
	}
	outs, owned := flatten(answered, false), flatten(answered, true)
	var dead []deadletter.Record
	last := map[string]record.Position{}
	for _, b := range group {
		dead = append(dead, b.dead...)
		for part, p := range b.last {
			if q, ok := last[part]; !ok || p.Offset > q.Offset {
				last[part] = p
			}
		}
	}
	positions := make([]record.Position, 0, len(last))
	offsets := make(map[string]int64, len(last))
	for part, p := range last {
		positions = append(positions, p)
		offsets[part] = p.Offset
	}
	var fatal error // a write error no abort cures (the store went back in time)
	err := r.txn.Transact(ctx, positions, func(ctx context.Context, tx any) error {
		wctx, cancel := context.WithTimeout(ctx, txnWriteTimeout)
		defer cancel()
		if err := n.out.writeTxn(wctx, tx, outs, n.retry); err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		if err := n.out.writeTo(wctx, localSinks, owned, n.retry); err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		if len(dead) > 0 && r.dl != nil {
			var err error
			if tw, ok := r.dl.(deadletter.TxnWriter); ok && n.plan.DeadLetterTxn {
				err = tw.WriteTxn(wctx, tx, dead)
			} else {
				err = n.retry(wctx, "write dead letters", func(ctx context.Context) error { return r.dl.Write(ctx, dead) })
			}
			if err != nil {
				return fmt.Errorf("dead letter: %w", err)
			}
		}
		// The store's offsets go first: a store ahead of the group is
		// read from the group's (the keys skip what they applied); one
		// behind it would read again what a committed transaction
		// carried. Within the writes' bound, as every write here: the
		// brokers abort a transaction open past its timeout.
		if err := n.retry(wctx, "commit offsets", func(ctx context.Context) error {
			return n.commitOffsets(ctx, offsets) // rollback.go
		}); err != nil {
			if notRetried(err) || ctx.Err() != nil {
				fatal = err
			}
			return err
		}
		return nil
	})
	if fatal != nil {
		return fatal
	}
	if err != nil {
		if !errors.Is(err, sources.ErrAborted) || ctx.Err() != nil {
			return err
		}
		n.stats.Retries.Add(1)
		if r.abortSince.IsZero() {
			r.abortSince, r.abortBackoff = time.Now(), retryBackoff()
		}
		if time.Since(r.abortSince) > retryFor {
			return fmt.Errorf("transactions aborted for %v: %w", retryFor, err)
		}
		n.log.Warn("transaction aborted; its records are read again and their outputs written in the next one",
			"source", r.cfg.Name, "batches", len(group), "outputs", len(outs), "err", err)
		return r.abortBackoff.Wait(ctx)
	}
	r.abortSince = time.Time{}
	n.stats.addOut(len(outs) + len(owned))
	if len(dead) > 0 && r.dl != nil {
		n.stats.DeadLettered.Add(int64(len(dead)))
		for _, d := range dead {
			n.metrics.DeadLetters.WithLabelValues(n.spec.Name, d.Source).Inc()
		}
	}
	r.mu.Lock()
	for _, b := range group {
		r.sender.Commit(offsets, b.fireWm)
	}
	r.mu.Unlock()
	n.committed.add(offsets) // the transaction committed: idle keys may prune (actors.Pruner)
	return nil
}

// txnState is a reader's exactly-once state: its transactional source
// (nil: the job is not exactly once) and the aborts in a row.
type txnState struct {
	txn          sources.Transactional
	stopRead     func() // ends the read loop once a transaction failed for good
	abortSince   time.Time
	abortBackoff backoff.Backoff
}

// writeTxn writes batch to every sink and the table as write does, the
// exactly-once sinks (sinks.TxnWriter, kafka.exactly_once) into tx, once
// (a failed write aborts the transaction; it is not retried in it).
func (o *outputs) writeTxn(ctx context.Context, tx any, batch []record.Output, retry func(context.Context, string, func(context.Context) error) error) error {
	return o.writeToTx(ctx, allSinks, batch, retry, tx)
}

// exactlyOnce says whether a sink's connector configuration asks for
// exactly-once writes (kafka.exactly_once).
func exactlyOnce(c connectors.Config) bool {
	k, ok := c.(connectors.KafkaBlocked)
	return ok && k.KafkaBlock().ExactlyOnce
}

// writeOne writes b to sink i: into the transaction being written when
// the sink is exactly once, else through retry.
func (o *outputs) writeOne(ctx context.Context, i int, s sinks.Sink, b []record.Output, retry func(context.Context, string, func(context.Context) error) error, tx any) error {
	if i < len(o.txn) && o.txn[i] {
		tw, ok := s.(sinks.TxnWriter)
		if !ok || tx == nil {
			return fmt.Errorf("sinks[%d] writes exactly once, only in a transaction of a kafka source", i)
		}
		return tw.WriteTxn(ctx, tx, b)
	}
	return retry(ctx, "write outputs", func(ctx context.Context) error { return s.Write(ctx, b) })
}
