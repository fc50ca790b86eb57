package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
)

// TestChaosStoreRollbackUnderLoad measures a rollback under load: the state
// Redis (no AOF) is snapshotted (SAVE), and later killed -9 and restarted
// from that snapshot while the node is busy applying a Redis stream that
// is still being fed. Between the restart and its detection the node used
// to go on: keys activated afresh loaded the rolled-back state, applied
// newer entries and wrote them; after the node stopped and was restarted,
// the source rewound to the store's committed offsets, and those keys
// skipped the lost range (their applied offsets were past it): rows
// missing, extra and wrong. Now the first key write after the restart is
// refused (its slot group's write generation is below what the node saw),
// the node stops on it, and the restarted node's rewind makes the
// changelog replay to the true join.
//
// The restarted node's stream source moves the group back to the store's
// offset and delivers the lost range before anything after it: the entries
// the stopped node left pending past the lost range, idle longer than the
// source's ClaimMinIdle by then, used to be claimed and delivered first,
// and the keys that took them skipped the lost range ("changelog
// inconsistent: … primary key absent"; redisstream's
// TestRedisStreamSourceRewindBeforeIdlePending). And the node stops within
// seconds of the rollback: it used to wait out the 30 s request timeout of
// keys whose queued requests a stopping activation dropped
// (actors.TestKeyActorStopAnswersQueuedRequests).
func TestChaosStoreRollbackUnderLoad(t *testing.T) {
	seed := uint64(2500)
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
	// Keys passivate after 50 ms idle, so most of the keys the stream
	// reaches after the rollback are activated afresh and load from the
	// store: the case that went wrong.
	out, nodeLog := writeStreamJob(t, dir, in.Addr, fmt.Sprintf("{addr: %q}", state.Addr))

	third := len(h.Lines) / 3
	rig.xadd(h.Lines[:third])
	n1 := startProc(t, dir, "n1", "n1.yaml")
	testutil.WaitFor(t, scaled(3*time.Minute), rig.acked)
	if err := sc.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	atSnapshot := lineCount(out)

	// The second third trickles in, 100 entries every 20 ms, so the node
	// is busy when the state Redis goes back, half-way through it.
	var feed sync.WaitGroup
	half := make(chan struct{})
	feed.Add(1)
	go func() {
		defer feed.Done()
		mid := h.Lines[third : 2*third]
		var once sync.Once
		for i := 0; i < len(mid); i += 100 {
			rig.xadd(mid[i:min(i+100, len(mid))])
			if i >= len(mid)/2 {
				once.Do(func() { close(half) })
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	<-half
	atRollback := lineCount(out)
	state.Kill()
	state.Start()
	restarted := time.Now()
	t.Logf("snapshot at %d output lines; the state Redis restarted from it at %d", atSnapshot, atRollback)
	err := n1.wait(scaled(time.Minute))
	exited := time.Since(restarted)
	if err == nil || n1.running() {
		t.Fatalf("the node on the rolled-back store did not exit with an error: %v", err)
	}
	// Found at its first key write (or at the latest by the 2 s lineage
	// check), then a graceful close: a few seconds.
	if exited > scaled(15*time.Second) {
		t.Errorf("the node exited %s after the state Redis restarted from the snapshot, want a few seconds", exited.Round(time.Millisecond))
	}
	if !bytes.Contains(nodeLog(), []byte("state store went back in time")) {
		t.Fatalf("the node did not report the rollback:\n%s", tail(nodeLog(), 2000))
	}
	t.Logf("the node stopped at %d output lines, %s after the restore: %v\n%s", lineCount(out), exited.Round(time.Millisecond), err, tail(nodeLog(), 1500))
	feed.Wait()

	n1 = startProc(t, dir, "n1", "n1.yaml")
	rig.xadd(h.Lines[2*third:])
	waitLines(t, out, lineCount(out)+1, time.Minute)
	testutil.WaitFor(t, scaled(3*time.Minute), rig.acked)
	n1.term()
	got, lines, dups := table(t, out)
	bad := compare(t, got, want)
	t.Logf("after the restart: changelog %d lines, %d repeated ids, %d of %d rows wrong, %d lost",
		lines, dups, bad, len(want), rowsLost(got, want))
	if n := dupOutputs(out); n > 0 {
		t.Errorf("%d rows written under two ids", n)
	}
}

// writeStreamJob writes dir/n1.yaml, the chaos join reading the Redis
// stream cdc on inAddr into out.jsonl, with keys passivating after 50 ms
// and state in the Redis that stateRedis (a state.redis block) names. It
// returns the output's path and a reader of the node's log.
func writeStreamJob(t *testing.T, dir, inAddr, stateRedis string) (string, func() []byte) {
	t.Helper()
	job := jobYAML + fmt.Sprintf(`state: {store: redis, passivate_after: 50ms, redis: %[2]s}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: file, path: out.jsonl, format: changelog}]
`, inAddr, stateRedis)
	if err := os.WriteFile(filepath.Join(dir, "n1.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "out.jsonl"), func() []byte { b, _ := os.ReadFile(filepath.Join(dir, "n1.log")); return b }
}
