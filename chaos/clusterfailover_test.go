package chaos

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
)

// TestChaosClusterFailoverLaggingReplica is a Redis Cluster
// failover to a lagging replica: the node's state is on a real three-master, three-replica
// Redis Cluster (no AOF; the store does not WAIT on a cluster, so a
// stopped replica blocks nothing), its source a Redis stream on a plain
// redis-server of its own, fed while the node runs. One master's replica
// is stopped (SIGSTOP) while the node goes on writing, and the master
// drops it (repl-timeout); the master is killed -9; the stale replica is
// resumed (SIGCONT) and promoted with CLUSTER FAILOVER TAKEOVER. The test
// checks that the replica really lagged — the promoted master shows lower
// write generations than the old one had acknowledged, and the stream's
// group acknowledged entries after the drop — and that the node finds the
// rollback (its first write to a shard of that master is refused) and
// exits non-zero; restarted (the test is its supervisor), the changelog
// must replay to the true join: nothing lost, no row under two ids.
//
// The first trial fails the master that holds neither the job's lineage
// (slot group 0) nor the stream partition's committed offset: the other
// masters keep the commit sequence and the offset as they were, and only
// the state of the failed master's slot groups goes back. A node restarted
// from the committed offset then skipped what those keys lost ("changelog
// inconsistent: … primary key absent"); it now starts from the store's
// recovery offsets (redisstore's replay floors). Later trials fail the
// master holding the committed offset, then the one holding the lineage.
func TestChaosClusterFailoverLaggingReplica(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(2600 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { clusterFailoverTrial(t, seed, trial, n) })
	}
}

func clusterFailoverTrial(t *testing.T, seed uint64, trial, trials int) {
	dir := t.TempDir()
	t.Cleanup(func() { keepFiles(t, dir) })
	in := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	began := time.Now()
	c := testutil.StartRedisClusterReplicas(t, 3)
	t.Logf("cluster of 3 masters and 3 replicas up in %s", time.Since(began).Round(time.Millisecond))
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: in.Addr})
	defer rc.Close()
	h := cdcgen.Generate(cdcgen.Config{Seed: seed, Users: 300, Domains: 900, Changes: inputChanges})
	want := h.LeftJoin()
	rig := &streamRig{t: t, rc: rc}
	var addrs []string
	for i := range c.Masters {
		addrs = append(addrs, strconv.Quote(c.Masters[i].Addr), strconv.Quote(c.Replicas[i].Addr))
	}
	// Keys passivate after 50 ms idle, so most keys the stream reaches
	// after the failover are activated afresh and load from the store.
	out, nodeLog := writeStreamJob(t, dir, in.Addr, "{cluster: {addrs: ["+strings.Join(addrs, ", ")+"]}}")

	third := len(h.Lines) / 3
	rig.xadd(h.Lines[:third])
	n1 := startProc(t, dir, "n1", "n1.yaml")
	testutil.WaitFor(t, scaled(3*time.Minute), rig.acked)
	t.Logf("first third applied at %s", time.Since(began).Round(time.Millisecond))

	// Trial 1 (and 4, 7, …) fails the master that holds neither the job's
	// lineage nor the partition's committed offset, trial 2 the one that
	// holds the committed offset, trial 3 the one that holds the lineage.
	victim, what := -1, [...]string{"neither the lineage nor the committed offset", "the committed offset", "the lineage"}[trial%3]
	for i, m := range c.Masters {
		seq, offsets := holds(t, m.Addr)
		if trial%3 == 0 && !seq && !offsets || trial%3 == 1 && offsets || trial%3 == 2 && seq {
			victim = i
			break
		}
	}
	if victim < 0 {
		t.Fatalf("no master holds %s", what)
	}
	master, replica := c.Masters[victim], c.Replicas[victim]
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	pc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer pc.Close()
	testutil.WaitFor(t, time.Minute, func() error {
		mo := infoField(mc.Info(ctx, "replication").Val(), "master_repl_offset")
		ro := infoField(pc.Info(ctx, "replication").Val(), "master_repl_offset")
		if mo == "" || mo != ro {
			return fmt.Errorf("replica at %s of %s", ro, mo)
		}
		return nil
	})
	// The master drops a replica that stops acknowledging for repl-timeout
	// (60 s by default; 1 s here): the writes after that never reach the
	// replica, whatever the kernel had buffered on the link before.
	if err := mc.ConfigSet(ctx, "repl-timeout", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Signal(syscall.SIGSTOP); err != nil { // the replica lags from here on
		t.Fatal(err)
	}

	// The second third trickles in, 25 entries every 20 ms (some 6 s), so
	// the node is busy writing while the replica is stopped and when it
	// takes over.
	feed := make(chan struct{})
	go func() {
		defer close(feed)
		mid := h.Lines[third : 2*third]
		for i := 0; i < len(mid); i += 25 {
			rig.xadd(mid[i:min(i+25, len(mid))])
			time.Sleep(20 * time.Millisecond)
		}
	}()
	testutil.WaitFor(t, scaled(time.Minute), func() error {
		if n := infoField(mc.Info(ctx, "replication").Val(), "connected_slaves"); n != "0" {
			return fmt.Errorf("the master still has %s replicas", n)
		}
		return nil
	})
	genAtDrop, ackedAtDrop := genSum(t, mc), ackedEntries(t, rc)
	// Acknowledged writes to the master after it dropped the replica, and
	// stream entries acknowledged after that: what the failover loses.
	testutil.WaitFor(t, scaled(time.Minute), func() error {
		if a := ackedEntries(t, rc); a < ackedAtDrop+500 {
			return fmt.Errorf("%d entries acknowledged since the master dropped the replica", a-ackedAtDrop)
		}
		return nil
	})
	genAtKill := genSum(t, mc)
	atKill := lineCount(out)
	master.Kill()
	if err := replica.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	c.Failover(victim)
	failedOver := time.Now()
	genPromoted := genSum(t, pc)
	t.Logf("%s: master %d (%s, holding %s) killed at %d output lines: write generations %d when it dropped the stopped replica, %d at the kill, %d on the promoted replica; %d stream entries acknowledged since the drop",
		time.Since(began).Round(time.Millisecond), victim, master.Addr, what, atKill, genAtDrop, genAtKill, genPromoted, ackedEntries(t, rc)-ackedAtDrop)
	if genAtKill <= genAtDrop || genPromoted > genAtDrop {
		t.Fatalf("the promoted replica did not lag: write generations %d when the master dropped it, %d at the kill, %d after the promotion", genAtDrop, genAtKill, genPromoted)
	}

	err := n1.wait(scaled(time.Minute))
	exited := time.Since(failedOver)
	if err == nil || n1.running() {
		t.Fatalf("the node on the failed-over store did not exit with an error: %v", err)
	}
	if !bytes.Contains(nodeLog(), []byte("state store went back in time")) {
		t.Fatalf("the node did not report the rollback:\n%s", tail(nodeLog(), 2000))
	}
	t.Logf("the node stopped at %d output lines, %s after the promotion: %v\n%s", lineCount(out), exited.Round(time.Millisecond), err, tail(nodeLog(), 1500))
	<-feed

	rec := watchRecovery(out)
	n1 = startProc(t, dir, "n1", "n1.yaml")
	rig.xadd(h.Lines[2*third:])
	waitLines(t, out, lineCount(out)+1, time.Minute)
	restarted := time.Now()
	reported := false
	testutil.WaitFor(t, scaled(3*time.Minute), func() error {
		err := rig.acked()
		if err != nil && !reported && time.Since(restarted) > 10*time.Second {
			reported = true
			gs, _ := rc.XInfoGroups(ctx, "cdc").Result()
			cs, _ := rc.XInfoConsumers(ctx, "cdc", "joinery").Result()
			pe, _ := rc.XPending(ctx, "cdc", "joinery").Result()
			t.Logf("not caught up %s after the restart: %v; groups %+v; consumers %+v; pending %+v; %d output lines", time.Since(restarted).Round(time.Millisecond), err, gs, cs, pe, lineCount(out))
		}
		return err
	})
	rt := rec.done()
	t.Logf("%s: every entry acknowledged after the restart", time.Since(began).Round(time.Millisecond))
	n1.term()
	row := summaryRow{Scenario: "ClusterFailoverLaggingReplica", Trial: trial + 1, Trials: trials, EventsIn: inputChanges,
		RecoveryMS: ms(rt.first), MaxStallMS: -1}
	defer func() { record1(row) }()
	got, lines, dups := table(t, out)
	bad := compare(t, got, want)
	row.Outputs, row.Equal, row.Lost = lines, bad == 0, rowsLost(got, want)
	row.DupIDs, row.Fenced = dupOutputs(out), fencedWrites(dir)
	t.Logf("after the restart: changelog %d lines, %d repeated ids, %d of %d rows wrong, %d lost",
		lines, dups, bad, len(want), row.Lost)
	if row.DupIDs > 0 {
		t.Errorf("%d rows written under two ids", row.DupIDs)
	}
}

// holds reports whether the cluster master at addr holds the chaos job's
// commit sequence (the lineage, slot group 0) and whether it holds its
// stream partition's committed offset.
func holds(t *testing.T, addr string) (seq, offsets bool) {
	t.Helper()
	ctx := context.Background()
	cl := redis.NewClient(&redis.Options{Addr: addr})
	defer cl.Close()
	keys, err := cl.Keys(ctx, "joinery:*:seq").Result()
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := cl.Keys(ctx, "joinery:*:offsets").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range hashes {
		ok, err := cl.HExists(ctx, k, "cdc/0").Result()
		if err != nil {
			t.Fatal(err)
		}
		offsets = offsets || ok
	}
	return len(keys) > 0, offsets
}

// genSum is the sum of the write generations (the slot groups' gen keys)
// on one cluster node.
func genSum(t *testing.T, cl *redis.Client) int64 {
	t.Helper()
	ctx := context.Background()
	keys, err := cl.Keys(ctx, "joinery:*:gen").Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, k := range keys {
		v, err := cl.Get(ctx, k).Int64()
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}

// ackedEntries is how many entries of the stream cdc the group joinery has
// acknowledged: read and not pending.
func ackedEntries(t *testing.T, rc *redis.Client) int64 {
	t.Helper()
	gs, err := rc.XInfoGroups(context.Background(), "cdc").Result()
	if err != nil || len(gs) != 1 {
		t.Fatalf("groups %v: %v", gs, err)
	}
	return gs[0].EntriesRead - gs[0].Pending
}
