package redisstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/backoff"
	"github.com/joinery/joinery/sources"
)

// The joint reader. A sharded source reads all its held shards from one
// goroutine (pump): a shard that has finished its start (the pending
// re-read, the claims, the rewind check: Source.steady) is read together
// with the others in one script (jointReadScript: each shard's lease
// checked, then its new entries), and when none has anything new, one
// XREAD waits on all of them. So a read round costs two round trips
// whatever the number of shards, and its batches grow with the load (a
// shard's entries wait in Redis while the caller works), instead of a wait
// and a read per shard per batch. A shard still starting is read by its
// own Source.Read, which never waits (Source.noWait).

// jointReadScript is readScript for several shards: KEYS are, per shard,
// its lease key, epoch key and stream; ARGV the lease ttl, the group, the
// consumer and the count, then per shard its lease value and epoch. It
// returns, per shard, {0} when its lease is lost, {1, reply} with
// XREADGROUP's reply, or {2, lastID} when there is nothing new.
var jointReadScript = redis.NewScript(`
local ttl, group, consumer, count = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local out = {}
for i = 0, #KEYS / 3 - 1 do
  local lk, ek, st = KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3]
  local me, epoch = ARGV[5 + 2 * i], ARGV[6 + 2 * i]
  local v = redis.call('GET', lk)
  local held = false
  if v == me then
    redis.call('PEXPIRE', lk, ttl)
    held = true
  elseif not v and redis.call('GET', ek) == epoch then
    redis.call('SET', lk, me, 'PX', ttl)
    held = true
  end
  if not held then
    out[i + 1] = {0}
  else
    local r = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'STREAMS', st, '>')
    if r then
      out[i + 1] = {1, r}
    else
      local last = redis.call('XREVRANGE', st, '+', '-', 'COUNT', 1)
      if #last > 0 then out[i + 1] = {2, last[1][1]} else out[i + 1] = {2, '0-0'} end
    end
  end
end
return out
`)

// steady reports whether s has finished its start and reads new entries
// alone: its lease held, the pending re-read, the start claim and the
// rewind check done, nothing queued, no periodic claim due.
func (s *Source) steady() bool {
	if s.lease == nil || !s.pendingDone || !s.rewound || len(s.queue) > 0 || s.rewoundTo >= 0 {
		return false
	}
	if s.cfg.ClaimMinIdle > 0 && !time.Now().Before(s.nextClaim) {
		return false
	}
	held, lost := s.lease.held()
	return held && !lost
}

// jointResult is one shard's part of a joint read.
type jointResult struct {
	entries []redis.XMessage
	lastID  string // nothing new: the stream's last entry
	lost    bool
}

// jointRead reads the new entries of hs (steady sources of one client,
// group and consumer) in one script.
func jointRead(ctx context.Context, c *redis.Client, hs []*heldShard, count int) ([]jointResult, error) {
	keys := make([]string, 0, 3*len(hs))
	args := make([]any, 0, 4+2*len(hs))
	first := hs[0].src
	args = append(args, first.lease.ttl.Milliseconds(), first.cfg.Group, first.cfg.Consumer, count)
	for _, h := range hs {
		me, epoch := h.src.lease.args()
		keys = append(keys, h.src.lease.key, h.src.lease.epochKey, h.src.cfg.Stream)
		args = append(args, me, epoch)
	}
	res, err := jointReadScript.Run(ctx, c, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("redisstream: read shards of %s: %w", first.cfg.Name, err)
	}
	if len(res) != len(hs) {
		return nil, fmt.Errorf("redisstream: read shards of %s: %d replies for %d shards", first.cfg.Name, len(res), len(hs))
	}
	out := make([]jointResult, len(hs))
	for k, r := range res {
		v, _ := r.([]any)
		switch {
		case len(v) == 1 && v[0] == int64(0):
			out[k].lost = true
		case len(v) == 2 && v[0] == int64(2):
			out[k].lastID, _ = v[1].(string)
		case len(v) == 2 && v[0] == int64(1):
			if out[k].entries, err = parseXRead(v[1]); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("redisstream: read %s: unexpected script reply %v", hs[k].src.cfg.Stream, r)
		}
	}
	return out, nil
}

// pump reads the held shards until Close (see the joint reader above),
// handing each shard's batch to Read. A batch read but not handed over
// when its shard is stopped is forgotten (it stays pending in the group,
// for the next holder to claim). It closes a shard's done once it saw the
// shard stopped or its lease lost.
func (s *Sharded) pump() {
	defer close(s.pumped)
	ctx, cancel := s.stopContext()
	defer cancel()
	known := map[*heldShard]bool{}
	defer func() {
		for h := range known {
			h.finish()
		}
	}()
	bo := backoff.Backoff{Initial: 10 * time.Millisecond, Max: time.Second}
	for ctx.Err() == nil {
		var steady, starting []*heldShard
		for _, h := range s.reading() {
			known[h] = true
			select {
			case <-h.stop:
				h.finish()
				delete(known, h)
				continue
			default:
			}
			if time.Now().Before(h.retryAt) {
				continue
			}
			if h.src.steady() {
				steady = append(steady, h)
			} else {
				starting = append(starting, h)
			}
		}
		max := int(s.max.Load())
		read := false
		for _, h := range starting {
			msgs, err := h.src.Read(ctx, max)
			if ctx.Err() != nil {
				h.src.forget(len(msgs))
				return
			}
			if err == nil && len(msgs) == 0 {
				continue
			}
			read = true
			if !s.hand(ctx, h, msgs, err) {
				return
			}
		}
		var waitOn []string
		if len(steady) > 0 {
			res, err := jointRead(ctx, s.client, steady, max)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				// Handed to Read as one shard's error; the round is tried again after a wait.
				if !s.hand(ctx, steady[0], nil, steady[0].src.readErr(ctx, err)) || bo.Wait(ctx) != nil {
					return
				}
				continue
			}
			bo.Reset()
			for k, h := range steady {
				r := res[k]
				switch {
				case r.lost:
					h.src.lease.setLost()
					s.lose(h)
					delete(known, h)
				case len(r.entries) > 0:
					read = true
					msgs, err := h.src.deliver(r.entries)
					if !s.hand(ctx, h, msgs, err) {
						return
					}
				default:
					waitOn = append(waitOn, h.src.cfg.Stream, r.lastID)
				}
			}
		}
		if read {
			continue
		}
		if !s.await(ctx, waitOn, len(starting) > 0) {
			return
		}
	}
}

// hand gives a shard's batch (or error) to Read. A shard stopped meanwhile
// forgets the batch; false when the source closes.
func (s *Sharded) hand(ctx context.Context, h *heldShard, msgs []sources.Message, err error) bool {
	if errors.Is(err, ErrLeaseLost) {
		s.lose(h)
		return true
	}
	select {
	case s.items <- shardItem{shard: h.i, msgs: msgs, err: err}:
	case <-h.stop:
		h.src.forget(len(msgs))
		h.finish()
		return true
	case <-ctx.Done():
		h.src.forget(len(msgs))
		return false
	}
	if err != nil {
		// Read reported it; this shard waits before it is read again.
		h.retries++
		h.retryAt = time.Now().Add(min(time.Second, 10*time.Millisecond<<min(h.retries, 7)))
	} else {
		h.retries = 0
	}
	return true
}

// lose drops a shard whose lease another consumer took: finishDrains
// releases it.
func (s *Sharded) lose(h *heldShard) {
	h.lost.Store(true)
	h.finish()
}

// await waits, up to Config.Block, for a new entry in one of streams (XREAD
// arguments: each stream and the ID after which to wait), a newly taken
// shard, or Close; false once the source closes. With starting shards (their
// start may take another Read) it only yields.
func (s *Sharded) await(ctx context.Context, streams []string, starting bool) bool {
	if starting {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Millisecond):
			return true
		}
	}
	if len(streams) == 0 {
		t := time.NewTimer(s.cfg.Block)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-s.taken:
		case <-t.C:
		}
		return true
	}
	// The streams first, then the IDs.
	args := make([]string, 0, len(streams))
	for k := 0; k < len(streams); k += 2 {
		args = append(args, streams[k])
	}
	for k := 1; k < len(streams); k += 2 {
		args = append(args, streams[k])
	}
	err := s.client.XRead(ctx, &redis.XReadArgs{Streams: args, Count: 1, Block: s.cfg.Block}).Err()
	if ctx.Err() != nil {
		return false
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		// Redis unreachable: the next round's read reports it.
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// reading returns the held shards whose lease is not lost, in order (a
// shard handed over is stopped: the pump finishes it).
func (s *Sharded) reading() []*heldShard {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*heldShard, 0, len(s.mu.shards))
	for _, h := range s.mu.shards {
		if !h.lost.Load() {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b *heldShard) int { return a.i - b.i })
	return out
}
