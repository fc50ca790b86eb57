package node_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/sources/redisstream"
)

// xaddByJoinKey appends Debezium lines to the shard streams of stream as a
// producer partitioning by the join key does (cdcgen.ByJoinKey: users by
// id, domains by user_id; an update moving a domain to another user is a
// delete in the old user's shard and a create in the new one's).
func xaddByJoinKey(t *testing.T, rc *redis.Client, stream string, shards int, lines [][]byte) {
	t.Helper()
	keyed, err := cdcgen.ByJoinKey(lines, map[string]string{"users": "id", "domains": "user_id"})
	if err != nil {
		t.Fatal(err)
	}
	p := rc.Pipeline()
	for _, k := range keyed {
		p.XAdd(context.Background(), &redis.XAddArgs{Stream: redisstream.ShardStream(stream, redisstream.ShardOf(k.Key, shards)),
			Values: map[string]any{streamshard.ValueField: string(k.Line)}})
	}
	if _, err := p.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// keyRequests is a node's joinery_key_requests_total{where} (0 before any).
func keyRequests(t *testing.T, n *node.Node, where string) float64 {
	return max(0, metricValue(t, n, "joinery_key_requests_total", `where="`+where+`"`))
}

// TestClusterCoPartitionedShards runs three nodes over real memberlist and
// protoactor remoting on 8 shard streams partitioned by the join key
// (partitioned_by: join_key): the key actors of a shard's keys live on
// the node that reads the shard, so once the leases have settled no event
// goes to another node — every node's joinery_key_requests_total{where=
// "remote"} stays put while each reads and applies locally — the admin's
// key location names the reader of the key's shard, and the Redis hash view
// equals the brute-force join (domains moving between users included).
func TestClusterCoPartitionedShards(t *testing.T) {
	const shards = 8
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 43, Users: 40, Domains: 120, Changes: 3000})
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	half := len(h.Lines) / 2
	dir := t.TempDir()
	yml := "name: copart\n" + joinYAML + fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, shards: %[2]d, partitioned_by: join_key, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: redis-hash, redis: {addr: %[1]q}, key: view}]
admin: {addr: "127.0.0.1:0"}
`, rs.Addr, shards)
	nodes := startThree(t, dir, yml)
	xaddByJoinKey(t, rc, "cdc", shards, h.Lines[:half])
	runAll(t, nodes)
	// The leases settle as streamshard.Assign spreads them (3, 3, 2).
	want := streamshard.Assign(shards, []string{"n1", "n2", "n3"})
	testutil.WaitFor(t, 60*time.Second, func() error {
		if got := shardHolders(rc, "cdc", "joinery", shards); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("leases %v, want %v", got, want)
		}
		return nil
	})
	testutil.WaitFor(t, 90*time.Second, allAcked(rc, shards))
	t.Logf("leases: %v", shardHolders(rc, "cdc", "joinery", shards))

	// Steady state: the rest of the input is read and applied where its
	// keys live.
	allLocal(t, nodes, func() { xaddByJoinKey(t, rc, "cdc", shards, h.Lines[half:]) }, allAcked(rc, shards))
	testutil.WaitFor(t, 30*time.Second, func() error {
		if got, want := hashView(t, rc, "view"), h.LeftJoin(); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("view has %d rows, want %d", len(got), len(want))
		}
		return nil
	})
	diff(t, "co-partitioned view vs brute-force join", hashView(t, rc, "view"), h.LeftJoin())

	// The admin's key location is the reader of the key's shard.
	locatedAtGroupOwner(t, nodes, "copart", 40, want, func(key string) int { return streamshard.KeyGroup(key, shards) })
}

// startThree starts nodes n1, n2 and n3 of the job yml (with no cluster:
// section; n2 and n3 seeded by n1) and waits until each sees all three.
func startThree(t *testing.T, dir, yml string) []*node.Node {
	t.Helper()
	n1 := start(t, parse(t, dir, yml+"cluster: {node_name: n1}\n"))
	seeds := fmt.Sprintf("cluster: {node_name: %%s, seeds: [%q]}\n", n1.GossipAddr())
	nodes := []*node.Node{n1, start(t, parse(t, dir, yml+fmt.Sprintf(seeds, "n2"))), start(t, parse(t, dir, yml+fmt.Sprintf(seeds, "n3")))}
	for _, n := range nodes {
		testutil.WaitFor(t, 30*time.Second, seesAlive(n, len(nodes)))
	}
	return nodes
}

// runAll runs every node until the test ends, or until stop(i) stops node
// i; a run that fails otherwise than by being stopped fails the test.
func runAll(t *testing.T, nodes []*node.Node) (stop func(i int)) {
	t.Helper()
	dones := make([]chan error, len(nodes))
	cancels := make([]context.CancelFunc, len(nodes))
	stopped := make([]sync.Once, len(nodes))
	for i, n := range nodes {
		runCtx, cancel := context.WithCancel(context.Background())
		cancels[i], dones[i] = cancel, make(chan error, 1)
		go func() { dones[i] <- n.Run(runCtx) }()
	}
	stop = func(i int) {
		stopped[i].Do(func() {
			cancels[i]()
			if err := <-dones[i]; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("n%d run: %v", i+1, err)
			}
		})
	}
	t.Cleanup(func() {
		for i := range nodes {
			stop(i)
		}
	})
	return stop
}

// allLocal runs feed and waits until done passes; meanwhile no node may
// send a key request to another (joinery_key_requests_total{where=
// "remote"} stays put) and each must apply some locally.
func allLocal(t *testing.T, nodes []*node.Node, feed func(), done func() error) {
	t.Helper()
	remote, local := make([]float64, len(nodes)), make([]float64, len(nodes))
	for i, n := range nodes {
		remote[i], local[i] = keyRequests(t, n, "remote"), keyRequests(t, n, "local")
	}
	feed()
	testutil.WaitFor(t, 90*time.Second, done)
	for i, n := range nodes {
		r, l := keyRequests(t, n, "remote"), keyRequests(t, n, "local")
		t.Logf("n%d: %v local and %v remote key requests in steady state (%v and %v before)", i+1, l-local[i], r-remote[i], local[i], remote[i])
		if r != remote[i] {
			t.Errorf("n%d sent %v key requests to other nodes in steady state, want 0", i+1, r-remote[i])
		}
		if l == local[i] {
			t.Errorf("n%d applied nothing locally in steady state", i+1)
		}
	}
}
