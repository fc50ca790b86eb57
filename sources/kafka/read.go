package kafka

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter/reason"
	"github.com/joinery/joinery/sources"
)

// Read blocks until records are available and returns up to max of them, in
// offset order within each partition; the caller owns their Values (nil for
// a record with a null value). It returns ctx.Err() when ctx ends and
// ErrClosed after Close. Retryable broker errors are retried by the client;
// other fetch errors are returned (after the records fetched with them). It
// never returns io.EOF.
func (s *Source) Read(ctx context.Context, max int) ([]sources.Message, error) {
	if max <= 0 {
		max = 1
	}
	for {
		s.mu.Lock()
		closed, held := s.mu.closed, s.mu.readErr
		s.mu.readErr = nil
		s.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		if held != nil {
			return nil, held
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.transactional() {
			// A transaction's end waits for no poll: let it go first.
			s.txMu.Lock()
			for s.txWaiting.Load() > 0 {
				s.txMu.Unlock()
				runtime.Gosched()
				s.txMu.Lock()
			}
		}
		pctx, wake := context.WithCancel(ctx)
		s.mu.Lock()
		s.mu.wake = wake
		s.mu.Unlock()
		if s.transactional() && s.txWaiting.Load() > 0 {
			wake() // an end started waiting before wake was set
		}
		fetches := s.client.PollRecords(pctx, max) // woken early by a rewind's error or a transaction's end
		wake()
		msgs, err := s.take(ctx, fetches)
		s.client.AllowRebalance()
		if s.transactional() {
			s.txMu.Unlock()
		}
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
	}
}

// take converts polled records to messages and notes, per owned partition,
// what was delivered. It runs before AllowRebalance, so no revoke interleaves.
func (s *Source) take(ctx context.Context, fetches kgo.Fetches) ([]sources.Message, error) {
	var fetchErr error
	closed := false
	fetches.EachError(func(topic string, partition int32, err error) {
		var loss *kgo.ErrDataLoss
		var session *kgo.ErrGroupSession
		switch {
		case errors.Is(err, kgo.ErrClientClosed):
			closed = true
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			// ctx ended: reported below.
		case errors.As(err, &session):
			// The member could not join the group (a join or sync that
			// outlasted its timeout while the group waited for a dead
			// member, under load) or was kicked out: the client joins
			// again with a backoff. Transient: the node retries the read
			// (logged) and stops only if it lasts.
			if fetchErr == nil {
				fetchErr = sources.Transient(fmt.Errorf("kafka: source %s: group %s: %w", s.cfg.Name, s.cfg.Group, err))
			}
		case errors.As(err, &loss), kerr.IsRetriable(err):
			// Informational or retried by the client.
		default:
			if fetchErr == nil {
				fetchErr = fmt.Errorf("kafka: fetch %s/%d: %w", topic, partition, err)
			}
		}
	})
	msgs := make([]sources.Message, 0, fetches.NumRecords())
	epoch := s.epoch.Load() // changes only under txMu, held by Read
	s.mu.Lock()
	defer s.mu.Unlock()
	fetches.EachRecord(func(r *kgo.Record) {
		m := sources.Message{
			Pos:   record.Position{Source: s.cfg.Name, Partition: r.Partition, Offset: r.Offset},
			Value: r.Value,
			Epoch: epoch,
		}
		if err := s.misplaced(r); err != nil {
			m.Reject = &sources.Reject{Reason: reason.Misplaced, Err: err}
		}
		msgs = append(msgs, m)
		p := s.mu.owned[r.Partition]
		if p == nil {
			return // polled across a loss: delivered, never committed here
		}
		if p.lo < 0 {
			p.lo = r.Offset
		}
		p.hi = r.Offset
		if n := len(p.epochs); n == 0 || p.epochs[n-1].epoch != r.LeaderEpoch {
			p.epochs = append(p.epochs, epochAt{from: r.Offset, epoch: r.LeaderEpoch})
		}
	})
	switch {
	case closed || s.mu.closed:
		if len(msgs) == 0 {
			return nil, ErrClosed
		}
	case len(msgs) == 0 && ctx.Err() != nil:
		return nil, ctx.Err()
	case fetchErr != nil && len(msgs) > 0:
		s.mu.readErr = fetchErr
	case fetchErr != nil:
		return nil, fetchErr
	}
	return msgs, nil
}

// misplaced checks, on a co-partitioned source (Config.KeyGroups), that r is
// in its key's partition and that its key is one Config.PartitionKey
// writes; nil if so, or without key groups. A misplaced record is
// delivered with a Reject, not joined: its key's actors are fed from the
// key's own partition, in that partition's order, by its reader, and a
// record from another partition — read by another member, in no order
// with the key's others — would be applied out of the key's order (or at a
// key group the reader does not host). The node dead-letters it with the
// reason (on_bad_input) and reads the rest of the partition on.
func (s *Source) misplaced(r *kgo.Record) error {
	if s.partitions <= 0 {
		return nil
	}
	if want := Partition(r.Key, s.partitions); want != int(r.Partition) {
		return &MisplacedError{Source: s.cfg.Name, Topic: r.Topic, Partition: r.Partition, Want: int32(want),
			Offset: r.Offset, Partitions: s.partitions, Key: r.Key}
	}
	if t := s.cfg.PartitionKey; t != "" && !OfTemplate(t, r.Key) {
		return &MisplacedError{Source: s.cfg.Name, Topic: r.Topic, Partition: r.Partition, Want: r.Partition,
			Offset: r.Offset, Partitions: s.partitions, Key: r.Key, Template: t}
	}
	return nil
}
