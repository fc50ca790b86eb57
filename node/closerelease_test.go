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
	"testing"
	"time"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
)

// heapAfterGC is the heap in use once two collections freed what they could.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestNodeCloseReleases starts nodes, runs a join on them and closes them,
// several times, and checks that a closed node leaves nothing running and
// no heap behind it.
func TestNodeCloseReleases(t *testing.T) {
	rs := testutil.StartRedis(t)
	dir := t.TempDir()
	h := cdcgen.Generate(cdcgen.Config{Seed: 3, Users: 2000, Domains: 6000, Changes: 20000})
	writeLines(t, filepath.Join(dir, "in.jsonl"), h.Lines)
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
	cycles := []struct {
		name string
		run  func(i int)
	}{
		{"embedded", func(i int) {
			n := startNode(fmt.Sprintf("name: rel%d\n", i) + joinYAML + fmt.Sprintf("state: {path: st%d}\n", i) + src)
			runNode(n)
			_ = n.Close(context.Background())
		}},
		{"redis", func(i int) {
			n := startNode(fmt.Sprintf("name: rel%d\n", i) + joinYAML + redis + src)
			runNode(n)
			_ = n.Close(context.Background())
		}},
		{"cluster", func(i int) {
			base := fmt.Sprintf("name: rel%d\n", i) + joinYAML + redis
			n1 := startNode(base + src + "cluster: {node_name: n1}\n")
			n2 := startNode(base + fmt.Sprintf("cluster: {node_name: n2, seeds: [%q]}\n", n1.GossipAddr()))
			testutil.WaitFor(t, 30*time.Second, seesAlive(n1, 2))
			testutil.WaitFor(t, 30*time.Second, seesAlive(n2, 2))
			runNode(n1)
			_ = n2.Close(context.Background())
			_ = n1.Close(context.Background())
		}},
	}
	const rounds = 3
	for _, c := range cycles {
		t.Run(c.name, func(t *testing.T) {
			c.run(0) // warm: first use of package-level pools and caches
			g0, h0 := runtime.NumGoroutine(), heapAfterGC()
			for i := 1; i <= rounds; i++ {
				c.run(i)
			}
			if d, err := time.ParseDuration(os.Getenv("JOINERY_RELEASE_WAIT")); err == nil {
				time.Sleep(d)
			}
			g1, h1 := runtime.NumGoroutine(), heapAfterGC()
			t.Logf("%s: goroutines %d -> %d, heap in use %.1f -> %.1f MiB (%.1f MiB a cycle)", c.name, g0, g1,
				float64(h0)/(1<<20), float64(h1)/(1<<20), (float64(h1)-float64(h0))/(1<<20)/rounds)
			if os.Getenv("JOINERY_RELEASE_DUMP") != "" {
				_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
				f, _ := os.Create(filepath.Join(os.Getenv("JOINERY_RELEASE_DUMP"), c.name+".heap"))
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
		})
	}
}
