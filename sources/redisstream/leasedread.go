package redisstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/sources"
)

// holdLease makes sure this source holds the stream's lease before it
// reads: it takes it when free, and otherwise waits a little (up to Block or
// a tenth of the lease) and reports false. ErrLeaseLost when another source
// took it from this one.
func (s *Source) holdLease(ctx context.Context) (bool, error) {
	held, lost := s.lease.held()
	if lost {
		return false, ErrLeaseLost
	}
	if held {
		return true, nil
	}
	ok, err := s.lease.tryAcquire(ctx, s.client, s.cfg.Consumer)
	if err != nil {
		return false, s.readErr(ctx, err)
	}
	if ok {
		if s.cfg.OnPartitions != nil {
			s.cfg.OnPartitions([]int32{0}, nil)
		}
		return true, nil
	}
	if !s.waitReported && s.cfg.OnPartitions != nil {
		s.cfg.OnPartitions(nil, nil)
	}
	s.waitReported = true
	t := time.NewTimer(max(s.cfg.Block, s.cfg.Lease/10))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-t.C:
		return false, nil
	}
}

// readLeased reads new entries with the lease checked in the same script;
// when there are none it waits up to Block for the stream to grow (a plain
// XREAD, which reads nothing for the group) and tries once more. After a
// read that found fewer than max entries (it took what there was) the next
// one waits first, from the last entry delivered: a shard that keeps up
// pays a wait and a read per batch, not an empty read besides.
func (s *Source) readLeased(ctx context.Context, max int) ([]sources.Message, error) {
	if from := s.waitFrom; from != "" {
		s.waitFrom = ""
		err := s.client.XRead(ctx, &redis.XReadArgs{Streams: []string{s.cfg.Stream, from}, Count: 1, Block: s.cfg.Block}).Err()
		if errors.Is(err, redis.Nil) {
			s.waitFrom = from
			return []sources.Message{}, nil
		}
		if err != nil {
			return nil, s.readErr(ctx, fmt.Errorf("redisstream: wait for %s: %w", s.cfg.Stream, err))
		}
	}
	for try := 0; ; try++ {
		entries, lastID, lost, err := s.lease.read(ctx, s.client, s.cfg.Stream, s.cfg.Group, s.cfg.Consumer, max)
		switch {
		case err != nil:
			return nil, s.readErr(ctx, err)
		case lost:
			return nil, ErrLeaseLost
		case len(entries) > 0:
			if len(entries) < max && !s.noWait {
				s.waitFrom = entries[len(entries)-1].ID
			}
			return s.deliver(entries)
		case try > 0 || s.noWait:
			return []sources.Message{}, nil
		}
		err = s.client.XRead(ctx, &redis.XReadArgs{Streams: []string{s.cfg.Stream, lastID}, Count: 1, Block: s.cfg.Block}).Err()
		if errors.Is(err, redis.Nil) {
			return []sources.Message{}, nil
		}
		if err != nil {
			return nil, s.readErr(ctx, fmt.Errorf("redisstream: wait for %s: %w", s.cfg.Stream, err))
		}
	}
}
