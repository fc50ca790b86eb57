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

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/redisstore"
	"github.com/joinery/joinery/record"
)

// TestNodeStopsOnStoreRollback is issue 17's failure at node level: the
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
	st, err := redisstore.New(ctx, redisstore.Config{Addr: rs.Addr})
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
