package chaos

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources/redisstream"
)

// shardCount is the shard streams of the sharded scenario.
const shardCount = 6

// TestChaosKillShardReader runs the Helm chart's default fleet shape: three
// nodes with the same job, whose source is a Redis Streams source of 6
// shard streams (the CDC input, sharded by row primary key, all in the
// streams up front), each node with its own changelog file. The shards'
// leases spread over the three nodes (2 each), so all of them read. One
// node is killed -9 at a random moment: its leases lapse (lease 1s), the
// two others take its shards (3 each), claim what it left unacknowledged
// and read on, while its keys move (memberlist failure detection). The
// changelogs, merged in each row's output order (seq), replay to a table
// equal to the true join: nothing is lost.
func TestChaosKillShardReader(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(2000 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { shardTrial(t, seed, trial, n, shapePK, faultKill) })
	}
}

// TestChaosKillShardReaderCoPartitioned is TestChaosKillShardReader on
// the chart's default shape: shard streams partitioned by the join key
// (partitioned_by: join_key), so each node hosts the key actors of the
// shards it reads, and domains moving between users arrive as a delete in
// the old user's shard and a create in the new one's (cdcgen.ByJoinKey),
// read by different nodes. The killed node's shards and their key groups
// move together to the two others; the table equals the true join.
func TestChaosKillShardReaderCoPartitioned(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(2100 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { shardTrial(t, seed, trial, n, shapeJoinKey, faultKill) })
	}
}

// TestChaosJoinShardReaderCoPartitioned adds a fourth node to the
// co-partitioned fleet mid-run: it takes its share of the shards (1 or 2
// of 6), handed over by their readers, and the key groups of those shards
// move to it with them; the table equals the true join, nothing is lost.
func TestChaosJoinShardReaderCoPartitioned(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(2200 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { shardTrial(t, seed, trial, n, shapeJoinKey, faultJoin) })
	}
}

// TestChaosKillShardReaderRepartitioned is TestChaosKillShardReader with
// the shard streams (by primary key) repartitioned by the join key
// (repartition: stream): each node reads raw shards, writes their records
// to the repartition streams of their key groups, and reads the
// repartition shards whose key groups it hosts. The killed node may die
// between a repartition write and the raw XACK: the next reader of the raw
// shard re-delivers those records and the write skips them (each raw
// record once); its repartition shards and key groups move to the two
// others. The table equals the true join, nothing is lost.
func TestChaosKillShardReaderRepartitioned(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(2300 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { shardTrial(t, seed, trial, n, shapeRepartitioned, faultKill) })
	}
}

// TestChaosJoinShardReaderRepartitioned adds a fourth node to the
// repartitioned fleet mid-run: it takes its share of the raw shards and of
// the repartition shards (with their key groups), handed over by their
// readers while records are forwarded and applied; the table equals the
// true join, nothing is lost.
func TestChaosJoinShardReaderRepartitioned(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(2400 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { shardTrial(t, seed, trial, n, shapeRepartitioned, faultJoin) })
	}
}

// The shapes of the sharded scenario's source.
const (
	shapePK            = iota // sharded by the row's primary key
	shapeJoinKey              // by the join key: partitioned_by: join_key
	shapeRepartitioned        // by the primary key, repartition: stream
)

// The faults of the sharded scenario.
const (
	faultKill      = iota // one of the three nodes killed -9
	faultJoin             // a fourth node joins
	faultRolling          // every node restarted in turn (rolling_test.go)
	faultAutoscale        // two nodes scaled to four and back on the backlog (autoscale_test.go)
)

// shardOfLine is the shard of a Debezium line, by its row's primary key
// ([id]) as a producer shards: redisstream.ShardOf.
func shardOfLine(t *testing.T, l []byte) int {
	var env struct{ Before, After map[string]any }
	if err := json.Unmarshal(l, &env); err != nil {
		t.Fatal(err)
	}
	row := env.After
	if row == nil {
		row = env.Before
	}
	key, err := json.Marshal([]any{row["id"]})
	if err != nil {
		t.Fatal(err)
	}
	return redisstream.ShardOf(key, shardCount)
}

// shardTrial runs one trial of the sharded scenario: three nodes read the
// shard streams (by primary key, or byJoinKey co-partitioned); then one of
// them is killed -9, or (faultJoin) a fourth node joins and takes its
// share of the shards and their key groups, or (faultRolling) each node is
// restarted in turn, or (faultAutoscale) the fleet starts with two nodes and
// is scaled to four and back to two on the backlog signal.
func shardTrial(t *testing.T, seed uint64, trial, trials int, shape int, fault int) {
	join := fault == faultJoin
	byJoinKey := shape == shapeJoinKey
	r := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	t.Cleanup(func() { keepFiles(t, dir) })
	rs := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	h := cdcgen.Generate(cdcgen.Config{Seed: seed, Users: 300, Domains: 900, Changes: inputChanges})
	want := h.LeftJoin()
	var input []cdcgen.KeyedLine // each line and the key its shard is by
	partitioned := ""
	if byJoinKey {
		var err error
		if input, err = cdcgen.ByJoinKey(h.Lines, map[string]string{"users": "id", "domains": "user_id"}); err != nil {
			t.Fatal(err)
		}
		partitioned = ", partitioned_by: join_key"
	} else {
		for _, l := range h.Lines {
			input = append(input, cdcgen.KeyedLine{Line: l})
		}
	}
	if fault == faultAutoscale {
		// Each node reads at most scaleNodeRate changes per second, so the
		// fleet's size sets how fast a backlog drains (as CPU limits do in
		// the chart) and the signal sees it for seconds, not for the
		// fraction of one that an unpaced node needs.
		partitioned += fmt.Sprintf(", rate: %d", scaleNodeRate)
	}
	streams := []string{"cdc"} // the streams whose entries must all be acknowledged
	if shape == shapeRepartitioned {
		partitioned = ", repartition: stream"
		streams = append(streams, streamshard.RepartitionStream("cdc", "joinery"))
	}
	// feedPaced appends input to the shard streams, a pipeline of 1000
	// lines at a time, pace apart. shardOfLine is checked before (it calls
	// t.Fatal): this may run outside the test's goroutine.
	shards := make([]int, len(input))
	for i, k := range input {
		shards[i] = shardOfLine(t, k.Line)
		if byJoinKey {
			shards[i] = redisstream.ShardOf(k.Key, shardCount)
		}
	}
	feedPaced := func(from, to int, pace time.Duration) error {
		for i := from; i < to; i += 1000 {
			if i > from {
				time.Sleep(pace)
			}
			p := rc.Pipeline()
			for j := i; j < min(i+1000, to); j++ {
				p.XAdd(ctx, &redis.XAddArgs{Stream: redisstream.ShardStream("cdc", shards[j]),
					Values: map[string]any{streamshard.ValueField: string(input[j].Line)}})
			}
			if _, err := p.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	// The first half is there when the nodes start; the second comes once
	// the leases have spread (with join: once n4 reads). Fed all at once,
	// one node started alone on the backlog could read nearly all of it
	// before the leases spread, and a killed node would then hold nothing
	// left to read (CI: the victim's file stopped at 2,393 lines).
	half := len(input) / 2
	switch fault {
	case faultRolling: // most of the input is fed during the restarts
		half = len(input) / 5
	case faultAutoscale: // the backlog comes as a burst once two nodes read
		half = 0
	}
	if err := feedPaced(0, half, 0); err != nil {
		t.Fatal(err)
	}

	ports := [4]int{testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)}
	// Seeds: n1, as the chart's seedCount 1 lists pod 0; the rolling
	// restart lists n1 to n3, as the chart's default seedCount 3 does (a
	// restarted n1 then rejoins through the others).
	seeds := fmt.Sprintf("%q", fmt.Sprintf("127.0.0.1:%d", ports[0]))
	if fault == faultRolling {
		seeds = fmt.Sprintf("%q, %q, %q", fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1]), fmt.Sprintf("127.0.0.1:%d", ports[2]))
	}
	procs := map[string]*proc{}
	var names []string
	var admin [4]string // each node's admin address (faultRolling)
	for i := range 4 {
		name := fmt.Sprint("n", i+1)
		job := jobYAML + fmt.Sprintf(`state: {store: redis, redis: {addr: %[1]q}}
cluster: {node_name: %[2]s, gossip: "127.0.0.1:%[3]d", remote: "127.0.0.1:0", seeds: [%[4]s], profile: lan, request_timeout: 2s}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, shards: %[5]d%[6]s, group: joinery, lease: 1s, tables: {users: left, domains: right}}]
sinks: [{type: file, path: out-%[2]s.jsonl, format: changelog}]
`, rs.Addr, name, ports[i], seeds, shardCount, partitioned)
		if fault == faultRolling || fault == faultAutoscale { // readiness (/readyz) and the backlog (/metrics)
			admin[i] = fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
			job += fmt.Sprintf("admin: {addr: %q, insecure: true}\n", admin[i])
		}
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(job), 0o644); err != nil {
			t.Fatal(err)
		}
		switch {
		case fault == faultAutoscale: // n1 and n2 first, n3 and n4 when scaled up
			names = append(names, name)
			if i < 2 {
				procs[name] = startProcBin(t, dir, name, name+".yaml", "", scaleArgs)
			}
		case i < 3: // n4 only joins (join)
			names = append(names, name)
			procs[name] = startProc(t, dir, name, name+".yaml")
		}
	}
	out := func(name string) string { return filepath.Join(dir, "out-"+name+".jsonl") }
	holders := func() map[string][]int {
		m := map[string][]int{}
		for i := range shardCount {
			v, _ := rc.Get(ctx, redisstream.LeaseKey(redisstream.ShardStream("cdc", i), "joinery")).Result()
			name, _, _ := strings.Cut(v, "|")
			m[name] = append(m[name], i)
		}
		return m
	}
	// spread waits until each of names holds a fair share of the leases and
	// none is free.
	spread := func(names ...string) {
		testutil.WaitFor(t, scaled(time.Minute), func() error {
			hs := holders()
			if len(hs[""]) > 0 {
				return fmt.Errorf("leases %v: some free", hs)
			}
			for _, n := range names {
				if got := len(hs[n]); got < shardCount/len(names) || got > redisstream.FairShare(shardCount, len(names)) {
					return fmt.Errorf("leases %v: %s holds %d", hs, n, got)
				}
			}
			return nil
		})
	}
	if fault == faultAutoscale {
		spread(names[:2]...)
	} else {
		spread(names...)
	}
	t.Logf("leases: %v", holders())
	var rec *recovery
	var took time.Duration
	live := names // the nodes that run to the end
	if fault == faultAutoscale {
		burst := 3 * len(input) / 5
		rec, took = autoscaleFleet(t, dir, procs, names, admin[:], out, spread,
			func() error { return feedPaced(0, burst, 0) },
			func(stop <-chan struct{}) error { return feedSlowly(feedPaced, burst, len(input), stop) })
	} else if fault == faultRolling {
		rec, took = rollingRestart(t, dir, procs, names, admin[:3], out, func(stop <-chan struct{}) error {
			return feedSlowly(feedPaced, half, len(input), stop)
		})
		spread(names...)
	} else if join {
		// Some output of the first half, from whichever nodes read it:
		// under load one node may have read every shard before the leases
		// spread, so no single node's file is sure to grow.
		want := moment(r, 2000)
		total := func() int { return lineCount(out(names[0])) + lineCount(out(names[1])) + lineCount(out(names[2])) }
		testutil.WaitFor(t, time.Minute, func() error {
			if n := total(); n < want {
				return fmt.Errorf("the three nodes wrote %d output lines, want >= %d", n, want)
			}
			return nil
		})
		rec = watchRecovery(out(names[0]), out(names[1]), out(names[2]))
		joined := time.Now()
		procs["n4"] = startProc(t, dir, "n4", "n4.yaml")
		names = append(names, "n4")
		live = names
		t.Logf("n4 joined with %d output lines written", total())
		spread(names...)
		took = time.Since(joined)
		t.Logf("leases after n4 joined (%v): %v", took.Round(time.Millisecond), holders())
		if err := feedPaced(half, len(input), 0); err != nil {
			t.Fatal(err)
		}
	} else {
		// The victim is killed while the second half is being fed and
		// read: once its own output grew by a random moment of its share
		// (it holds a third of the shards: about a sixth of the output).
		victim := names[r.IntN(3)]
		base := lineCount(out(victim))
		fed := make(chan error, 1)
		go func() { fed <- feedPaced(half, len(input), 200*time.Millisecond) }()
		waitLines(t, out(victim), base+moment(r, 2500), time.Minute)
		var others []string
		for _, n := range names {
			if n != victim {
				others = append(others, n)
			}
		}
		rec = watchRecovery(out(others[0]), out(others[1]))
		killed := time.Now()
		lost := holders()[victim]
		procs[victim].kill()
		t.Logf("killed %s, holding shards %v, with %d output lines written", victim, lost, lineCount(out(victim)))
		spread(others...)
		took = time.Since(killed)
		live = others
		if err := <-fed; err != nil { // all of the input is in before the end is awaited
			t.Fatal(err)
		}
		t.Logf("leases after the kill (%v): %v", took.Round(time.Millisecond), holders())
	}
	// Done when every entry of every shard was delivered and acknowledged
	// (outputs are written before the offsets are committed).
	testutil.WaitFor(t, scaled(3*time.Minute), func() error {
		for _, stream := range streams {
			for i := range shardCount {
				s := redisstream.ShardStream(stream, i)
				gs, err := rc.XInfoGroups(ctx, s).Result()
				if err != nil || len(gs) != 1 {
					return fmt.Errorf("%s groups %v: %v", s, gs, err)
				}
				if g := gs[0]; g.Lag != 0 || g.Pending != 0 {
					return fmt.Errorf("%s: lag %d, %d pending", s, g.Lag, g.Pending)
				}
			}
		}
		return nil
	})
	rt := rec.done()
	for _, n := range live {
		procs[n].term()
	}
	all := filepath.Join(dir, "out.jsonl")
	var outs []string
	killed := map[string]bool{}
	for _, n := range names {
		outs = append(outs, out(n))
		killed[out(n)] = !slices.Contains(live, n)
	}
	repeated := mergeBySeq(t, all, killed, outs...)
	scenario := [...]string{faultKill: "KillShardReader", faultJoin: "JoinShardReader", faultRolling: "RollingRestart", faultAutoscale: "Autoscale"}[fault]
	scenario += [...]string{shapeJoinKey: "CoPartitioned", shapeRepartitioned: "Repartitioned"}[shape]
	row := summaryRow{Scenario: scenario, Trial: trial + 1, Trials: trials, EventsIn: inputChanges,
		RecoveryMS: ms(rt.first), MaxStallMS: ms(rt.stall)}
	got, lines, _ := table(t, all)
	bad := compare(t, got, want)
	row.Outputs, row.Equal, row.Lost = lines, bad == 0, rowsLost(got, want)
	row.DupIDs, row.Fenced = dupOutputs(all), fencedWrites(dir)
	record1(row)
	if (fault == faultRolling || fault == faultAutoscale) && row.DupIDs > 0 {
		t.Errorf("%d rows written under two ids", row.DupIDs)
	}
	for _, n := range names {
		if lineCount(out(n)) == 0 {
			t.Errorf("%s wrote no output: the shards did not spread", n)
		}
	}
	t.Logf("the shards moved within %v of the fault; changelog: %d distinct ids, %d repeated", took.Round(time.Millisecond), lines, repeated)
}

// mergeBySeq writes to dst the changelog lines of paths, first line per
// output id, ordered by primary key and then by seq, the order of each
// row's changes: the nodes write their files concurrently, so no file
// order is the changelog's. It returns how many lines repeated an id.
// killed marks the files whose writer was killed (readChangelog).
func mergeBySeq(t *testing.T, dst string, killed map[string]bool, paths ...string) int {
	t.Helper()
	type line struct {
		pk  string
		seq uint64
		raw []byte
	}
	var lines []line
	seen := map[string]bool{}
	repeated := 0
	for _, p := range paths {
		b := readChangelog(t, p, killed[p])
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			o, err := changelog.DecodeChangelog(sc.Bytes())
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if seen[o.ID] {
				repeated++
				continue
			}
			seen[o.ID] = true
			lines = append(lines, line{o.PK, o.Seq, slices.Clone(sc.Bytes())})
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int {
		return cmp.Or(strings.Compare(a.pk, b.pk), cmp.Compare(a.seq, b.seq))
	})
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l.raw)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return repeated
}
