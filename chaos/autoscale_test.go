package chaos

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/testutil"
)

// TestChaosAutoscale scales the chart's fleet shape (6 shard streams
// partitioned by the join key, TestChaosKillShardReaderCoPartitioned's)
// on its backlog the way the chart's KEDA ScaledObject does: the signal is
// sum(joinery_source_lag_records) over the live nodes' /metrics (what the
// ScaledObject's Prometheus query sums; the nodes read their lag every
// 500 ms here), the replicas asked for ceil(backlog / scaleLagPerReplica)
// within [2, 4] (4: below the 6 shards). Two nodes, each paced at
// scaleNodeRate changes per second, start on empty streams; a burst of
// three fifths of the input makes the signal ask for 4, and n3 and n4 are
// started; the rest trickles in (about 500 changes per second)
// and, once the signal asks for 2, the fleet scales down as the
// ScaledObject's policy does, one pod at a time from the highest ordinal:
// SIGTERM n4 (it drains: hands its shards and key groups over), wait for
// its exit and for its shards to spread, then n3. The changelogs, merged in
// each row's output order, replay to the true join: nothing lost, no row
// under two ids, every file in whole lines.
func TestChaosAutoscale(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(3000 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { shardTrial(t, seed, trial, n, shapeJoinKey, faultAutoscale) })
	}
}

// The autoscaling scenario's ScaledObject: lagPerReplica, minReplicas and
// maxReplicas (the chart caps it at the shards, 6 here); and each node's
// pace (rate, changes per second): two nodes drain the 12,000-change burst
// in 4 s or more, four in half that.
const (
	scaleLagPerReplica = 2000
	scaleMin, scaleMax = 2, 4
	scaleNodeRate      = 1500
)

// scaleArgs are the autoscaled nodes' extra arguments: their lag is read
// every 500 ms (15 s by default), so the signal follows the backlog
// within a CI-sized run.
var scaleArgs = []string{"--source-lag-every", "500ms"}

// kedaReplicas is the replica count a ScaledObject with an AverageValue
// trigger asks for at backlog lag: the HPA's ceil(lag / perReplica), within
// [lo, hi].
func kedaReplicas(lag float64, perReplica, lo, hi int) int {
	return min(hi, max(lo, int(math.Ceil(lag/float64(perReplica)))))
}

// backlog is the ScaledObject's signal: the sum of every
// joinery_source_lag_records sample on the admin servers at addrs.
func backlog(addrs []string) (float64, error) {
	sum := 0.0
	for _, a := range addrs {
		resp, err := http.Get("http://" + a + "/metrics")
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if !strings.HasPrefix(l, "joinery_source_lag_records{") {
				continue
			}
			v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			if err != nil {
				resp.Body.Close()
				return 0, fmt.Errorf("%s: %q: %v", a, l, err)
			}
			sum += v
		}
		resp.Body.Close()
	}
	return sum, nil
}

// autoscaleFleet runs the autoscaling scenario on names (n1 to n4, n1 and
// n2 running and spread; admins their admin addresses): burst feeds the
// backlog, feed the rest until its stop channel closes after the
// scale-down. It returns a recovery watch started at the burst and how long
// the scaling took.
func autoscaleFleet(t *testing.T, dir string, procs map[string]*proc, names, admins []string, out func(string) string,
	spread func(...string), burst func() error, feed func(stop <-chan struct{}) error) (*recovery, time.Duration) {
	t.Helper()
	var outs []string
	for _, n := range names {
		outs = append(outs, out(n))
	}
	replicas := 2
	signal := func() (float64, int) {
		lag, err := backlog(admins[:replicas])
		if err != nil {
			t.Logf("backlog: %v", err)
			return -1, replicas
		}
		return lag, kedaReplicas(lag, scaleLagPerReplica, scaleMin, scaleMax)
	}
	overall := watchRecovery(outs...)
	began := time.Now()
	if err := burst(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	fed := make(chan error, 1)
	go func() { fed <- feed(stop) }()
	var lag, peak float64
	testutil.WaitFor(t, scaled(time.Minute), func() error {
		l, want := signal()
		peak = max(peak, l)
		if want < scaleMax {
			return fmt.Errorf("the backlog %.0f asks for %d replicas (at most %.0f so far)", l, want, peak)
		}
		lag = l
		return nil
	})
	up := time.Now()
	for _, n := range names[2:] {
		procs[n] = startProcBin(t, dir, n, n+".yaml", "", scaleArgs)
	}
	replicas = 4
	spread(names...)
	t.Logf("scaled 2 -> 4 at a backlog of %.0f records, %s after the burst; the shards spread over the four %s after", lag,
		up.Sub(began).Round(time.Millisecond), time.Since(up).Round(time.Millisecond))
	testutil.WaitFor(t, scaled(2*time.Minute), func() error {
		l, want := signal()
		if want > scaleMin {
			return fmt.Errorf("the backlog %.0f asks for %d replicas", l, want)
		}
		lag = l
		return nil
	})
	down := time.Now()
	t.Logf("the backlog fell to %.0f records %s after scaling up: scaling down", lag, down.Sub(up).Round(time.Millisecond))
	for i := 3; i >= 2; i-- {
		n := names[i]
		rec := watchRecovery(outs...)
		at := time.Now()
		procs[n].term()
		replicas = i
		spread(names[:i]...)
		rt := rec.done()
		t.Logf("%s drained and stopped; its shards spread over the %d others %s after SIGTERM; longest output stall %s",
			n, i, time.Since(at).Round(time.Millisecond), time.Duration(max(rt.stall, 0)).Round(time.Millisecond))
	}
	took := time.Since(began)
	close(stop)
	if err := <-fed; err != nil && err != errInputRanOut {
		t.Fatal(err)
	} else if err == errInputRanOut {
		t.Logf("the input ran out before the scale-down ended (%s)", took.Round(time.Millisecond))
	}
	return overall, took
}
