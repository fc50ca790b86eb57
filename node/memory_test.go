package node_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
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
	f, err := os.Create(filepath.Join(dir, "users.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := 1; i <= keys; i++ {
		fmt.Fprintf(w, `{"before":null,"after":{"id":%d,"firstname":"f%d","lastname":"l"},"op":"c","source":{"table":"users"}}`+"\n", i, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
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

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
