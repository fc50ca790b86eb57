package redisstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/sources"
)

var (
	_ sources.Lagger = (*Source)(nil)
	_ sources.Lagger = (*Sharded)(nil)
)

// lagCountCap bounds the entries countAfter counts when Redis cannot say
// the group's lag itself.
const lagCountCap = 100000

// countAfter counts, in Redis, the entries of a stream after an ID (at most
// ARGV[2]); nothing but the count crosses the network.
var countAfter = redis.NewScript(`return #redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])`)

// Lag returns the stream's entries the group has not acknowledged yet —
// pending (delivered, not acknowledged) plus not yet delivered to the group
// (XINFO GROUPS' pending and lag) — as partition 0 (the shard's partition
// for a shard of a Sharded source). A source that waits for another
// reader's lease returns no partition. Where Redis cannot say the lag
// (entries deleted inside the unread range) the entries after the group's
// last delivered ID are counted, up to 100000.
func (s *Source) Lag(ctx context.Context) (map[int32]int64, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if s.lease != nil {
		if held, lost := s.lease.held(); !held || lost {
			return map[int32]int64{}, nil
		}
	}
	groups, err := s.client.XInfoGroups(ctx, s.cfg.Stream).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstream: lag of %s: %w", s.cfg.Stream, err)
	}
	for _, g := range groups {
		if g.Name != s.cfg.Group {
			continue
		}
		lag := g.Lag
		if lag < 0 {
			lag, err = countAfter.Run(ctx, s.client, []string{s.cfg.Stream}, g.LastDeliveredID, lagCountCap).Int64()
			if err != nil {
				return nil, fmt.Errorf("redisstream: lag of %s: %w", s.cfg.Stream, err)
			}
		}
		return map[int32]int64{s.cfg.partition: g.Pending + lag}, nil
	}
	return nil, fmt.Errorf("redisstream: lag of %s: no group %s", s.cfg.Stream, s.cfg.Group)
}

// Lag returns the lag (Source.Lag) of each shard this source reads, the
// ones it hands over excepted.
func (s *Sharded) Lag(ctx context.Context) (map[int32]int64, error) {
	s.mu.Lock()
	var held []*heldShard
	for _, h := range s.mu.shards {
		if h.draining.IsZero() && !h.lost.Load() {
			held = append(held, h)
		}
	}
	s.mu.Unlock()
	out := make(map[int32]int64, len(held))
	for _, h := range held {
		lag, err := h.src.Lag(ctx)
		if errors.Is(err, ErrClosed) {
			continue // handed over or dropped since
		}
		if err != nil {
			return nil, err
		}
		for p, n := range lag {
			out[p] = n
		}
	}
	return out, nil
}
