package fleetbench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources/redisstream"
)

// The sharded Redis Streams source (-source redis-streams): each table is
// the shard streams <table>-<run>.0 … .<Partitions-1> on a plain
// redis-server of their own (the source reads one server: it has no Redis
// Cluster client, redis.cluster is state.redis only), written as
// docs/guides/producers.md says a producer shards: every change of a row to
// shard streamshard.Of(the row's primary key as a JSON array). Every node
// runs the same two sharded redis-stream sources, one group per table, so
// the shards' leases spread over the fleet (redisstream.AssignShards).

// streamsSources is the sources: section of a node's job on the shard
// streams at addr, read as src says: redis-streams (sharded by the primary
// key), copartitioned (the shards follow the join key: partitioned_by:
// join_key) or repartitioned (by the primary key, repartition: stream).
func streamsSources(w *workload, run int, addr string, shards int, src string) string {
	part := map[string]string{SourceCoPartitioned: ", partitioned_by: join_key", SourceRepartitioned: ", repartition: stream"}[src]
	return sourcesSection(w, func(table, side string) string {
		return fmt.Sprintf("  - {name: %s, type: redis-stream, side: %s, redis: {addr: %q}, stream: %s, shards: %d%s, group: %s}\n",
			table, side, addr, topic(table, run), shards, part, group(table, run))
	})
}

// sourcesSection is the sources: section of the two tables' sources.
func sourcesSection(w *workload, src func(table, side string) string) string {
	return "sources:\n" + src(w.left, "left") + src(w.right, "right")
}

// shardStreams is the base names of the shard streams whose leases spread
// over the fleet and whose entries are all acknowledged once a backlog is
// done: each table's, and with repartitioned their repartition streams
// (streamshard.RepartitionStream), with each one's group.
func shardStreams(w *workload, run int, src string) (streams, groups []string) {
	for _, table := range []string{w.left, w.right} {
		streams, groups = append(streams, topic(table, run)), append(groups, group(table, run))
		if src == SourceRepartitioned {
			streams = append(streams, streamshard.RepartitionStream(topic(table, run), group(table, run)))
			groups = append(groups, group(table, run))
		}
	}
	return streams, groups
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

// leaseHolders reads who holds the lease of each shard stream of stream
// read by group: "" for a free lease, else the consumer (the node's name)
// of the lease's "consumer|epoch".
func leaseHolders(ctx context.Context, rdb *redis.Client, stream, group string, shards int) ([]string, error) {
	keys := make([]string, shards)
	for i := range keys {
		keys[i] = redisstream.LeaseKey(streamshard.Stream(stream, i), group)
	}
	vs, err := rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("read the leases of %s: %w", stream, err)
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

// waitLeases waits until the leases of every shard stream of src
// (shardStreams) are spread over the fleet's nodes n1 … nN as the source
// assigns them.
func waitLeases(ctx context.Context, rdb *redis.Client, w *workload, run, shards, n int, src string) error {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	streams, groups := shardStreams(w, run, src)
	for k, stream := range streams {
		err := testutil.Poll(ctx, 2*time.Minute, pollEvery, "the leases of "+stream+"'s shards spread over "+strings.Join(names, ", "), func() error {
			time.Sleep(200 * time.Millisecond)
			hs, err := leaseHolders(ctx, rdb, stream, groups[k], shards)
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

// allAcked is nil once every entry of every shard stream of src
// (shardStreams) was delivered to its group and acknowledged, else an
// error saying what is left.
func allAcked(ctx context.Context, rdb *redis.Client, w *workload, run, shards int, src string) error {
	streams, groups := shardStreams(w, run, src)
	p := rdb.Pipeline()
	cmds := make([]*redis.XInfoGroupsCmd, 0, len(streams)*shards)
	for _, stream := range streams {
		for i := range shards {
			cmds = append(cmds, p.XInfoGroups(ctx, streamshard.Stream(stream, i)))
		}
	}
	_, _ = p.Exec(ctx) // each command's error is its own
	var lag, pending int64
	for k, c := range cmds {
		gs, err := c.Result()
		if err != nil {
			return fmt.Errorf("groups of %s: %w", streamshard.Stream(streams[k/shards], k%shards), err)
		}
		found := false
		for _, g := range gs {
			if g.Name == groups[k/shards] {
				found = true
				lag, pending = lag+g.Lag, pending+g.Pending
			}
		}
		if !found {
			return fmt.Errorf("%s has no group %s yet", streamshard.Stream(streams[k/shards], k%shards), groups[k/shards])
		}
	}
	if lag > 0 || pending > 0 {
		return fmt.Errorf("%d entries not read, %d read and not acknowledged", lag, pending)
	}
	return nil
}

// repartitionEntries is how many entries msgs make in the repartition
// streams of a repartitioned source of shards shards: one per key group
// of a record's join keys (before's and after's: a row moving to a key of
// another group makes two).
func repartitionEntries(w *workload, msgs []msg, shards int) (int, error) {
	n := 0
	for i, m := range msgs {
		var env struct {
			Before map[string]json.RawMessage `json:"before"`
			After  map[string]json.RawMessage `json:"after"`
		}
		if err := json.Unmarshal(m.value, &env); err != nil {
			return 0, fmt.Errorf("%s input line %d: %w", w.name, i, err)
		}
		col := w.joinCols[m.table]
		groups := map[int]bool{}
		for _, row := range []map[string]json.RawMessage{env.Before, env.After} {
			if v, ok := row[col]; ok && string(v) != "null" {
				groups[streamshard.Of(fmt.Appendf(nil, "[%s]", v), shards)] = true
			}
		}
		n += len(groups)
	}
	if n == 0 {
		return 0, fmt.Errorf("%s input: no record has a join key", w.name)
	}
	return n, nil
}
