package redisstream

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/streamshard"
)

// ReadersKey is the sorted set where the sharded sources of stream's group
// register (member -> until when, in Redis server ms): the members that
// read the shards, among which they are spread.
func ReadersKey(stream, group string) string {
	return "{" + stream + "}:joinery:readers:" + stream + ":" + group
}

// registerScript registers ARGV[1] as a reader for ARGV[2] ms (Redis's
// clock, so members' clocks do not matter), drops the expired ones and
// returns the live readers.
var registerScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], 10 * tonumber(ARGV[2]))
return redis.call('ZRANGE', KEYS[1], 0, -1)
`)

// members registers this member as a reader for a lease period and
// returns the fleet the shards are spread over: the registered readers
// (a node that does not run this source never registers) that Config.Members
// reports live, this member included.
func (s *Sharded) members(ctx context.Context) ([]string, error) {
	readers, err := registerScript.Run(ctx, s.client, []string{ReadersKey(s.cfg.Stream, s.cfg.Group)},
		s.cfg.Member, s.cfg.Lease.Milliseconds()).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("redisstream: register reader of %s: %w", s.cfg.Stream, err)
	}
	if s.cfg.Members != nil {
		live := s.cfg.Members()
		readers = slices.DeleteFunc(readers, func(m string) bool { return !slices.Contains(live, m) })
	}
	if !slices.Contains(readers, s.cfg.Member) {
		readers = append(readers, s.cfg.Member)
	}
	return dedup(readers), nil
}

// rebalance compares the held shards with this member's assignment (once
// Config.Expect members are there, or the wait for them is over): it
// takes the free leases of the shards it owns (announcing that it waits
// for those held by others), hands over a shard it holds but does not own
// once its owner waits for it, and takes, up to its fair share, orphans:
// shards whose lease stayed free for a whole lease period.
func (s *Sharded) rebalance(ctx context.Context) error {
	members, err := s.members(ctx)
	if err != nil {
		return err
	}
	if !s.expectBy.IsZero() {
		if len(members) < s.cfg.Expect && time.Now().Before(s.expectBy) {
			return nil // registered; the expected members are not all there yet
		}
		s.expectBy = time.Time{}
	}
	owner := AssignShards(s.cfg.Shards, members)
	limit := FairShare(s.cfg.Shards, len(members))
	s.mu.Lock()
	held := make(map[int]bool, len(s.mu.shards))
	var foreign []*heldShard // held, reading, owned by another member
	for i, h := range s.mu.shards {
		held[i] = true
		if h.draining.IsZero() && owner[i] != s.cfg.Member {
			foreign = append(foreign, h)
		}
	}
	s.mu.Unlock()
	if len(foreign) > 0 {
		waiting, err := s.waiters(ctx, foreign)
		if err != nil {
			return err
		}
		for k, h := range foreign {
			if waiting[k] == owner[h.i] {
				s.handOver(h)
			}
		}
	}
	var orphans []int
	var blocked []int // owned, held by another member
	for i := range s.cfg.Shards {
		if held[i] {
			continue
		}
		if owner[i] != s.cfg.Member {
			orphans = append(orphans, i)
			continue
		}
		ok, err := s.take(ctx, i)
		if err != nil {
			return err
		}
		if !ok {
			blocked = append(blocked, i)
		}
	}
	if err := s.wait(ctx, blocked); err != nil {
		return err
	}
	if len(orphans) == 0 || s.readingCount() >= limit {
		return nil
	}
	free, err := s.freeLeases(ctx, orphans)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, i := range orphans {
		if !free[i] {
			delete(s.freeSince, i)
			continue
		}
		since, seen := s.freeSince[i]
		if !seen {
			s.freeSince[i] = now
			continue
		}
		if now.Sub(since) < s.cfg.Lease || s.readingCount() >= limit {
			continue
		}
		if ok, err := s.take(ctx, i); err != nil {
			return err
		} else if ok {
			delete(s.freeSince, i)
		}
	}
	return nil
}

func dedup(ms []string) []string { return streamshard.Dedup(ms) }

// freeLeases reports which of shards have no lease holder, in one round trip.
func (s *Sharded) freeLeases(ctx context.Context, shards []int) (map[int]bool, error) {
	cmds := make([]*redis.IntCmd, len(shards))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, i := range shards {
			cmds[k] = p.Exists(ctx, LeaseKey(ShardStream(s.cfg.Stream, i), s.cfg.Group))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redisstream: check leases of %s: %w", s.cfg.Stream, err)
	}
	free := make(map[int]bool, len(shards))
	for k, i := range shards {
		free[i] = cmds[k].Val() == 0
	}
	return free, nil
}

// take acquires shard i's lease if it is free and starts reading the shard.
func (s *Sharded) take(ctx context.Context, i int) (bool, error) {
	cfg := s.cfg
	cfg.Stream = ShardStream(s.cfg.Stream, i)
	cfg.Shards, cfg.Members, cfg.OnPartitions = 0, nil, nil
	cfg.partition = int32(i)
	src := newWith(cfg, s.client)
	src.shared, src.noWait = true, true // the pump waits for every shard at once
	src.cfg.Name = s.cfg.Name
	ok, err := src.lease.tryAcquire(ctx, s.client, s.cfg.Consumer)
	if err != nil || !ok {
		return false, err
	}
	h := &heldShard{i: i, src: src, stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		_ = src.Close()
		return false, ErrClosed
	}
	s.mu.shards[i] = h
	s.mu.Unlock()
	if s.cfg.OnPartitions != nil {
		s.cfg.OnPartitions([]int32{int32(i)}, nil)
	}
	select {
	case s.taken <- struct{}{}:
	default:
	}
	return true, nil
}

// handOver stops reading h; finishDrains releases its lease once what was
// delivered from it is committed.
func (s *Sharded) handOver(h *heldShard) {
	s.mu.Lock()
	if !h.draining.IsZero() {
		s.mu.Unlock()
		return
	}
	h.draining = time.Now()
	s.mu.Unlock()
	h.halt()
}

// finishDrains releases the leases of the shards handed over whose
// delivered entries are all committed (or that waited DefaultDrain), and
// drops the shards whose lease another member took.
func (s *Sharded) finishDrains() {
	s.mu.Lock()
	var done []*heldShard
	for i, h := range s.mu.shards {
		if h.draining.IsZero() && !h.lost.Load() {
			continue
		}
		select {
		case <-h.done:
		default:
			continue
		}
		if h.lost.Load() || h.src.unackedCount() == 0 || time.Since(h.draining) > s.drain {
			done = append(done, h)
			delete(s.mu.shards, i)
		}
	}
	s.mu.Unlock()
	for _, h := range done {
		s.release(h)
	}
}

// release closes h's source, which releases the lease if still held, and
// reports the shard revoked.
func (s *Sharded) release(h *heldShard) {
	_ = h.src.Close()
	if s.cfg.OnPartitions != nil {
		s.cfg.OnPartitions(nil, []int32{int32(h.i)})
	}
}
