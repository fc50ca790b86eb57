package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
)

// TestChaosStoreRollback is an operator's worst day: a node reads
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
	rig := &streamRig{t: t, rc: rc}
	xadd := rig.xadd
	job := jobYAML + fmt.Sprintf(`state: {store: redis, redis: {addr: %[2]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: file, path: out.jsonl, format: changelog}]
`, in.Addr, state.Addr)
	if err := os.WriteFile(filepath.Join(dir, "n1.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	nodeLog := func() []byte { b, _ := os.ReadFile(filepath.Join(dir, "n1.log")); return b }

	// A third of the input, a snapshot a random moment into it, the second
	// third; the rollback once every entry is acknowledged; the last third
	// after the restart, which joins right only if the lost state came back.
	third := len(h.Lines) / 3
	xadd(h.Lines[:third])
	n1 := startProc(t, dir, "n1", "n1.yaml")
	waitLines(t, out, moment(r, 3000), time.Minute)
	if err := sc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	atSnapshot := lineCount(out)
	xadd(h.Lines[third : 2*third])
	testutil.WaitFor(t, scaled(3*time.Minute), rig.acked)
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
	xadd(h.Lines[2*third:])
	waitLines(t, out, lineCount(out)+1, time.Minute)
	testutil.WaitFor(t, scaled(3*time.Minute), rig.acked)
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
	testutil.WaitFor(t, scaled(3*time.Minute), rig.acked)
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

// streamRig feeds a Redis stream "cdc" and watches its group "joinery".
type streamRig struct {
	t  *testing.T
	rc *redis.Client
}

func (g *streamRig) xadd(lines [][]byte) {
	g.t.Helper()
	ctx := context.Background()
	for i := 0; i < len(lines); i += 1000 {
		p := g.rc.Pipeline()
		for _, l := range lines[i:min(i+1000, len(lines))] {
			p.XAdd(ctx, &redis.XAddArgs{Stream: "cdc", Values: map[string]any{streamshard.ValueField: string(l)}})
		}
		if _, err := p.Exec(ctx); err != nil {
			g.t.Fatal(err)
		}
	}
}

// acked is done when the group delivered the stream's last entry and none
// is pending (a group moved back by a rewind delivers it again).
func (g *streamRig) acked() error {
	ctx := context.Background()
	last, err := g.rc.XRevRangeN(ctx, "cdc", "+", "-", 1).Result()
	if err != nil || len(last) == 0 {
		return fmt.Errorf("last entry: %v %v", last, err)
	}
	gs, err := g.rc.XInfoGroups(ctx, "cdc").Result()
	if err != nil || len(gs) != 1 {
		return fmt.Errorf("groups %v: %v", gs, err)
	}
	if gr := gs[0]; gr.LastDeliveredID != last[0].ID || gr.Pending != 0 {
		return fmt.Errorf("delivered up to %s of %s, %d pending", gr.LastDeliveredID, last[0].ID, gr.Pending)
	}
	return nil
}

// TestChaosReplicaFailover is the other way a store goes back in time: the
// state Redis has a replica, which stops taking the master's stream
// (SIGSTOP) while the node goes on; the master is killed -9 and the lagging
// replica promoted (REPLICAOF NO ONE), and the node is restarted against it
// (what a Sentinel or operator failover does). The replica lacks writes
// whose stream entries were acknowledged: the restarted node's source moves
// the group back to the replica's committed offsets, and the changelog
// replays to the true join with nothing lost.
func TestChaosReplicaFailover(t *testing.T) {
	seed := uint64(1300)
	r := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	t.Cleanup(func() { keepFiles(t, dir) })
	in := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	master := testutil.StartRedis(t, "--save", "")
	ctx := context.Background()
	replica := testutil.StartRedis(t, "--save", "", "--replicaof", strings.Replace(master.Addr, ":", " ", 1))
	rc := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer rc.Close()
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	pc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer pc.Close()
	rig := &streamRig{t: t, rc: rc}
	h := cdcgen.Generate(cdcgen.Config{Seed: seed, Users: 300, Domains: 900, Changes: inputChanges})
	want := h.LeftJoin()
	writeJob := func(stateAddr string) {
		job := jobYAML + fmt.Sprintf(`state: {store: redis, redis: {addr: %[2]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: file, path: out.jsonl, format: changelog}]
`, in.Addr, stateAddr)
		if err := os.WriteFile(filepath.Join(dir, "n1.yaml"), []byte(job), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out.jsonl")
	inSync := func() error {
		mi := mc.Info(ctx, "replication").Val()
		ri := pc.Info(ctx, "replication").Val()
		mo, ro := infoField(mi, "master_repl_offset"), infoField(ri, "master_repl_offset")
		if !strings.Contains(ri, "master_link_status:up") || mo == "" || mo != ro {
			return fmt.Errorf("replica at %s of %s", ro, mo)
		}
		return nil
	}

	writeJob(master.Addr)
	third := len(h.Lines) / 3
	rig.xadd(h.Lines[:third])
	n1 := startProc(t, dir, "n1", "n1.yaml")
	waitLines(t, out, moment(r, 3000), time.Minute)
	testutil.WaitFor(t, time.Minute, inSync)
	if err := replica.Signal(syscall.SIGSTOP); err != nil { // the replica lags from here on
		t.Fatal(err)
	}
	atPause := lineCount(out)
	rig.xadd(h.Lines[third : 2*third])
	testutil.WaitFor(t, scaled(3*time.Minute), rig.acked)
	t.Logf("replica paused at %d output lines; every entry acknowledged at %d", atPause, lineCount(out))
	master.Kill()
	n1.kill() // the failover: the node restarts against the promoted replica
	if err := replica.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := pc.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	writeJob(replica.Addr)
	rec := watchRecovery(out)
	n1 = startProc(t, dir, "n1", "n1.yaml")
	rig.xadd(h.Lines[2*third:]) // joins right only if the lost state came back
	waitLines(t, out, lineCount(out)+1, time.Minute)
	testutil.WaitFor(t, scaled(3*time.Minute), rig.acked)
	rt := rec.done()
	n1.term()
	row := summaryRow{Scenario: "ReplicaFailover", Trial: 1, Trials: 1, EventsIn: inputChanges, RecoveryMS: ms(rt.first), MaxStallMS: -1}
	got, lines, dups := table(t, out)
	bad := compare(t, got, want)
	row.Outputs, row.Equal, row.Lost = lines, bad == 0, rowsLost(got, want)
	row.DupIDs, row.Fenced = dupOutputs(out), fencedWrites(dir)
	record1(row)
	t.Logf("after the failover: changelog %d lines, %d repeated ids", lines, dups)
	if row.DupIDs > 0 {
		t.Errorf("%d rows written under two ids", row.DupIDs)
	}
}

// infoField is one field of a Redis INFO reply ("" when absent).
func infoField(info, name string) string {
	for l := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			return v
		}
	}
	return ""
}
