package fleetbench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/sources/redisstream"
)

// The sharded Redis Streams source (-source redis-streams): each table is
// the shard streams <table>-<run>.0 … .<Partitions-1> on a plain
// redis-server of their own (the source reads one server: it has no Redis
// Cluster client, redis.cluster is state.redis only), written as
// docs/sharded-streams.md says a producer shards: every change of a row to
// shard streamshard.Of(the row's primary key as a JSON array). Every node
// runs the same two sharded redis-stream sources, one group per table, so
// the shards' leases spread over the fleet (redisstream.AssignShards).

// streamsSources is the sources: section of a node's job on the shard
// streams at addr.
// byJoinKey: the shards follow the join key (partitioned_by: join_key).
func streamsSources(w *workload, run int, addr string, shards int, byJoinKey bool) string {
	part := ""
	if byJoinKey {
		part = ", partitioned_by: join_key"
	}
	src := func(table, side string) string {
		return fmt.Sprintf("  - {name: %s, type: redis-stream, side: %s, redis: {addr: %q}, stream: %s, shards: %d%s, group: %s}\n",
			table, side, addr, topic(table, run), shards, part, group(table, run))
	}
	return "sources:\n" + src(w.left, "left") + src(w.right, "right")
}

// group is the consumer group of a table's source in run run (Kafka or
// Redis Streams).
func group(table string, run int) string { return fmt.Sprintf("fleet-%d-%s", run, table) }

// redisFeeder writes each record to its table's shard stream for the row's
// primary key, as the entry field "value" (what the source reads), in
// pipelines of up to 1000 XADDs.
type redisFeeder struct {
	rdb       *redis.Client
	run       int
	shards    int
	byJoinKey bool // shard by the row's join key, not its primary key
}

// shardStream is the shard stream m goes to.
func (f redisFeeder) shardStream(m msg) string {
	key := m.pk
	if f.byJoinKey {
		key = m.jk
	}
	return streamshard.Stream(topic(m.table, f.run), streamshard.Of(key, f.shards))
}

func (f redisFeeder) send(ctx context.Context, ms []msg, done func(error)) {
	for len(ms) > 0 {
		n := min(len(ms), 1000)
		p := f.rdb.Pipeline()
		for _, m := range ms[:n] {
			p.XAdd(ctx, &redis.XAddArgs{Stream: f.shardStream(m), Values: []any{"value", m.value}})
		}
		if _, err := p.Exec(ctx); err != nil {
			done(fmt.Errorf("XADD to the shard streams: %w", err))
			return
		}
		ms = ms[n:]
	}
	done(nil)
}

// leaseHolders reads who holds the lease of each shard stream of table's
// source in run run: "" for a free lease, else the consumer (the node's
// name) of the lease's "consumer|epoch".
func leaseHolders(ctx context.Context, rdb *redis.Client, table string, run, shards int) ([]string, error) {
	keys := make([]string, shards)
	for i := range keys {
		keys[i] = redisstream.LeaseKey(streamshard.Stream(topic(table, run), i), group(table, run))
	}
	vs, err := rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("read the leases of %s: %w", topic(table, run), err)
	}
	out := make([]string, shards)
	for i, v := range vs {
		if s, ok := v.(string); ok {
			out[i], _, _ = strings.Cut(s, "|")
		}
	}
	return out, nil
}

// leasesSpread is nil when holders (leaseHolders) are the shards'
// assignment over names (redisstream.AssignShards: what every node
// computes once it sees the whole fleet, floor or ceil of shards/names
// each), else an error saying how far off they are. The node's
// joinery_source_reading gauge only says that a node holds some lease (a
// node may still hold its newcomers' shards while they wait), so the
// benchmark reads the lease keys themselves.
func leasesSpread(holders, names []string) error {
	want := redisstream.AssignShards(len(holders), names)
	held := map[string]int{}
	wrong := 0
	for i, h := range holders {
		held[h]++
		if h != want[i] {
			wrong++
		}
	}
	if wrong == 0 {
		return nil
	}
	var per []string
	for _, n := range names {
		per = append(per, fmt.Sprintf("%s %d", n, held[n]))
	}
	if held[""] > 0 {
		per = append(per, fmt.Sprintf("free %d", held[""]))
	}
	return fmt.Errorf("%d of %d shards not yet with their owner (held: %s)", wrong, len(holders), strings.Join(per, ", "))
}

// waitLeases waits until the leases of every table's shards are spread
// over the fleet's nodes n1 … nN as the source assigns them.
func waitLeases(ctx context.Context, rdb *redis.Client, w *workload, run, shards, n int) error {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	for _, table := range []string{w.left, w.right} {
		err := waitFor(ctx, 2*time.Minute, "the leases of "+topic(table, run)+"'s shards spread over "+strings.Join(names, ", "), func() error {
			time.Sleep(200 * time.Millisecond)
			hs, err := leaseHolders(ctx, rdb, table, run, shards)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(hs, func(h string) bool { return h != "" && !slices.Contains(names, h) }) {
				return fmt.Errorf("a lease held by another consumer than %v: %v", names, hs)
			}
			return leasesSpread(hs, names)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
