package redisstream

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/sources"
)

// A sharded source with Config.RepartitionTo repartitions its records by
// the join key (sources[].repartition: stream, docs/guides/producers.md):
// the node routes each record of raw shard i to its join keys' key groups
// and hands them to Repartition, which appends them to the shard streams
// of RepartitionTo (one per key group) and records the highest raw offset
// of shard i it wrote, in one script; only then does the node commit (XACK)
// the raw entries. The script skips a record at or below that offset, so a
// record re-delivered after a crash between the write and the XACK — to
// this reader or to the shard's next one — is not written twice: every raw
// entry reaches the repartition streams once, in its shard's order.

var _ sources.Repartitioner = (*Sharded)(nil)

// RepartitionedKey holds the highest offset of raw shard i of a sharded
// source that was written to the repartition streams repart (as 19 digits,
// so that the script compares offsets as text: Lua's numbers are doubles).
func RepartitionedKey(repart string, i int) string {
	return repart + ":written:" + strconv.Itoa(i)
}

// repartitionScript appends the records of one raw shard not written yet:
// KEYS[1] is the shard's RepartitionedKey, KEYS[2…] the repartition shard
// streams; ARGV holds, per record, the index of its stream in KEYS, its
// raw offset in 19 digits and its value. It returns the most entries one
// of KEYS[2…] holds.
var repartitionScript = redis.NewScript(`
local done = redis.call('GET', KEYS[1]) or ''
local last = done
for i = 1, #ARGV, 3 do
  local off = ARGV[i + 1]
  if off > done then
    redis.call('XADD', KEYS[tonumber(ARGV[i])], '*', 'value', ARGV[i + 2])
    if off > last then last = off end
  end
end
if last > done then redis.call('SET', KEYS[1], last) end
local most = 0
for k = 2, #KEYS do
  local n = redis.call('XLEN', KEYS[k])
  if n > most then most = n end
end
return most
`)

// Repartition writes fwd (records of this source's shards, each shard's in
// its order) to the repartition streams, one script per raw shard, each
// record once (see above), and returns the most entries one of the
// streams it wrote to holds (XLEN: at least its backlog, see Backlog). An
// error leaves the records to write again.
func (s *Sharded) Repartition(ctx context.Context, fwd []sources.Forward) (int64, error) {
	if s.cfg.RepartitionTo == "" {
		return 0, fmt.Errorf("redisstream: %s is not repartitioned", s.cfg.Stream)
	}
	byShard := map[int32][]sources.Forward{}
	var order []int32
	for _, f := range fwd {
		p := f.Pos.Partition
		if p < 0 || int(p) >= s.cfg.Shards || f.Group < 0 || f.Group >= s.cfg.Shards {
			return 0, fmt.Errorf("redisstream: repartition %v to group %d: %s has %d shards", f.Pos, f.Group, s.cfg.Name, s.cfg.Shards)
		}
		if _, ok := byShard[p]; !ok {
			order = append(order, p)
		}
		byShard[p] = append(byShard[p], f)
	}
	most := int64(0)
	for _, p := range order {
		fs := byShard[p]
		keys := []string{RepartitionedKey(s.cfg.RepartitionTo, int(p))}
		index := map[int]int{} // group -> its stream's index in keys (1-based)
		args := make([]any, 0, 3*len(fs))
		for _, f := range fs {
			k, ok := index[f.Group]
			if !ok {
				keys = append(keys, streamshard.Stream(s.cfg.RepartitionTo, f.Group))
				k = len(keys)
				index[f.Group] = k
			}
			args = append(args, k, fmt.Sprintf("%019d", f.Pos.Offset), f.Value)
		}
		n, err := repartitionScript.Run(ctx, s.client, keys, args...).Int64()
		if err != nil {
			return 0, fmt.Errorf("redisstream: repartition %d records of %s: %w", len(fs), ShardStream(s.cfg.Stream, int(p)), err)
		}
		most = max(most, n)
	}
	return most, nil
}

// Backlog returns the most entries one repartition stream holds that its
// group has not acknowledged (XINFO GROUPS: the entries not delivered yet,
// lag, and the pending ones), in one round trip. XLEN, what Repartition
// returns, counts too the acknowledged entries a stream keeps after the
// store's replay floor (Config.KeptFloor, trimTo): a raw reader waiting for
// XLEN to fall would wait, once the stream is consumed, for a trim that only
// the commit of new entries brings. Where Redis cannot tell the lag (a
// group moved back by a rewind) or the stream has no group yet, XLEN.
func (s *Sharded) Backlog(ctx context.Context) (int64, error) {
	if s.cfg.RepartitionTo == "" {
		return 0, fmt.Errorf("redisstream: %s is not repartitioned", s.cfg.Stream)
	}
	lens := make([]*redis.IntCmd, s.cfg.Shards)
	groups := make([]*redis.XInfoGroupsCmd, s.cfg.Shards)
	_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for g := range lens {
			stream := streamshard.Stream(s.cfg.RepartitionTo, g)
			lens[g], groups[g] = p.XLen(ctx, stream), p.XInfoGroups(ctx, stream)
		}
		return nil
	})
	most := int64(0)
	for g := range lens {
		n, err := lens[g].Result()
		if err != nil {
			return 0, fmt.Errorf("redisstream: backlog of %s: %w", s.cfg.RepartitionTo, err)
		}
		gs, err := groups[g].Result()
		if err != nil && n > 0 { // no stream (n 0): "no such key"
			return 0, fmt.Errorf("redisstream: backlog of %s: %w", s.cfg.RepartitionTo, err)
		}
		for _, gi := range gs {
			if gi.Name == s.cfg.Group && gi.Lag >= 0 {
				n = min(n, gi.Lag+gi.Pending)
			}
		}
		most = max(most, n)
	}
	return most, nil
}
