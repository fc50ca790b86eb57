package node_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources/redisstream"
)

// TestNodeLineageStoreRestartedEmpty is the rollback that no running
// node sees: the state Redis is flushed (restarted empty) while no node
// runs, so the node started next sees only the new incarnation, and the
// store has no offsets to rewind to. The stream's group carries the
// lineage its last commit was made under: the fresh node finds the store
// behind it, counts the rollback, reads the stream again from its
// beginning, and the view ends equal to the true join.
func TestNodeLineageStoreRestartedEmpty(t *testing.T) {
	in := testutil.StartRedis(t)
	state := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 31, Users: 20, Domains: 60, Changes: 900})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer rc.Close()
	sc := redis.NewClient(&redis.Options{Addr: state.Addr})
	defer sc.Close()
	dir := t.TempDir()
	yml := "name: lineage\n" + joinYAML + fmt.Sprintf(`
state: {store: redis, redis: {addr: %[2]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: redis-hash, redis: {addr: %[1]q}, key: view}]
`, in.Addr, state.Addr)
	half := len(h.Lines) / 2
	acked := func(n int64) func() error {
		return func() error {
			g, err := rc.XInfoGroups(ctx, "cdc").Result()
			if err != nil || len(g) != 1 {
				return fmt.Errorf("groups %v %v", g, err)
			}
			if p := rc.XPending(ctx, "cdc", "joinery").Val(); g[0].EntriesRead != n || p.Count != 0 {
				return fmt.Errorf("read %d of %d, %d pending", g[0].EntriesRead, n, p.Count)
			}
			return nil
		}
	}

	xadd(t, rc, "cdc", h.Lines[:half])
	n1 := start(t, parse(t, dir, yml))
	rctx, cancel1 := context.WithCancel(ctx)
	done1 := make(chan error, 1)
	go func() { done1 <- n1.Run(rctx) }()
	testutil.WaitFor(t, 60*time.Second, acked(int64(half)))
	cancel1()
	if err := <-done1; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	if err := n1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if l := rc.Get(ctx, redisstream.LineageKey("cdc", "joinery")).Val(); l == "" {
		t.Fatal("the stream's group carries no lineage after the first node's commits")
	}

	// The state Redis loses everything while no node runs.
	if err := sc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	xadd(t, rc, "cdc", h.Lines[half:])
	n2 := start(t, parse(t, dir, yml))
	rctx2, cancel2 := context.WithCancel(ctx)
	done2 := make(chan error, 1)
	go func() { done2 <- n2.Run(rctx2) }()
	testutil.WaitFor(t, 90*time.Second, func() error {
		select {
		case err := <-done2:
			t.Fatalf("the fresh node stopped: %v", err)
		default:
		}
		if got, want := hashView(t, rc, "view"), h.LeftJoin(); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("view has %d rows, the join %d", len(got), len(want))
		}
		return nil
	})
	diff(t, "view after the store restarted empty vs brute-force join", hashView(t, rc, "view"), h.LeftJoin())
	if got := n2.Stats().In.Load(); got < int64(len(h.Lines)) {
		t.Errorf("the fresh node read %d entries, want every one of the %d again", got, len(h.Lines))
	}
	rec := httptest.NewRecorder()
	n2.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `joinery_store_rollbacks_total{job="lineage"} 1`) {
		t.Errorf("metrics lack joinery_store_rollbacks_total 1:\n%s", grepLines(rec.Body.String(), "rollbacks"))
	}
	cancel2()
	if err := <-done2; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
}
