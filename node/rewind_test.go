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
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/sources"
)

// TestNodeRollbackRereadsStream is an operator's worst day with a
// Redis stream: the stream (and the hash view the job writes) live on one
// Redis, the state on another, which is snapshotted part-way and later
// killed -9 and restarted from the older snapshot — after the stream's
// group acknowledged the entries whose state was lost. The node stops on
// the rollback; restarted, its source moves the group back to the store's
// committed offset, the lost range is applied again, and the view ends
// equal to the true join. Then the stream is trimmed past a range the store
// loses again: the node stops with an error naming the source and the
// range, and counts it.
func TestNodeRollbackRereadsStream(t *testing.T) {
	in := testutil.StartRedis(t)
	state := testutil.StartRedis(t, "--dbfilename", "dump.rdb")
	h := cdcgen.Generate(cdcgen.Config{Seed: 23, Users: 20, Domains: 60, Changes: 900})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer rc.Close()
	sc := redis.NewClient(&redis.Options{Addr: state.Addr})
	defer sc.Close()
	dir := t.TempDir()
	yml := "name: rewind\n" + joinYAML + fmt.Sprintf(`
state: {store: redis, redis: {addr: %[2]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: redis-hash, redis: {addr: %[1]q}, key: view}]
`, in.Addr, state.Addr)
	third := len(h.Lines) / 3
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
	runNode := func() (*node.Node, context.CancelFunc, chan error) {
		n := start(t, parse(t, dir, yml))
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- n.Run(rctx) }()
		return n, cancel, done
	}

	xadd(t, rc, "cdc", h.Lines[:third])
	n1, cancel1, done1 := runNode()
	testutil.WaitFor(t, 60*time.Second, acked(int64(third)))
	if err := sc.Save(ctx).Err(); err != nil { // the snapshot the restart goes back to
		t.Fatal(err)
	}
	xadd(t, rc, "cdc", h.Lines[third:2*third])
	testutil.WaitFor(t, 60*time.Second, acked(int64(2*third)))
	state.Kill()
	state.Start() // from the snapshot: the second third's state is gone, its entries acknowledged
	xadd(t, rc, "cdc", h.Lines[2*third:])
	select {
	case err := <-done1:
		if !errors.Is(err, persistence.ErrRollback) {
			t.Fatalf("the node on the rolled-back store stopped with %v, want a rollback error", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the node did not stop on the rolled-back store")
	}
	cancel1()
	if err := n1.Close(ctx); err != nil {
		t.Fatal(err)
	}

	n2, cancel2, done2 := runNode()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if err := acked(int64(len(h.Lines)))(); err != nil {
			return err
		}
		if got, want := hashView(t, rc, "view"), h.LeftJoin(); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("view has %d rows, the join %d", len(got), len(want))
		}
		return nil
	})
	diff(t, "view after the rewind vs brute-force join", hashView(t, rc, "view"), h.LeftJoin())
	if got, min := n2.Stats().In.Load(), int64(len(h.Lines)-2*third+third); got < min {
		t.Errorf("the restarted node read %d entries, want at least %d (the lost third again, and the last)", got, min)
	}
	cancel2()
	if err := <-done2; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	if err := n2.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Lost for good: the store goes back again, and the stream was trimmed
	// past what it lost.
	if err := sc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	more := cdcgen.Generate(cdcgen.Config{Seed: 24, Users: 20, Domains: 60, Changes: 90}).Lines
	n3, cancel3, done3 := runNode()
	xadd(t, rc, "cdc", more)
	testutil.WaitFor(t, 60*time.Second, acked(int64(len(h.Lines)+len(more))))
	cancel3()
	<-done3
	if err := n3.Close(ctx); err != nil {
		t.Fatal(err)
	}
	state.Kill()
	state.Start()
	if err := rc.XTrimMaxLen(ctx, "cdc", 10).Err(); err != nil {
		t.Fatal(err)
	}
	n4, cancel4, done4 := runNode()
	defer cancel4()
	var err error
	select {
	case err = <-done4:
	case <-time.After(60 * time.Second):
		t.Fatal("the node did not stop on the lost range")
	}
	if !errors.Is(err, sources.ErrLostRange) || !strings.Contains(err.Error(), "cdc") {
		t.Fatalf("the node stopped with %v, want the source's lost range", err)
	}
	t.Log(err)
	rec := httptest.NewRecorder()
	n4.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `joinery_source_lost_ranges_total{job="rewind",source="cdc"} 1`) {
		t.Errorf("metrics lack joinery_source_lost_ranges_total 1:\n%s", grepLines(rec.Body.String(), "lost_ranges"))
	}
}
