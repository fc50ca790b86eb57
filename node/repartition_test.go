package node_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources/redisstream"
)

// TestClusterRepartitionedShards runs three nodes over real memberlist and
// protoactor remoting on 8 shard streams sharded by the row's primary key
// (partitioned_by: pk, the Debezium shape) with repartition: stream: the
// reader of each raw shard writes its records to the repartition streams
// of their join keys' key groups, whose readers host the groups' key
// actors. Once the leases of both have settled no event goes to another
// node — every node's joinery_key_requests_total{where="remote"} stays put
// while each applies locally — every raw and repartition entry is
// acknowledged, the repartition streams are trimmed to their last entry, and the
// Redis hash view equals the brute-force join (domains moving between
// users, whose update is in one raw shard and reaches two key groups,
// included).
func TestClusterRepartitionedShards(t *testing.T) {
	const shards = 8
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 47, Users: 40, Domains: 120, Changes: 3000})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	half := len(h.Lines) / 2
	dir := t.TempDir()
	yml := "name: repart\n" + joinYAML + fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, shards: %[2]d, repartition: stream, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: redis-hash, redis: {addr: %[1]q}, key: view}]
`, rs.Addr, shards)
	nodes := startThree(t, dir, yml)
	xaddSharded(t, rc, "cdc", shards, h.Lines[:half])
	runAll(t, nodes)
	repart := streamshard.RepartitionStream("cdc", "joinery")
	// Both the raw shards' and the repartition shards' leases settle as
	// streamshard.Assign spreads them (3, 3, 2).
	want := streamshard.Assign(shards, []string{"n1", "n2", "n3"})
	testutil.WaitFor(t, 60*time.Second, func() error {
		for _, stream := range []string{"cdc", repart} {
			if got := shardHolders(rc, stream, "joinery", shards); !reflect.DeepEqual(got, want) {
				return fmt.Errorf("%s leases %v, want %v", stream, got, want)
			}
		}
		return nil
	})
	acked := func() error {
		if err := allAckedOf(rc, "cdc", shards)(); err != nil {
			return err
		}
		return allAckedOf(rc, repart, shards)()
	}
	testutil.WaitFor(t, 90*time.Second, acked)

	// Steady state: the rest of the input is repartitioned and applied
	// where its keys live.
	allLocal(t, nodes, func() { xaddSharded(t, rc, "cdc", shards, h.Lines[half:]) }, acked)
	testutil.WaitFor(t, 30*time.Second, func() error {
		if got, want := hashView(t, rc, "view"), h.LeftJoin(); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("view has %d rows, want %d", len(got), len(want))
		}
		return nil
	})
	diff(t, "repartitioned view vs brute-force join", hashView(t, rc, "view"), h.LeftJoin())

	// Every raw record that routes reached the repartition streams once
	// (a moved row's record twice when its keys are in two groups), and
	// what was consumed is trimmed.
	added := int64(0)
	for g := range shards {
		s := redisstream.ShardStream(repart, g)
		info, err := rc.XInfoStream(ctx, s).Result()
		if err != nil {
			t.Fatal(err)
		}
		added += info.EntriesAdded
		if info.Length > 1 {
			t.Errorf("%s holds %d entries after all were acknowledged, want at most the last (trimmed)", s, info.Length)
		}
	}
	if want := repartitionEntries(t, h.Lines, shards); added != want {
		t.Errorf("%d entries written to the repartition streams, want %d (%d raw records)", added, want, len(h.Lines))
	}
	t.Logf("%d raw records, %d repartition entries", len(h.Lines), added)
}

// repartitionEntries is how many entries the raw records lines make in the
// repartition streams: one per key group of a record's join keys (a domain
// moving between users of two groups makes two).
func repartitionEntries(t *testing.T, lines [][]byte, shards int) int64 {
	t.Helper()
	n := int64(0)
	for _, l := range lines {
		keyed, err := cdcgen.ByJoinKey([][]byte{l}, map[string]string{"users": "id", "domains": "user_id"})
		if err != nil {
			t.Fatal(err)
		}
		groups := map[int]bool{}
		for _, k := range keyed {
			groups[streamshard.Of(k.Key, shards)] = true
		}
		n += int64(len(groups))
	}
	return n
}
