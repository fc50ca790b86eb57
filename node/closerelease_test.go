package node_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
)

// TestNodeCloseReleases starts nodes, runs a join on them and closes them
// (embedded state, Redis state, a 2-node cluster; twice each), then checks
// that the closed nodes left no goroutine running (none of theirs that
// was not running before) and their heap freed.
//
// protoactor keeps a closed node reachable for up to a minute: the
// Gossiper's throttle (protoactor's actor/throttler.go) runs a goroutine
// for 60 s from the first gossip state change of a period, Cluster.Shutdown
// makes one, and that goroutine holds the Gossiper, so the cluster, its
// actor system and everything the key actors refer to. So the test waits up
// to 90 s for the heap to come back; a node whose state something of ours
// keeps (before: the bare Props registry, actors/bare.go) never does.
//
// Measured (2 cores shared with other test runs): a closed node of this
// job keeps ≈ 15 MiB (its actor system's process registry, 6.5 MiB of it
// protoactor's 1024-shard map, its key actors' state, the table sink's rows,
// the write-behind batcher); 8 closed nodes ≈ 120 MiB. Once freed, the heap
// is back within a few MiB of where it was; the bound, 24 MiB over the
// start, leaves room for what is allocated once per process (protobuf and
// Prometheus registries, the key actors' shared dispatcher) and fails if
// more than one node of the eight stays.
func TestNodeCloseReleases(t *testing.T) {
	rs := testutil.StartRedis(t)
	dir := t.TempDir()
	h := cdcgen.Generate(cdcgen.Config{Seed: 3, Users: 2000, Domains: 6000, Changes: 20000})
	writeLines(t, filepath.Join(dir, "in.jsonl"), h.Lines)
	heap0, goroutines0 := heapAfterGC(), goroutineCounts()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	src := "sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]\nsinks: [{type: table}]\n"
	redis := fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", rs.Addr)
	startNode := func(yml string) *node.Node {
		n, err := node.Start(context.Background(), parse(t, dir, yml), node.Options{Logger: quiet, Stdout: io.Discard})
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		return n
	}
	runNode := func(n *node.Node) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := n.Run(ctx); err != nil {
			t.Fatalf("run: %v", err)
		}
		if len(n.Table()) == 0 {
			t.Fatal("the join produced no rows")
		}
	}
	closeNode := func(n *node.Node) {
		if err := n.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	cycles := []struct {
		name string
		run  func(job string)
	}{
		{"embedded", func(job string) {
			n := startNode("name: " + job + "\n" + joinYAML + "state: {path: " + job + "}\n" + src)
			runNode(n)
			closeNode(n)
		}},
		{"redis", func(job string) {
			n := startNode("name: " + job + "\n" + joinYAML + redis + src)
			runNode(n)
			closeNode(n)
		}},
		{"cluster", func(job string) {
			base := "name: " + job + "\n" + joinYAML + redis
			n1 := startNode(base + src + "cluster: {node_name: n1}\n")
			n2 := startNode(base + fmt.Sprintf("cluster: {node_name: n2, seeds: [%q]}\n", n1.GossipAddr()))
			testutil.WaitFor(t, 30*time.Second, seesAlive(n1, 2))
			testutil.WaitFor(t, 30*time.Second, seesAlive(n2, 2))
			runNode(n1)
			closeNode(n2)
			closeNode(n1)
		}},
	}
	for round := range 2 {
		for _, c := range cycles {
			c.run(fmt.Sprintf("release-%s-%d", c.name, round))
		}
	}
	closed := time.Now()
	const slack = 24 << 20
	var heap uint64
	var left []string
	atClose := -1
	for {
		heap, left = heapAfterGC(), nodeGoroutines(goroutines0)
		if atClose < 0 {
			atClose = len(left) // protoactor's throttles at least: the check sees them
		}
		if (heap <= heap0+slack && len(left) == 0) || time.Since(closed) > 90*time.Second {
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("after closing 8 nodes: heap in use %.1f MiB (%.1f at the start), %d node goroutines (%d at the last Close), %s after the last Close",
		mib(heap), mib(heap0), len(left), atClose, time.Since(closed).Round(time.Second))
	if d := os.Getenv("JOINERY_RELEASE_DUMP"); d != "" {
		if f, err := os.Create(filepath.Join(d, "release.heap")); err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	if len(left) > 0 {
		t.Errorf("closed nodes left %d goroutines running:\n%s", len(left), strings.Join(left, "\n\n"))
	}
	if heap > heap0+slack {
		t.Errorf("closed nodes kept %.1f MiB of heap in use 90 s after the last Close, want ≤ %.0f MiB (JOINERY_RELEASE_DUMP=dir writes a heap profile)",
			mib(heap-heap0), mib(slack))
	}
}

// heapAfterGC is the heap in use once two collections freed what they could.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// nodeGoroutines are the stacks of the goroutines running code of a node
// or of its libraries (protoactor, memberlist, go-redis), but for the key
// actors' dispatcher, one pool for the process (actors/dispatcher.go), and
// for as many of each stack as were running in before (earlier tests').
func nodeGoroutines(before map[string]int) []string {
	var left []string
	seen := map[string]int{}
	for _, g := range goroutineStacks() {
		// The test's own (node_test, and testutil's redis-server watcher,
		// whose stack changes as it goes from its start to its wait, so the
		// count before cannot match it) and the shared dispatcher.
		if strings.Contains(g, "node_test.") || strings.Contains(g, "internal/testutil.") || strings.Contains(g, "warmDispatcher).worker") {
			continue
		}
		k := stackKey(g)
		if seen[k]++; seen[k] <= before[k] {
			continue
		}
		for _, lib := range []string{"github.com/joinery/joinery/", "protoactor-go", "hashicorp/memberlist", "go-redis"} {
			if strings.Contains(g, lib) {
				left = append(left, g)
				break
			}
		}
	}
	return left
}

// goroutineCounts counts the running goroutines by stack (stackKey).
func goroutineCounts() map[string]int {
	m := map[string]int{}
	for _, g := range goroutineStacks() {
		m[stackKey(g)]++
	}
	return m
}

// goroutineStacks are the stacks of all goroutines (runtime.Stack).
func goroutineStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// stackKey is a goroutine's stack without its id, state, arguments and
// offsets: the functions it is in.
func stackKey(g string) string {
	var fns []string
	for i, l := range strings.Split(g, "\n") {
		if i == 0 || strings.HasPrefix(l, "\t") {
			continue
		}
		if j := strings.LastIndexByte(l, '('); j > 0 {
			l = l[:j]
		}
		l, _, _ = strings.Cut(l, " in goroutine ") // "created by f in goroutine 12"
		fns = append(fns, l)
	}
	return strings.Join(fns, "\n")
}
