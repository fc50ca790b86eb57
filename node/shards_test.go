package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/sources/redisstream"
)

// xaddSharded appends Debezium lines to the shard streams of stream, each
// in the shard of its row's primary key as a producer does: ShardOf of the
// key as a JSON array ([id]), from after, or before for a delete.
func xaddSharded(t *testing.T, rc *redis.Client, stream string, shards int, lines [][]byte) {
	t.Helper()
	p := rc.Pipeline()
	for _, l := range lines {
		var env struct{ Before, After map[string]any }
		if err := json.Unmarshal(l, &env); err != nil {
			t.Fatal(err)
		}
		row := env.After
		if row == nil {
			row = env.Before
		}
		key, err := json.Marshal([]any{row["id"]})
		if err != nil {
			t.Fatal(err)
		}
		p.XAdd(context.Background(), &redis.XAddArgs{Stream: redisstream.ShardStream(stream, redisstream.ShardOf(key, shards)),
			Values: map[string]any{streamshard.ValueField: string(l)}})
	}
	if _, err := p.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// shardHolders returns the node holding each shard's lease ("" free).
func shardHolders(rc *redis.Client, stream, group string, shards int) []string {
	out := make([]string, shards)
	for i := range shards {
		v, _ := rc.Get(context.Background(), redisstream.LeaseKey(redisstream.ShardStream(stream, i), group)).Result()
		out[i], _, _ = strings.Cut(v, "|")
	}
	return out
}

// allAcked is a WaitFor condition: every entry of every shard was delivered
// to group joinery and acknowledged.
func allAcked(rc *redis.Client, shards int) func() error { return allAckedOf(rc, "cdc", shards) }

// allAckedOf is allAcked for the shard streams of stream.
func allAckedOf(rc *redis.Client, stream string, shards int) func() error {
	return func() error {
		for i := range shards {
			s := redisstream.ShardStream(stream, i)
			gs, err := rc.XInfoGroups(context.Background(), s).Result()
			if err != nil || len(gs) != 1 {
				return fmt.Errorf("%s groups %v: %v", s, gs, err)
			}
			if g := gs[0]; g.Lag != 0 || g.Pending != 0 {
				return fmt.Errorf("%s: lag %d, %d pending", s, g.Lag, g.Pending)
			}
		}
		return nil
	}
}

// startShardedThree starts (not runs) nodes n1, n2 and n3 of job name, on
// Redis at addr, reading the shard streams of "cdc" (shards of them) into
// a Redis hash; cluster is added to each one's cluster settings.
func startShardedThree(t *testing.T, name, addr string, shards int, cluster string) []*node.Node {
	t.Helper()
	dir := t.TempDir()
	yml := "name: " + name + "\n" + joinYAML + fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, shards: %[2]d, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: redis-hash, redis: {addr: %[1]q}, key: view}]
`, addr, shards)
	n1 := start(t, parse(t, dir, yml+"cluster: {node_name: n1"+cluster+"}\n"))
	seeds := fmt.Sprintf("cluster: {node_name: %%s, seeds: [%q]%s}\n", n1.GossipAddr(), cluster)
	n2 := start(t, parse(t, dir, yml+fmt.Sprintf(seeds, "n2")))
	n3 := start(t, parse(t, dir, yml+fmt.Sprintf(seeds, "n3")))
	return []*node.Node{n1, n2, n3}
}

// TestClusterShardedRedisStreams runs three nodes over real memberlist and
// protoactor remoting on a Redis Streams source of 8 shard streams (the CDC
// lines sharded by row primary key): the shards' leases spread over the
// three nodes (3, 3, 2) and every node reads; the Redis hash view equals
// the brute-force join. Then one node stops: its leases move to the other
// two (4 each), which read the rest, and the view equals the join again
// with every entry acknowledged.
func TestClusterShardedRedisStreams(t *testing.T) {
	const shards = 8
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 41, Users: 40, Domains: 120, Changes: 3000})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	half := len(h.Lines) / 2
	nodes := startShardedThree(t, "sharded", rs.Addr, shards, "")
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	alive := func(want int, ns ...*node.Node) {
		for _, n := range ns {
			testutil.WaitFor(t, 30*time.Second, seesAlive(n, want))
		}
	}
	alive(3, nodes...)
	xaddSharded(t, rc, "cdc", shards, h.Lines[:half])
	var cancels [3]context.CancelFunc
	var dones [3]chan error
	for i, n := range nodes {
		runCtx, cancel := context.WithCancel(ctx)
		cancels[i], dones[i] = cancel, make(chan error, 1)
		go func() { dones[i] <- n.Run(runCtx) }()
	}
	spread := func(names ...string) func() error {
		return func() error {
			got := shardHolders(rc, "cdc", "joinery", shards)
			count := map[string]int{}
			for _, o := range got {
				count[o]++
			}
			for _, name := range names {
				if c := count[name]; c < shards/len(names) || c > redisstream.FairShare(shards, len(names)) {
					return fmt.Errorf("leases %v: %s holds %d", got, name, c)
				}
			}
			if count[""] > 0 {
				return fmt.Errorf("leases %v: %d shards free", got, count[""])
			}
			return nil
		}
	}
	testutil.WaitFor(t, 60*time.Second, spread("n1", "n2", "n3"))
	testutil.WaitFor(t, 90*time.Second, allAcked(rc, shards))
	t.Logf("leases with three nodes: %v", shardHolders(rc, "cdc", "joinery", shards))
	// The nodes that started last may have found every shard taken, and
	// read only once n1 handed some over: more input shows they all read.
	in := func(n *node.Node) int64 { return n.Stats().In.Load() }
	before := []int64{in(n1), in(n2), in(n3)}
	xaddSharded(t, rc, "cdc", shards, h.Lines[half:half+300])
	testutil.WaitFor(t, 60*time.Second, allAcked(rc, shards))
	for i, n := range nodes {
		if in(n) == before[i] {
			t.Errorf("n%d read nothing of 300 new lines spread over %d shards (leases %v)", i+1, shards, shardHolders(rc, "cdc", "joinery", shards))
		}
	}
	if got := in(n1) + in(n2) + in(n3); got < int64(half+300) {
		t.Errorf("the nodes read %d records, want at least %d", got, half+300)
	}
	for i, n := range nodes {
		if got := sourceReading(t, n); got != 1 {
			t.Errorf("n%d joinery_source_reading = %v, want 1", i+1, got)
		}
	}

	// n3 stops: its shards move to n1 and n2, which read the rest.
	cancels[2]()
	if err := <-dones[2]; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("n3 run: %v", err)
	}
	if err := n3.Close(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := in(n3)
	alive(2, n1, n2)
	xaddSharded(t, rc, "cdc", shards, h.Lines[half+300:])
	testutil.WaitFor(t, 60*time.Second, spread("n1", "n2"))
	testutil.WaitFor(t, 90*time.Second, allAcked(rc, shards))
	testutil.WaitFor(t, 30*time.Second, func() error {
		if got, want := hashView(t, rc, "view"), h.LeftJoin(); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("view has %d rows, want %d", len(got), len(want))
		}
		return nil
	})
	diff(t, "sharded view vs brute-force join", hashView(t, rc, "view"), h.LeftJoin())
	if in(n3) != stopped {
		t.Errorf("n3 read after it stopped")
	}
	holders := shardHolders(rc, "cdc", "joinery", shards)
	if slices.Contains(holders, "n3") {
		t.Errorf("n3 still holds leases after it stopped: %v", holders)
	}
	t.Logf("leases with two nodes: %v; records read n1 %d, n2 %d, n3 %d", holders, in(n1), in(n2), in(n3))
	for i := range 2 {
		cancels[i]()
		if err := <-dones[i]; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("n%d run: %v", i+1, err)
		}
	}
}

// TestClusterShardedExpect: with cluster.expect: 3, the first node to run
// a sharded source takes no shard while the other two have not opened
// theirs (they are members already), then each node takes the shards
// AssignShards gives it, and every entry is acknowledged. Without the
// setting the first node takes all eight at once.
func TestClusterShardedExpect(t *testing.T) {
	const shards = 8
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 43, Users: 40, Domains: 120, Changes: 600})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	nodes := startShardedThree(t, "expect", rs.Addr, shards, ", expect: 3, expect_wait: 30s")
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	for _, n := range nodes {
		testutil.WaitFor(t, 30*time.Second, seesAlive(n, 3))
	}
	xaddSharded(t, rc, "cdc", shards, h.Lines)
	var dones []chan error
	runCtx, cancel := context.WithCancel(ctx)
	run := func(n *node.Node) {
		done := make(chan error, 1)
		dones = append(dones, done)
		go func() { done <- n.Run(runCtx) }()
	}
	run(n1)
	// n1 runs alone for several rebalance rounds (250 ms each).
	time.Sleep(time.Second)
	if got := shardHolders(rc, "cdc", "joinery", shards); slices.ContainsFunc(got, func(o string) bool { return o != "" }) {
		t.Errorf("n1 alone took leases %v before the other two expected nodes read the source", got)
	}
	run(n2)
	run(n3)
	want := redisstream.AssignShards(shards, []string{"n1", "n2", "n3"})
	testutil.WaitFor(t, 30*time.Second, func() error {
		if got := shardHolders(rc, "cdc", "joinery", shards); !slices.Equal(got, want) {
			return fmt.Errorf("leases %v, want %v", got, want)
		}
		return nil
	})
	testutil.WaitFor(t, 60*time.Second, allAcked(rc, shards))
	cancel()
	for i, done := range dones {
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("n%d run: %v", i+1, err)
		}
	}
}
