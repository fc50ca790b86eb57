package node_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/redisstore"
	"github.com/joinery/joinery/record"
)

// TestNodeStopsOnStoreRollback is a store rollback at node level: the
// state Redis is snapshotted (SAVE) part-way, the node goes on committing,
// then Redis is killed -9 and restarts from the older RDB file. The node's
// next run must stop with a *persistence.RollbackError (not retried for
// minutes, not going on), count it in joinery_store_rollbacks_total, and
// commit nothing onto the rolled-back store; a node started afresh then
// resumes from the store's committed offsets, re-reading the lost range.
func TestNodeStopsOnStoreRollback(t *testing.T) {
	rs := testutil.StartRedis(t, "--dbfilename", "dump.rdb")
	h := cdcgen.Generate(cdcgen.Config{Seed: 17, Users: 20, Domains: 60, Changes: 600})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	third := len(h.Lines) / 3
	yml := "name: rollback\n" + joinYAML + fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", rs.Addr) + `
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: file, path: out.jsonl, format: changelog}]
`
	ctx := context.Background()
	raw := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer raw.Close()
	st, err := redisstore.New(ctx, redisstore.Config{Options: redisopts.Options{Addr: rs.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	committed := func() int64 {
		t.Helper()
		o, err := st.CommittedOffsets(ctx, "rollback")
		if err != nil {
			t.Fatal(err)
		}
		return o[record.Position{Source: "cdc"}.PartitionID()]
	}

	writeLines(t, in, h.Lines[:third])
	n := start(t, parse(t, dir, yml))
	run(t, n)
	if err := raw.Save(ctx).Err(); err != nil { // the snapshot the restart goes back to
		t.Fatal(err)
	}
	atSnapshot := committed()
	writeLines(t, in, h.Lines[third:2*third])
	run(t, n)
	if c := committed(); c <= atSnapshot {
		t.Fatalf("committed offset %d after the second run, want past the snapshot's %d", c, atSnapshot)
	}

	rs.Kill()
	rs.Start()
	if c := committed(); c != atSnapshot {
		t.Fatalf("committed offset after the restore = %d, want the snapshot's %d", c, atSnapshot)
	}
	writeLines(t, in, h.Lines[2*third:])
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	began := time.Now()
	err = n.Run(rctx)
	var re *persistence.RollbackError
	if !errors.As(err, &re) {
		t.Fatalf("Run on the rolled-back store = %v, want a *persistence.RollbackError", err)
	}
	if re.Job != "rollback" || re.Found.Incarnation != re.Seen.Incarnation || re.Found.Seq >= re.Seen.Seq {
		t.Fatalf("RollbackError = %+v, want the same incarnation with a lower seq", re)
	}
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("Run took %s to stop: the rollback must not be retried", d)
	}
	if c := committed(); c != atSnapshot {
		t.Fatalf("committed offset after the refused run = %d, want still %d", c, atSnapshot)
	}
	rec := httptest.NewRecorder()
	n.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `joinery_store_rollbacks_total{job="rollback"} 1`) {
		t.Errorf("metrics lack joinery_store_rollbacks_total 1:\n%s", grepLines(rec.Body.String(), "rollbacks"))
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// A node started afresh takes the store as it is (re-founded) and
	// resumes after its committed offset: the lost range is read again.
	again := start(t, parse(t, dir, yml))
	run(t, again)
	if got, want := again.Stats().In.Load(), int64(len(h.Lines))-atSnapshot; got != want {
		t.Errorf("restarted node read %d records, want %d (from the store's committed offset %d)", got, want, atSnapshot)
	}
	if c := committed(); c != int64(len(h.Lines)) {
		t.Errorf("committed offset after the restart = %d, want %d", c, len(h.Lines))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestNodeStopsPromptlyOnRollbackUnderLoad: the state Redis goes back to an
// older snapshot while the node applies a Redis stream that is still being
// fed, with keys passivating after 50 ms (so keys activate afresh and load
// from the rolled-back store, whose loads are refused). Run must return
// and Close end within seconds. (The ~32 s exit seen in
// TestChaosStoreRollbackUnderLoad came from keys that never answered:
// actors.TestKeyActorStopAnswersQueuedRequests reproduces that; this test
// does not hit it reliably, it bounds the whole stop.)
func TestNodeStopsPromptlyOnRollbackUnderLoad(t *testing.T) {
	in := testutil.StartRedis(t)
	state := testutil.StartRedis(t, "--dbfilename", "dump.rdb", "--save", "")
	h := cdcgen.Generate(cdcgen.Config{Seed: 2501, Users: 300, Domains: 900, Changes: 8000})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer rc.Close()
	sc := redis.NewClient(&redis.Options{Addr: state.Addr})
	defer sc.Close()
	dir := t.TempDir()
	yml := "name: prompt\n" + joinYAML + fmt.Sprintf(`
state: {store: redis, passivate_after: 50ms, redis: {addr: %[2]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: file, path: out.jsonl, format: changelog}]
`, in.Addr, state.Addr)
	third := len(h.Lines) / 3
	xadd(t, rc, "cdc", h.Lines[:third])
	n := start(t, parse(t, dir, yml))
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- n.Run(rctx) }()
	testutil.WaitFor(t, time.Minute, func() error {
		g, err := rc.XInfoGroups(ctx, "cdc").Result()
		if err != nil || len(g) != 1 {
			return fmt.Errorf("groups %v %v", g, err)
		}
		if p := rc.XPending(ctx, "cdc", "joinery").Val(); g[0].EntriesRead < int64(third) || p.Count != 0 {
			return fmt.Errorf("read %d of %d, %d pending", g[0].EntriesRead, third, p.Count)
		}
		return nil
	})
	if err := sc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	stopFeed := make(chan struct{})
	fed := make(chan struct{})
	go func() { // 100 entries every 20 ms
		defer close(fed)
		for i := third; i < len(h.Lines); i += 100 {
			select {
			case <-stopFeed:
				return
			case <-time.After(20 * time.Millisecond):
			}
			xadd(t, rc, "cdc", h.Lines[i:min(i+100, len(h.Lines))])
		}
	}()
	defer func() { close(stopFeed); <-fed }()
	time.Sleep(time.Second) // the node busy with the fed entries
	state.Kill()
	state.Start()
	restarted := time.Now()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the node did not stop on the rolled-back store")
	}
	stopped := time.Since(restarted)
	if !errors.Is(err, persistence.ErrRollback) {
		t.Fatalf("Run on the rolled-back store = %v, want a rollback error", err)
	}
	began := time.Now()
	if err := n.Close(ctx); err != nil {
		t.Logf("close: %v", err)
	}
	closed := time.Since(began)
	t.Logf("Run returned %s after the state Redis restarted from the snapshot; Close took %s", stopped, closed)
	if stopped > 8*time.Second || closed > 5*time.Second {
		t.Errorf("the node took %s to stop and %s to close on a rolled-back store, want a few seconds each", stopped, closed)
	}
}
