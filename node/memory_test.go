package node_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/testutil"
)

// TestNodeMemoryBoundedByPassivation touches many distinct keys once each
// (one users insert per key) with state in Redis and a short idle timeout:
// the node's live keys and heap must stay bounded by the passivation
// setting, not grow with the keys ever seen. JOINERY_MEMORY_KEYS sets the
// number of keys (CI: 100,000; the figure: 1,000,000). The figures
// are logged: keys seen, most keys live at once, heap in use at each
// quarter of the input, and heap bytes per live key.
func TestNodeMemoryBoundedByPassivation(t *testing.T) {
	keys := 100000
	if v, err := strconv.Atoi(os.Getenv("JOINERY_MEMORY_KEYS")); err == nil && v > 0 {
		keys = v
	}
	rs := testutil.StartRedis(t)
	dir := t.TempDir()
	writeUsers(t, filepath.Join(dir, "users.jsonl"), keys)
	n := start(t, parse(t, dir, "name: memory\n"+joinYAML+fmt.Sprintf(`
state: {store: redis, redis: {addr: %q}, passivate_after: 200ms}
sources: [{name: cdc, type: file, path: users.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: file, path: /dev/null}]
`, rs.Addr)))
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		done <- n.Run(ctx)
	}()
	var heapAt [4]uint64 // heap in use after GC when a quarter, half, ... of the input was read
	var maxLive int64
	next := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var ms runtime.MemStats
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			running = false
		case <-tick.C:
		}
		maxLive = max(maxLive, n.Stats().ActiveKeys())
		for next < 4 && (n.Stats().In.Load() >= int64(keys*(next+1)/4) || !running) {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heapAt[next] = ms.HeapInuse
			next++
		}
	}
	live := max(n.Stats().ActiveKeys(), 1)
	t.Logf("%d keys seen, at most %d live at once (passivate_after 200ms), %d live at the end", keys, maxLive, n.Stats().ActiveKeys())
	t.Logf("heap in use after GC at 25/50/75/100%% of the input: %.1f / %.1f / %.1f / %.1f MiB",
		mib(heapAt[0]), mib(heapAt[1]), mib(heapAt[2]), mib(heapAt[3]))
	t.Logf("heap per live key at the end: %d B; per key ever seen: %d B", heapAt[3]/uint64(live), heapAt[3]/uint64(keys))
	if maxLive > int64(keys)/4 {
		t.Errorf("%d keys live at once of %d seen: passivation does not bound them", maxLive, keys)
	}
	// Memory follows the live keys: reading the last three quarters of the
	// keys must not grow the heap in proportion (2× plus 16 MiB of slack for
	// GC timing and buffers).
	if heapAt[3] > 2*heapAt[0]+16<<20 {
		t.Errorf("heap grew from %.1f MiB at 25%% to %.1f MiB at 100%% of %d keys: it tracks keys seen, not live keys",
			mib(heapAt[0]), mib(heapAt[3]), keys)
	}
}

// TestNodeMemoryLiveKeys keeps every key live (no passivation, no memory
// budget): the heap then grows with the keys, and the figure that matters
// is the bytes per live key, what users size pods by (the target: <= 2.5 KB
// of heap per live key with Redis state at 1M keys). JOINERY_LIVE_KEYS sets
// the number of keys (CI: 50,000); JOINERY_LIVE_KEYS_STORE=redis keeps the
// state in a real redis-server (the production setting, no copy of the
// state in the node's heap) instead of the embedded store. Logged: heap and
// RSS after GC and "N B per live key"; JOINERY_HEAP_PROFILE=FILE writes a
// heap profile at the end (see docs/performance/2026-12-05-bench.md, "Bytes per live key").
func TestNodeMemoryLiveKeys(t *testing.T) {
	keys := 50000
	if v, err := strconv.Atoi(os.Getenv("JOINERY_LIVE_KEYS")); err == nil && v > 0 {
		keys = v
	}
	state := "state: {memory_budget: \"0\"}\n"
	switch store := os.Getenv("JOINERY_LIVE_KEYS_STORE"); store {
	case "", "embedded":
	case "redis":
		state = fmt.Sprintf("state: {store: redis, redis: {addr: %q}, memory_budget: \"0\"}\n", testutil.StartRedis(t).Addr)
	default:
		t.Fatalf("JOINERY_LIVE_KEYS_STORE=%q: want embedded or redis", store)
	}
	dir := t.TempDir()
	writeUsers(t, filepath.Join(dir, "users.jsonl"), keys)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := start(t, parse(t, dir, "name: livekeys\n"+joinYAML+state+`
sources: [{name: cdc, type: file, path: users.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: file, path: /dev/null}]
`))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := n.Run(ctx); err != nil {
		t.Fatalf("run: %v", err)
	}
	live := n.Stats().ActiveKeys()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if p := os.Getenv("JOINERY_HEAP_PROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	// HeapInuse is what the pod holds (live objects and the free slots of
	// their spans); HeapAlloc after GC is the live objects alone.
	heap := int64(after.HeapInuse) - int64(before.HeapInuse)
	alloc := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d keys, %d live at the end; heap in use after GC grew by %.1f MiB (live objects %.1f MiB, %d B per key); RSS %s",
		keys, live, mib(uint64(max(heap, 0))), mib(uint64(max(alloc, 0))), alloc/max(live, 1), rss())
	t.Logf("%d B per live key", heap/max(live, 1))
	if live < int64(keys) {
		t.Errorf("only %d of %d keys live without passivation", live, keys)
	}
}

// rss reads this process's resident set size from /proc (Linux), or "?".
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:"))
		}
	}
	return "?"
}

// writeUsers writes a Debezium file of n users inserts, ids 1..n: n keys.
func writeUsers(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, `{"before":null,"after":{"id":%d,"firstname":"f%d","lastname":"l"},"op":"c","source":{"table":"users"}}`+"\n", i, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
