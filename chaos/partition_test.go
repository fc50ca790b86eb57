package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/linefile"
	"github.com/joinery/joinery/internal/testutil"
)

// TestChaosPartitionActorNode cuts n2, a node that hosts key actors, off
// from the other nodes with a real network partition (each node in its own
// network namespace; policy rules in the root namespace silently drop the
// packets between n2's subnet and the others', both ways; see netLab),
// keeps it cut off until n1, n3 and n4 have declared it dead and carried
// on without it, then heals the partition. n2 keeps its route to Redis
// throughout, so its stale activations can still try to write.
//
// Why a refused write is certain: n1, the reading node, keeps sending
// requests to the keys on n2 after the cut (those in flight, their retries
// after request_timeout 2s, and new ones until its window fills). They
// never arrive: they sit unacknowledged in n1's TCP connection to n2, and
// the kernel retransmits them, with backoff, even after n1 closes that
// connection when it declares n2 dead (about 5 s in, memberlist profile
// lan; the others confirm each other's suspicion). Then the keys move:
// n1, n3 and n4 activate them with newer owner epochs from Redis and re-apply
// those requests there. When the partition heals, the kernel's next
// retransmission delivers the old requests to n2, whose activations of
// those keys (older epochs; nobody stopped them — n2 is healed before it
// declares the others dead, so it never moved anything) apply them and
// write: the Lua CAS refuses every one of those writes ("key write
// fenced") and the stale activations stop. That is the pause scenario's
// window, made by the network instead of SIGSTOP. Healing as soon as the
// keys moved keeps the retransmission backoff short (the next one comes
// within seconds); the test waits for the refused writes, bounded, before
// it finishes.
//
// The final table equals the fault-free one, nothing is lost, no row is
// written twice under different ids, and at least one write was refused,
// both in n2's log and in its joinery_fenced_writes_total. After the heal
// protoactor keeps n2 out of placement (a member declared dead is blocked
// by its ID until it restarts, see cluster/doc.go).
func TestChaosPartitionActorNode(t *testing.T) {
	// The pass condition for this scenario: every trial equal, none
	// lost, no duplicate ids — and at least one refused write in the
	// scenario. Whether a trial sees one depends on what sits in n1's
	// connection to n2 at the cut (see above): most trials do (a run of 9
	// saw 6), so when the trials asked for saw none, up to
	// partitionExtraTrials more are run, each checked like the others.
	want := trials(1)
	fencedTotal, ran := 0, 0
	for trial := 0; trial < want || (fencedTotal == 0 && trial < want+partitionExtraTrials); trial++ {
		seed := uint64(900 + trial)
		ran++
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			fencedTotal += partitionTrial(t, seed, trial, want)
		})
	}
	t.Logf("%d trials, %d refused (fenced) writes by n2 in all", ran, fencedTotal)
	if fencedTotal < 1 {
		t.Errorf("no refused (fenced) write in %d partition trials: n2's stale activations were never fenced out, or never had anything to write", ran)
	}
}

// partitionExtraTrials bounds the trials added when none saw a refused write.
const partitionExtraTrials = 4

// partitionTrial runs one partition trial and returns how many writes n2
// had refused (the smaller of the nodes' logged refusals and its
// joinery_fenced_writes_total).
func partitionTrial(t *testing.T, seed uint64, trial, trials int) int {
	r := rand.New(rand.NewPCG(seed, seed))
	// Four nodes: n2 is cut off from three, so it stays the minority even
	// when n1, the reading node, finishes the input and leaves before n2
	// learns it was declared dead (with n2 and n3 alone that would be an
	// even split; see cluster.DeadNotice).
	lab := newNetLab(t, 4)
	f := newFleet(t, seed, withNetns(lab), withAdmin(), inTrial(trial, max(trials, trial+1)))
	f.n4 = f.start(t, 4)
	f.startReader(t)
	waitFormed(t, f, 4)
	waitLines(t, f.out, moment(r, 10000), time.Minute)
	if !f.n1.running() {
		t.Fatalf("n1 finished the input before the partition: nothing in flight to cut")
	}
	start := time.Now()
	lab.partition(2)
	f.fault()
	cutAt := lineCount(f.out)
	t.Logf("cut n2 off from n1, n3 and n4 with %d output lines written", cutAt)
	// n1, n3 and n4 declare n2 dead (memberlist, profile lan)... n1
	// may finish the input and exit first (under load the declaration
	// can take longer than the rest of the input): then n3 and n4 decide,
	// and finish checks n1's exit and the output. An exited n1 has left
	// the fleet, so a view counts it alive only while it runs.
	testutil.WaitFor(t, time.Minute, func() error {
		for _, i := range []int{0, 2, 3} {
			if i == 0 && !f.n1.running() {
				continue
			}
			st := memberStatuses(f.admin[i])
			if st == nil {
				return fmt.Errorf("n%d does not list its members", i+1)
			}
			if st["n2"] != "dead" {
				return fmt.Errorf("n%d sees n2 %q, want dead", i+1, st["n2"])
			}
			for _, peer := range []string{"n3", "n4"} {
				if st[peer] != "alive" {
					return fmt.Errorf("n%d sees %s %q, want alive (the majority side)", i+1, peer, st[peer])
				}
			}
		}
		return nil
	})
	split := time.Since(start)
	// ...and carry on: n2's keys moved. A request n1 sent n2 times
	// out (request_timeout 2s) and is retried on the key's new
	// owner, which takes a newer epoch: heal only once every
	// request sent before the split has had its retry, and the
	// output grew.
	lines := lineCount(f.out)
	time.Sleep(3 * time.Second) // one request_timeout and a margin, not a wait for a condition
	waitGrowth(t, f, lines)
	t.Logf("n1, n3 and n4 saw n2 dead after %v; output grew again (%d lines) after %v; n2 sees %d alive members",
		split.Round(time.Millisecond), lineCount(f.out), time.Since(start).Round(time.Millisecond), aliveMembers(f.admin[1]))
	if err := lab.heal(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	// The requests n1 sent n2 during the partition arrive once it
	// heals, with TCP's next retransmission (seen 4-6 s after the heal):
	// wait, bounded, for their refused writes while n2 runs.
	fencedMetric := 0
	for time.Since(healed) < 20*time.Second {
		fencedMetric = metricSum(f.admin[1], "joinery_fenced_writes_total")
		if fencedMetric > 0 && fencedWrites(f.dir) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("healed after %v; n2 refused %d writes (metric) within %v of the heal", healed.Sub(start).Round(time.Millisecond), fencedMetric, time.Since(healed).Round(time.Millisecond))
	// After the heal the views merge (the Provider rejoins members it saw
	// die), and n2 learns that the others declared it dead: protoactor on
	// them blocks its member ID for good, so n2's /healthz fails and a
	// supervisor would restart it. n3 and n4, on the majority side, stay
	// healthy although n2 may have declared them dead too.
	testutil.WaitFor(t, 45*time.Second, func() error {
		if code, body := healthz(f.admin[1]); code != http.StatusServiceUnavailable || !strings.Contains(body, "declared dead") {
			return fmt.Errorf("n2 /healthz = %d %q, want 503 declared dead", code, body)
		}
		return nil
	})
	for _, i := range []int{2, 3} {
		if code, body := healthz(f.admin[i]); code != http.StatusOK {
			t.Errorf("n%d (majority side) /healthz = %d %q, want 200", i+1, code, body)
		}
	}
	t.Logf("n2 reports itself declared dead %v after the heal; n3 and n4 healthy", time.Since(healed).Round(time.Millisecond))
	f.finish(t)
	// n4, on the majority side, is still healthy once the output is
	// complete (finish stopped n2 and n3): a verdict that rests on a
	// minority waits cluster.Config.MinorityConfirm and is dropped when
	// the views converge (see cluster.Provider.confirmRestart).
	if code, body := healthz(f.admin[3]); code != http.StatusOK {
		t.Errorf("n4 (majority side) /healthz = %d %q at the end, want 200", code, body)
	}
	f.n4.term()
	logged := fencedWrites(f.dir)
	t.Logf("refused (fenced) writes: %d in the nodes' logs, %d by n2's joinery_fenced_writes_total", logged, fencedMetric)
	return min(logged, fencedMetric)
}

// waitGrowth waits until the output has more than lines lines, or n1, the
// reading node, has exited: a finished n1 writes nothing more, and one
// that wrote its last output may still be stopping (seen under load: the
// whole output written before the majority had declared the cut-off nodes
// dead, n1 exiting 14 s into the wait).
func waitGrowth(t *testing.T, f *fleet, lines int) {
	t.Helper()
	testutil.WaitFor(t, scaled(time.Minute), func() error {
		if c := lineCount(f.out); c <= lines && f.n1.running() && !f.complete() {
			return fmt.Errorf("%s has %d lines, want > %d while n1 runs (and the table is not complete yet)", f.out, c, lines)
		}
		return nil
	})
}

// complete reports whether the changelog written so far already replays
// to the true join: then there is nothing left to grow, even while n1
// still runs (the retries to the keys' new owners can write every output
// before the whole majority has declared the cut-off nodes dead; seen in
// PartitionTwoOfFive: 42,026 of 42,026 lines when the check began, and n1,
// its input done, still running).
func (f *fleet) complete() bool {
	b, err := os.ReadFile(f.out)
	if err != nil {
		return false
	}
	whole, _ := linefile.Complete(b) // n1 may be writing
	got, _, _, err := tableOf(whole)
	return err == nil && maps.Equal(got, f.want)
}

// waitFormed waits until each of the fleet's first n nodes lists all n
// alive. The reading node starts last and is the others' seed, so the
// others join it with their retries while it already reads: a partition
// cut before a node joined would cut off a node no one knew, which no one
// can declare dead (seen: n2 cut off with 192 lines written, before its
// join retry, and a healthy n2 after the heal).
func waitFormed(t *testing.T, f *fleet, n int) {
	t.Helper()
	testutil.WaitFor(t, time.Minute, func() error {
		for i := range n {
			st := memberStatuses(f.admin[i])
			for j := range n {
				if name := fmt.Sprint("n", j+1); st[name] != "alive" {
					return fmt.Errorf("n%d sees %s %q, want alive (the fleet formed)", i+1, name, st[name])
				}
			}
		}
		return nil
	})
}

// healthz is a node's /healthz status and body (0 when it does not answer).
func healthz(base string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(base + "/healthz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// aliveMembers is how many members a node's admin API lists as alive (-1
// when it does not answer).
func aliveMembers(base string) int {
	st := memberStatuses(base)
	if st == nil {
		return -1
	}
	n := 0
	for _, s := range st {
		if s == "alive" {
			n++
		}
	}
	return n
}

// memberStatuses is each member's status by node name as a node's admin
// API lists them (nil when it does not answer).
func memberStatuses(base string) map[string]string {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(base + "/v1/members")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var ms []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ms); err != nil {
		return nil
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		out[m.Name] = m.Status
	}
	return out
}

// metricSum adds up the values of a metric's series on a node's /metrics
// (0 when it has none or does not answer).
func metricSum(base, name string) int {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

// TestChaosPartitionTwoOfFive cuts two of five nodes, n2 and n3, off from
// the other three (n2 and n3 still reach each other, and Redis), keeps
// them cut off until n1, n4 and n5 have declared both dead and carried on,
// then heals. Both sides may have declared the other dead; only the
// cut-off pair, declared dead by a strict majority of each one's live
// peers, may report that it must restart: n4 and n5 stay healthy
// throughout, although n2 and n3 declared them dead too (two of their four
// peers, not a majority). The final table equals the fault-free one,
// nothing is lost.
func TestChaosPartitionTwoOfFive(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(950 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { partitionTwoOfFiveTrial(t, seed, trial, n) })
	}
}

func partitionTwoOfFiveTrial(t *testing.T, seed uint64, trial, trials int) {
	r := rand.New(rand.NewPCG(seed, seed))
	lab := newNetLab(t, 5)
	f := newFleet(t, seed, withNetns(lab), withAdmin(), inTrial(trial, trials))
	f.n4 = f.start(t, 4)
	f.n5 = f.start(t, 5)
	f.startReader(t)
	waitFormed(t, f, 5)
	waitLines(t, f.out, moment(r, 10000), time.Minute)
	if !f.n1.running() {
		t.Fatalf("n1 finished the input before the partition: nothing in flight to cut")
	}
	start := time.Now()
	lab.partition(2, 3)
	f.fault()
	t.Logf("cut n2 and n3 off from n1, n4 and n5 with %d output lines written", lineCount(f.out))
	majority := []int{0, 3, 4}
	testutil.WaitFor(t, time.Minute, func() error {
		for _, i := range majority {
			if i == 0 && !f.n1.running() {
				continue // finished: it has left the fleet
			}
			st := memberStatuses(f.admin[i])
			if st == nil {
				return fmt.Errorf("n%d does not list its members", i+1)
			}
			for _, cut := range []string{"n2", "n3"} {
				if st[cut] != "dead" {
					return fmt.Errorf("n%d sees %s %q, want dead", i+1, cut, st[cut])
				}
			}
			for _, peer := range []string{"n4", "n5"} {
				if st[peer] != "alive" {
					return fmt.Errorf("n%d sees %s %q, want alive (the majority side)", i+1, peer, st[peer])
				}
			}
		}
		return nil
	})
	t.Logf("the majority saw n2 and n3 dead after %v", time.Since(start).Round(time.Millisecond))
	lines := lineCount(f.out)
	time.Sleep(3 * time.Second) // one request_timeout and a margin: the requests sent the cut-off pair are retried on the keys' new owners
	waitGrowth(t, f, lines)
	if err := lab.heal(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	testutil.WaitFor(t, 45*time.Second, func() error {
		for _, i := range []int{1, 2} {
			if code, body := healthz(f.admin[i]); code != http.StatusServiceUnavailable || !strings.Contains(body, "declared dead") {
				return fmt.Errorf("n%d /healthz = %d %q, want 503 declared dead", i+1, code, body)
			}
		}
		return nil
	})
	t.Logf("n2 and n3 report themselves declared dead %v after the heal", time.Since(healed).Round(time.Millisecond))
	for _, i := range []int{3, 4} {
		if code, body := healthz(f.admin[i]); code != http.StatusOK {
			t.Errorf("n%d (majority side) /healthz = %d %q, want 200", i+1, code, body)
		}
	}
	f.finish(t)
	for _, i := range []int{3, 4} {
		if code, body := healthz(f.admin[i]); code != http.StatusOK {
			t.Errorf("n%d (majority side) /healthz = %d %q at the end, want 200", i+1, code, body)
		}
	}
	f.n4.term()
	f.n5.term()
}
