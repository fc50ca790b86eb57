package redisstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// Read returns the next batches of the held shards that have one ready,
// up to max entries (at least one shard's batch), each shard's in its
// stream order (so offsets grow strictly per partition), or an empty slice
// and a nil error when none arrived within Config.Block. Errors of a shard
// or of the rebalancing (a transient one marked sources.Transient) are
// returned as they come, never with entries; ctx.Err() when ctx ends,
// ErrClosed after Close.
func (s *Sharded) Read(ctx context.Context, max int) ([]sources.Message, error) {
	if max <= 0 {
		max = 1
	}
	s.max.Store(int64(max))
	if s.isClosed() {
		return nil, ErrClosed
	}
	it, ok := s.ready()
	if !ok {
		t := time.NewTimer(s.cfg.Block)
		defer t.Stop()
		select {
		case it = <-s.items:
		case err := <-s.errs:
			return nil, err
		case <-t.C:
			return []sources.Message{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	msgs := it.msgs
	for len(msgs) < max {
		more, ok := s.ready()
		if !ok {
			break
		}
		if more.err != nil || len(msgs)+len(more.msgs) > max {
			s.next = &more // for the next Read
			break
		}
		msgs = append(msgs, more.msgs...)
	}
	return msgs, nil
}

// ready returns the item a shard reader has ready, without waiting (the
// one the last Read left first).
func (s *Sharded) ready() (shardItem, bool) {
	if it := s.next; it != nil {
		s.next = nil
		return *it, true
	}
	select {
	case it := <-s.items:
		return it, true
	default:
		return shardItem{}, false
	}
}

// waitKey names the member waiting for the lease of shard stream (in the
// stream's hash slot, as the lease).
func (s *Sharded) waitKey(i int) string {
	return LeaseKey(ShardStream(s.cfg.Stream, i), s.cfg.Group) + ":wait"
}

// wait announces that this member waits for the leases of shards, for a
// lease period: their holders hand them over.
func (s *Sharded) wait(ctx context.Context, shards []int) error {
	if len(shards) == 0 {
		return nil
	}
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, i := range shards {
			p.Set(ctx, s.waitKey(i), s.cfg.Member, s.cfg.Lease)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstream: announce wait for shards of %s: %w", s.cfg.Stream, err)
	}
	return nil
}

// waiters returns, for each of hs, the member waiting for its lease ("" none).
func (s *Sharded) waiters(ctx context.Context, hs []*heldShard) ([]string, error) {
	cmds := make([]*redis.StringCmd, len(hs))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, h := range hs {
			cmds[k] = p.Get(ctx, s.waitKey(h.i))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstream: read waiters for shards of %s: %w", s.cfg.Stream, err)
	}
	out := make([]string, len(hs))
	for k, c := range cmds {
		out[k] = c.Val()
	}
	return out, nil
}

func (s *Sharded) readingCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.mu.shards {
		if h.draining.IsZero() {
			n++
		}
	}
	return n
}

// Commit acknowledges, per shard, every entry delivered up to the offset
// committed for the shard's partition (see Source.Commit), every shard's in
// one round trip. Positions of other sources, and of shards this source no
// longer holds, are ignored: their entries stay pending for the shard's
// next holder to re-deliver.
func (s *Sharded) Commit(ctx context.Context, upTo []record.Position) error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	byShard := map[int]*Source{}
	offset := map[int]int64{}
	for _, p := range upTo {
		if p.Source != s.cfg.Name {
			continue
		}
		if p.Partition < 0 || int(p.Partition) >= s.cfg.Shards {
			s.mu.Unlock()
			return fmt.Errorf("redisstream: commit %v: source %s has partitions 0..%d", p, s.cfg.Name, s.cfg.Shards-1)
		}
		i := int(p.Partition)
		if h := s.mu.shards[i]; h != nil {
			byShard[i] = h.src
			if o, ok := offset[i]; !ok || p.Offset > o {
				offset[i] = p.Offset
			}
		}
	}
	s.mu.Unlock()
	// Each shard's commits are serialised (commitMu, taken in shard order).
	order := slices.Sorted(maps.Keys(byShard))
	var acks []ack
	for _, i := range order {
		src := byShard[i]
		src.commitMu.Lock()
		defer src.commitMu.Unlock()
		a, err := src.prepareAck(offset[i])
		if errors.Is(err, ErrClosed) {
			continue // released meanwhile: its entries stay pending
		}
		if err != nil {
			return err
		}
		if a.n > 0 {
			acks = append(acks, a)
		}
	}
	if len(acks) == 0 {
		return nil
	}
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, a := range acks {
			a.queue(ctx, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstream: ack entries of %d shards of %s: %w", len(acks), s.cfg.Stream, err)
	}
	for _, a := range acks {
		a.s.acked(a.n)
	}
	return nil
}
