package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources/redisstream"
)

// TestChaosStoreRollback is issue 17's operator's worst day: a node reads
// a Redis stream (on its own Redis, AOF always) into state on a second
// Redis without AOF. The state Redis is snapshotted (SAVE) part-way, goes
// on, and is later killed -9 and restarted from the older snapshot — what a
// failover to a lagging replica does — after the stream's group
// acknowledged the entries whose state was lost. The node must stop on the
// rollback; started again, it re-reads the lost range (its source moves the
// group back to the store's committed offset) and the changelog replays to
// the true join: 0 lost, no row under two ids. Then the same fault once
// more with the stream trimmed past the lost range: the restarted node
// stops with an error naming the source and the range, and goes no further.
// Both outcomes fail on a Joinery without the rewind (it resumed from the
// group's position: a third of the rows missing or wrong).
func TestChaosStoreRollback(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(1200 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { rollbackTrial(t, seed, trial, n) })
	}
}

func rollbackTrial(t *testing.T, seed uint64, trial, trials int) {
	r := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	t.Cleanup(func() { keepFiles(t, dir) })
	in := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	state := testutil.StartRedis(t, "--dbfilename", "dump.rdb", "--save", "")
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer rc.Close()
	sc := redis.NewClient(&redis.Options{Addr: state.Addr})
	defer sc.Close()
	h := cdcgen.Generate(cdcgen.Config{Seed: seed, Users: 300, Domains: 900, Changes: inputChanges})
	want := h.LeftJoin()
	xadd := func(lines [][]byte) {
		for i := 0; i < len(lines); i += 1000 {
			p := rc.Pipeline()
			for _, l := range lines[i:min(i+1000, len(lines))] {
				p.XAdd(ctx, &redis.XAddArgs{Stream: "cdc", Values: map[string]any{redisstream.ValueField: string(l)}})
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	acked := func(entries int64) func() error {
		return func() error {
			gs, err := rc.XInfoGroups(ctx, "cdc").Result()
			if err != nil || len(gs) != 1 {
				return fmt.Errorf("groups %v: %v", gs, err)
			}
			if g := gs[0]; g.EntriesRead < entries || g.Pending != 0 {
				return fmt.Errorf("%d of %d entries read, %d pending", g.EntriesRead, entries, g.Pending)
			}
			return nil
		}
	}
	job := jobYAML + fmt.Sprintf(`state: {store: redis, redis: {addr: %[2]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: file, path: out.jsonl, format: changelog}]
`, in.Addr, state.Addr)
	if err := os.WriteFile(filepath.Join(dir, "n1.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	nodeLog := func() []byte { b, _ := os.ReadFile(filepath.Join(dir, "n1.log")); return b }

	// Half the input, a snapshot a random moment into it, the rest; then
	// the rollback, once every entry is acknowledged.
	half := len(h.Lines) / 2
	xadd(h.Lines[:half])
	n1 := startProc(t, dir, "n1", "n1.yaml")
	waitLines(t, out, moment(r, 5000), time.Minute)
	if err := sc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	atSnapshot := lineCount(out)
	xadd(h.Lines[half:])
	testutil.WaitFor(t, scaled(3*time.Minute), acked(int64(len(h.Lines))))
	t.Logf("snapshot at %d output lines; every entry acknowledged at %d", atSnapshot, lineCount(out))
	state.Kill()
	state.Start()
	if err := n1.wait(scaled(time.Minute)); err == nil {
		t.Fatal("the node on the rolled-back store exited without an error")
	}
	if !bytes.Contains(nodeLog(), []byte("state store went back in time")) {
		t.Fatalf("the node did not report the rollback:\n%s", tail(nodeLog(), 2000))
	}
	rec := watchRecovery(out)
	n1 = startProc(t, dir, "n1", "n1.yaml")
	testutil.WaitFor(t, scaled(3*time.Minute), func() error {
		if err := acked(int64(len(h.Lines)))(); err != nil {
			return err
		}
		if got, _, _ := table(t, out); len(got) != len(want) {
			return fmt.Errorf("table has %d rows, want %d", len(got), len(want))
		}
		return nil
	})
	rt := rec.done()
	n1.term()
	row := summaryRow{Scenario: "StoreRollback", Trial: trial + 1, Trials: trials, EventsIn: inputChanges,
		RecoveryMS: ms(rt.first), MaxStallMS: -1}
	got, lines, dups := table(t, out)
	bad := compare(t, got, want)
	row.Outputs, row.Equal, row.Lost = lines, bad == 0, rowsLost(got, want)
	row.DupIDs, row.Fenced = dupOutputs(out), fencedWrites(dir)
	record1(row)
	t.Logf("after the rewind: changelog %d lines, %d repeated ids", lines, dups)
	if row.DupIDs > 0 {
		t.Errorf("%d rows written under two ids", row.DupIDs)
	}

	// Lost for good: a snapshot, more input, the rollback, and the stream
	// trimmed past the range the store loses.
	if err := sc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	more := cdcgen.Generate(cdcgen.Config{Seed: seed + 1, Users: 300, Domains: 900, Changes: 2000}).Lines
	n1 = startProc(t, dir, "n1", "n1.yaml")
	xadd(more)
	testutil.WaitFor(t, scaled(3*time.Minute), acked(int64(len(h.Lines)+len(more))))
	n1.term()
	state.Kill()
	state.Start()
	if err := rc.XTrimMaxLen(ctx, "cdc", 100).Err(); err != nil {
		t.Fatal(err)
	}
	n1 = startProc(t, dir, "n1", "n1.yaml")
	if err := n1.wait(scaled(time.Minute)); err == nil {
		t.Fatal("the node exited without an error on a lost range")
	}
	if log := nodeLog(); !bytes.Contains(log, []byte("the state store lost the entries of cdc (partition 0) after")) ||
		!bytes.Contains(log, []byte("trimmed every entry before")) {
		t.Fatalf("the node's log does not name the lost range:\n%s", tail(log, 2000))
	}
}
