package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources/redisstream"
)

// TestChaosKillStreamReader runs the Helm chart's shape of fleet: three
// nodes with the same job, every one with the same Redis Streams source
// (the CDC input, all in the stream up front) and its own changelog file.
// One node holds the stream's lease and reads; the others wait. The reader
// is killed -9 at a random moment: another node takes the lease over
// (lease 1s), claims what the dead reader left unacknowledged, and reads
// on, while the dead node's keys move (memberlist failure detection). The
// changelogs, the dead reader's first, replay to a table equal to the true
// join; nothing is lost and no row is written twice under different ids.
func TestChaosKillStreamReader(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(1000 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { streamTrial(t, seed, trial, n) })
	}
}

func streamTrial(t *testing.T, seed uint64, trial, trials int) {
	r := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	t.Cleanup(func() { keepFiles(t, dir) })
	rs := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	h := cdcgen.Generate(cdcgen.Config{Seed: seed, Users: 300, Domains: 900, Changes: inputChanges})
	want := h.LeftJoin()
	for i := 0; i < len(h.Lines); i += 1000 {
		p := rc.Pipeline()
		for _, l := range h.Lines[i:min(i+1000, len(h.Lines))] {
			p.XAdd(ctx, &redis.XAddArgs{Stream: "cdc", Values: map[string]any{streamshard.ValueField: string(l)}})
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lastID := rc.XRevRangeN(ctx, "cdc", "+", "-", 1).Val()[0].ID

	ports := [3]int{testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)}
	procs := map[string]*proc{}
	for i := range 3 {
		name := fmt.Sprint("n", i+1)
		job := jobYAML + fmt.Sprintf(`state: {store: redis, redis: {addr: %[1]q}}
cluster: {node_name: %[2]s, gossip: "127.0.0.1:%[3]d", remote: "127.0.0.1:0", seeds: ["127.0.0.1:%[4]d"], profile: lan, request_timeout: 2s}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: file, path: out-%[2]s.jsonl, format: changelog}]
`, rs.Addr, name, ports[i], ports[0])
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(job), 0o644); err != nil {
			t.Fatal(err)
		}
		procs[name] = startProc(t, dir, name, name+".yaml")
	}
	out := func(name string) string { return filepath.Join(dir, "out-"+name+".jsonl") }
	leaseKey := redisstream.LeaseKey("cdc", "joinery")
	holder := func() string {
		v, _ := rc.Get(ctx, leaseKey).Result()
		name, _, _ := strings.Cut(v, "|")
		return name
	}
	var first string
	testutil.WaitFor(t, time.Minute, func() error {
		if first = holder(); first == "" {
			return fmt.Errorf("no node holds the stream's lease")
		}
		return nil
	})
	waitLines(t, out(first), moment(r, 10000), time.Minute)
	var others []string
	for name := range procs {
		if name != first {
			others = append(others, out(name))
		}
	}
	rec := watchRecovery(others...) // the output grows again when another node reads
	killed := time.Now()
	procs[first].kill()
	t.Logf("killed %s, the stream's reader, with %d output lines written", first, lineCount(out(first)))
	var next string
	testutil.WaitFor(t, time.Minute, func() error {
		if next = holder(); next == "" || next == first {
			return fmt.Errorf("lease held by %q", next)
		}
		return nil
	})
	took := time.Since(killed)
	// Done when every entry was delivered and acknowledged (outputs are
	// written before the offsets are committed).
	testutil.WaitFor(t, scaled(3*time.Minute), func() error {
		gs, err := rc.XInfoGroups(ctx, "cdc").Result()
		if err != nil || len(gs) != 1 {
			return fmt.Errorf("groups %v: %v", gs, err)
		}
		if g := gs[0]; g.LastDeliveredID != lastID || g.Pending != 0 {
			return fmt.Errorf("last delivered %s of %s, %d pending", g.LastDeliveredID, lastID, g.Pending)
		}
		return nil
	})
	rt := rec.done()
	for name, p := range procs {
		if name != first {
			p.term()
		}
	}
	// The changelog in write order: the dead reader's, then the next one's
	// (a third node never read, its file is empty or missing).
	all := filepath.Join(dir, "out.jsonl")
	var b []byte
	for _, name := range []string{first, next} {
		part := readChangelog(t, out(name), name == first)
		if part == nil {
			t.Fatalf("%s wrote no changelog file", name)
		}
		b = append(b, part...)
	}
	for name := range procs {
		if name != first && name != next {
			if n := lineCount(out(name)); n > 0 {
				t.Errorf("%s, which never held the lease, wrote %d output lines", name, n)
			}
		}
	}
	if err := os.WriteFile(all, b, 0o644); err != nil {
		t.Fatal(err)
	}
	row := summaryRow{Scenario: "KillStreamReader", Trial: trial + 1, Trials: trials, EventsIn: inputChanges,
		RecoveryMS: ms(rt.first), MaxStallMS: ms(rt.stall)}
	got, lines, dups := table(t, all)
	bad := compare(t, got, want)
	row.Outputs, row.Equal, row.Lost = lines, bad == 0, rowsLost(got, want)
	row.DupIDs, row.Fenced = dupOutputs(all), fencedWrites(dir)
	record1(row)
	t.Logf("%s took the lease %v after the kill; changelog: %d lines, %d repeated ids", next, took.Round(time.Millisecond), lines, dups)
}
