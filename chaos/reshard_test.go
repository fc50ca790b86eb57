package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/testutil"
)

// TestChaosClusterReshard resizes the Redis Cluster that holds the fleet's
// state while the fleet joins, as an operator grows or shrinks it: three
// nodes (n1 reads the input, paced, and writes the changelog; n2 and n3 host
// key actors; keys passivate after 50 ms, so activations keep loading state
// in batches) on a three-master cluster, which
//
//  1. grows to four masters: redis-cli --cluster add-node, then rebalance
//     --cluster-use-empty-masters, which moves a quarter of the slots to
//     the new master, key by key;
//  2. shrinks back: rebalance with the new master's weight 0 moves its
//     slots away, and del-node removes it;
//  3. holds one slot's migration half done for a few seconds (CLUSTER
//     SETSLOT IMPORTING and MIGRATING, MIGRATE of its first keys), so the
//     fenced writes, batched loads, commits and replay floors of that slot's
//     group are answered ASK and TRYAGAIN, then finishes it.
//
// The input must still be running when the last step ends. The changelog
// replays to the true join: nothing lost, no row written under two ids; the
// output's longest stall in each step is logged, the longest of all is the
// summary's max stall.
func TestChaosClusterReshard(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(2700 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { reshardTrial(t, seed, trial, n) })
	}
}

// reshardRate is the input's pace in the resharding scenario, changes per
// second: the CI input (20,000 changes) lasts about 40 s, well beyond
// the three steps (about 25 s on a loaded two-core machine).
const reshardRate = 500

// reshardHold is how long step 3 holds its slot half migrated.
const reshardHold = 3 * time.Second

func reshardTrial(t *testing.T, seed uint64, trial, trials int) {
	began := time.Now()
	c := testutil.StartRedisCluster(t, 3)
	var addrs []string
	for _, a := range c.Addrs() {
		addrs = append(addrs, strconv.Quote(a))
	}
	f := newFleet(t, seed, withStateRedis("{cluster: {addrs: ["+strings.Join(addrs, ", ")+"]}}"),
		withState("passivate_after: 50ms"), withRate(reshardRate), inTrial(trial, trials))
	f.startReader(t)
	waitLines(t, f.out, 200, time.Minute)
	t.Logf("%s: output flowing", time.Since(began).Round(time.Millisecond))
	before := clusterAnswers(t, c)
	f.fault()
	whole, faulted := watchRecovery(f.out), time.Now()

	step := func(name string, do func() string) {
		t.Helper()
		rec := watchRecovery(f.out)
		at, start := lineCount(f.out), time.Now()
		what := do()
		// The step's stall lasts until the output grows again after it
		// (the input still runs): a standstill still open when the step
		// ends is its own.
		waitLines(t, f.out, lineCount(f.out)+1, time.Minute)
		rt := rec.done()
		stall := "none"
		if rt.stall >= 0 {
			stall = rt.stall.Round(time.Millisecond).String()
		}
		t.Logf("%s (from %s after the first step began): %s; took %s, output %d -> %d lines, longest output stall %s",
			name, start.Sub(faulted).Round(time.Millisecond), what, time.Since(start).Round(time.Millisecond), at, lineCount(f.out), stall)
	}
	step("grow", func() string {
		i, took := c.AddMaster()
		slots, keys := c.SlotsOf(i), c.CountKeys("*")[i]
		if slots == 0 || keys == 0 {
			t.Errorf("the new master holds %d slots and %d of the job's keys after the rebalance", slots, keys)
		}
		return fmt.Sprintf("master %s added, rebalanced in %s: %d slots, %d of the job's keys", c.Masters[i].Addr, took.Round(time.Millisecond), slots, keys)
	})
	step("shrink", func() string {
		addr := c.Masters[3].Addr
		keys := c.CountKeys("*")[3]
		took := c.RemoveMaster(3)
		return fmt.Sprintf("master %s emptied of %d+ keys in %s and removed", addr, keys, took.Round(time.Millisecond))
	})
	step("held migration", func() string {
		slot := busySlot(t, c)
		from := c.Owner(slot)
		to := (from + 1) % len(c.Masters)
		moved := c.MigrateSlot(slot, to, 3, func(i int) {
			if i == 0 {
				time.Sleep(reshardHold) // the fault: the slot stays split this long
			}
		})
		return fmt.Sprintf("slot %d (%d keys) moved from master %d to %d, held half done for %s", slot, moved, from, to, reshardHold)
	})
	if !f.n1.running() {
		t.Errorf("the input ended before the resharding did (%s): it did not run under load", time.Since(began).Round(time.Millisecond))
	}
	after := clusterAnswers(t, c)
	f.finish(t)
	w := whole.done()
	t.Logf("longest output stall over the whole run %s, ending %s after the first step began",
		time.Duration(max(w.stall, 0)).Round(time.Millisecond), w.stallEnd.Round(time.Millisecond))
	if d := dupOutputs(f.out); d > 0 {
		t.Errorf("%d rows written under two ids", d)
	}
	t.Logf("%s: done; the three masters answered %d ASK, %d TRYAGAIN, %d MOVED during the run; %d state writes failed and were retried",
		time.Since(began).Round(time.Millisecond), after["ASK"]-before["ASK"], after["TRYAGAIN"]-before["TRYAGAIN"], after["MOVED"]-before["MOVED"], logCount(f.dir, "state write failed"))
	if after["ASK"]+after["TRYAGAIN"] == before["ASK"]+before["TRYAGAIN"] {
		t.Errorf("no ASK or TRYAGAIN answered: the fleet did not meet a slot in migration")
	}
}

// busySlot is the slot, among those of a few random keys of the job, with
// the most keys.
func busySlot(t *testing.T, c *testutil.RedisCluster) int {
	t.Helper()
	ctx := context.Background()
	best, most := -1, int64(-1)
	for _, addr := range c.Addrs() {
		cl := redis.NewClient(&redis.Options{Addr: addr})
		for range 5 {
			k, err := cl.RandomKey(ctx).Result()
			if err != nil {
				continue
			}
			slot, err := cl.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			n, err := cl.ClusterCountKeysInSlot(ctx, int(slot)).Result()
			if err != nil {
				t.Fatal(err)
			}
			if n > most {
				best, most = int(slot), n
			}
		}
		_ = cl.Close()
	}
	if best < 0 {
		t.Fatal("the cluster holds no keys")
	}
	return best
}

// clusterAnswers sums the ASK, TRYAGAIN and MOVED answers of c's masters
// so far (INFO errorstats).
func clusterAnswers(t *testing.T, c *testutil.RedisCluster) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, addr := range c.Addrs() {
		cl := redis.NewClient(&redis.Options{Addr: addr})
		info, err := cl.Info(context.Background(), "errorstats").Result()
		_ = cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"ASK", "TRYAGAIN", "MOVED"} {
			out[kind] += errorCount(info, kind)
		}
	}
	return out
}

// errorCount reads count=N of errorstat_<kind> from INFO errorstats.
func errorCount(info, kind string) int {
	for line := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+kind+":count="); ok {
			n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
			return n
		}
	}
	return 0
}

// logCount counts the lines of the node logs of dir that contain s.
func logCount(dir, s string) int {
	logs, _ := filepath.Glob(filepath.Join(dir, "n*.log"))
	n := 0
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		n += bytes.Count(b, []byte(s))
	}
	return n
}
