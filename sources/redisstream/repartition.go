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
// the join key (sources[].repartition: stream, docs/sharded-streams.md):
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
// raw offset in 19 digits and its value. It returns how many it wrote.
var repartitionScript = redis.NewScript(`
local done = redis.call('GET', KEYS[1]) or ''
local last = done
local n = 0
for i = 1, #ARGV, 3 do
  local off = ARGV[i + 1]
  if off > done then
    redis.call('XADD', KEYS[tonumber(ARGV[i])], '*', 'value', ARGV[i + 2])
    if off > last then last = off end
    n = n + 1
  end
end
if last > done then redis.call('SET', KEYS[1], last) end
return n
`)

// Repartition writes fwd (records of this source's shards, each shard's in
// its order) to the repartition streams, one script per raw shard, each
// record once (see above). An error leaves the records to write again.
func (s *Sharded) Repartition(ctx context.Context, fwd []sources.Forward) error {
	if s.cfg.RepartitionTo == "" {
		return fmt.Errorf("redisstream: %s is not repartitioned", s.cfg.Stream)
	}
	byShard := map[int32][]sources.Forward{}
	var order []int32
	for _, f := range fwd {
		p := f.Pos.Partition
		if p < 0 || int(p) >= s.cfg.Shards || f.Group < 0 || f.Group >= s.cfg.Shards {
			return fmt.Errorf("redisstream: repartition %v to group %d: %s has %d shards", f.Pos, f.Group, s.cfg.Name, s.cfg.Shards)
		}
		if _, ok := byShard[p]; !ok {
			order = append(order, p)
		}
		byShard[p] = append(byShard[p], f)
	}
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
		if err := repartitionScript.Run(ctx, s.client, keys, args...).Err(); err != nil {
			return fmt.Errorf("redisstream: repartition %d records of %s: %w", len(fs), ShardStream(s.cfg.Stream, int(p)), err)
		}
	}
	return nil
}
