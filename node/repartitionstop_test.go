package node_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
)

// TestClusterRepartitionedGracefulStops runs three nodes on a
// repartitioned source (repartition: stream) with their state in a Redis
// Cluster, as the fleet benchmark does, and stops them one at a time as
// its teardown does (graceful: Run's context ends, then Close) while the
// others take the stopped node's raw and repartition shards over and read
// more input. The store's recovery offsets are its replay floors there,
// copied about once a second, so they lag the committed offsets: the
// repartition streams, trimmed as they are acknowledged, must keep what
// follows the floor, or the node taking a shard over finds the entries
// after its floor gone and stops with "the state store lost records the
// source no longer holds" though nothing was lost (docs/guides/producers.md,
// "Repartition streams and the replay floors"). No node stops with an
// error, no lost range is counted, and the view equals the brute-force
// join.
func TestClusterRepartitionedGracefulStops(t *testing.T) {
	const shards = 8
	rs := testutil.StartRedis(t)
	state := testutil.StartRedisCluster(t, 3)
	h := cdcgen.Generate(cdcgen.Config{Seed: 53, Users: 40, Domains: 120, Changes: 3000})
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	var addrs []string
	for _, a := range state.Addrs() {
		addrs = append(addrs, fmt.Sprintf("%q", a))
	}
	yml := "name: repstop\n" + joinYAML + fmt.Sprintf(`
state: {store: redis, redis: {cluster: {addrs: [%[3]s]}}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, shards: %[2]d, repartition: stream, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: redis-hash, redis: {addr: %[1]q}, key: view}]
`, rs.Addr, shards, strings.Join(addrs, ", "))
	nodes := startThree(t, t.TempDir(), yml)
	dones := make([]chan error, len(nodes))
	cancels := make([]context.CancelFunc, len(nodes))
	for i, n := range nodes {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[i], dones[i] = cancel, make(chan error, 1)
		go func() { dones[i] <- n.Run(ctx) }()
	}
	stopped := make([]bool, len(nodes))
	t.Cleanup(func() {
		for i := range nodes {
			if !stopped[i] {
				cancels[i]()
				<-dones[i]
			}
		}
	})
	// running fails the test at once when a node that was not stopped
	// returned from Run.
	running := func() {
		t.Helper()
		for i := range nodes {
			if stopped[i] {
				continue
			}
			select {
			case err := <-dones[i]:
				stopped[i] = true
				t.Fatalf("n%d stopped by itself: %v", i+1, err)
			default:
			}
		}
	}
	repart := streamshard.RepartitionStream("cdc", "joinery")
	acked := func() error {
		running()
		if err := allAckedOf(rc, "cdc", shards)(); err != nil {
			return err
		}
		return allAckedOf(rc, repart, shards)()
	}
	// The input comes in three parts: one with three nodes running, one
	// after n3 stopped, one after n2 stopped too.
	third := len(h.Lines) / 3
	parts := [][][]byte{h.Lines[:third], h.Lines[third : 2*third], h.Lines[2*third:]}
	for k, part := range parts {
		if k > 0 {
			i := len(nodes) - k // n3, then n2
			cancels[i]()
			if err := <-dones[i]; err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("n%d run: %v", i+1, err)
			}
			stopped[i] = true
			if err := nodes[i].Close(context.Background()); err != nil {
				t.Fatalf("n%d close: %v", i+1, err)
			}
		}
		xaddSharded(t, rc, "cdc", shards, part)
		testutil.WaitFor(t, 90*time.Second, acked)
		t.Logf("part %d applied by %d nodes: raw leases %v, repartition leases %v", k+1, len(nodes)-k,
			shardHolders(rc, "cdc", "joinery", shards), shardHolders(rc, repart, "joinery", shards))
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		running()
		if got, want := hashView(t, rc, "view"), h.LeftJoin(); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("view has %d rows, want %d", len(got), len(want))
		}
		return nil
	})
	diff(t, "view after graceful stops vs brute-force join", hashView(t, rc, "view"), h.LeftJoin())
	// -1: no series, none counted.
	if got := metricValue(t, nodes[0], "joinery_source_lost_ranges_total", `source="cdc:repart"`); got > 0 {
		t.Errorf("n1 counted %v lost ranges of cdc:repart, want 0", got)
	}
}
