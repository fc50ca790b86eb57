package chaos

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/testutil"
)

// TestChaosRollingRestart restarts every node of the Helm chart's default
// fleet (three nodes reading 6 shard streams partitioned by the join key,
// TestChaosKillShardReaderCoPartitioned's shape) one at a time while the
// input is fed, as `helm upgrade` rolls a StatefulSet: from the highest
// ordinal down, each node is sent SIGTERM (it drains: hands its shards and
// key groups over and leaves), its exit awaited, started again, and its
// /readyz (the chart's readiness probe) awaited before the next. The input
// must still be flowing when the last node is ready again. The changelogs,
// merged in each row's output order, replay to the true join: nothing lost,
// no row under two ids, and every file ends in whole lines (no node was
// killed). Each restart's longest output stall is logged; the summary's max
// stall is the longest over all of them.
func TestChaosRollingRestart(t *testing.T) {
	n := trials(1)
	for trial := range n {
		seed := uint64(2800 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { shardTrial(t, seed, trial, n, shapeJoinKey, faultRolling) })
	}
}

// rollingRestart restarts names in reverse order (a StatefulSet's rolling
// update): SIGTERM, wait for the exit, start, wait until the node's admin
// address (admins, in names' order) answers /readyz with 200. feed runs
// meanwhile, in its own goroutine, until its stop channel is closed after
// the last restart. It logs each restart's times and longest output stall
// (over the files out names) and returns a recovery watch started at the
// first SIGTERM and how long the restarts took.
func rollingRestart(t *testing.T, dir string, procs map[string]*proc, names, admins []string, out func(string) string,
	feed func(stop <-chan struct{}) error) (*recovery, time.Duration) {
	t.Helper()
	t.Cleanup(func() { logTails(t, dir, names...) })
	var outs []string
	for _, n := range names {
		outs = append(outs, out(n))
	}
	total := func() int {
		s := 0
		for _, o := range outs {
			s += lineCount(o)
		}
		return s
	}
	stop := make(chan struct{})
	fed := make(chan error, 1)
	go func() { fed <- feed(stop) }()
	// Some output first, so the restarts meet a fleet at work.
	testutil.WaitFor(t, scaled(time.Minute), func() error {
		if n := total(); n < 1000 {
			return fmt.Errorf("%d output lines", n)
		}
		return nil
	})
	overall := watchRecovery(outs...)
	began := time.Now()
	for i := len(names) - 1; i >= 0; i-- {
		n := names[i]
		rec := watchRecovery(outs...)
		at, lines := time.Now(), total()
		procs[n].term()
		stopped := time.Since(at)
		procs[n] = startProc(t, dir, n, n+".yaml")
		testutil.WaitFor(t, scaled(time.Minute), func() error { return ready(admins[i]) })
		readyAt := time.Since(at)
		waitLines := total() + 1
		testutil.WaitFor(t, scaled(time.Minute), func() error {
			if got := total(); got < waitLines {
				return fmt.Errorf("the output has not grown since %s was ready (%d lines)", n, got)
			}
			return nil
		})
		rt := rec.done()
		t.Logf("restart of %s: stopped %s after SIGTERM, ready %s after it; output %d -> %d lines, longest output stall %s",
			n, stopped.Round(time.Millisecond), readyAt.Round(time.Millisecond), lines, total(), time.Duration(max(rt.stall, 0)).Round(time.Millisecond))
	}
	took := time.Since(began)
	close(stop)
	if err := <-fed; errors.Is(err, errInputRanOut) {
		t.Errorf("the input ran out before the last restart ended (%s): the restarts were not all under load", took.Round(time.Millisecond))
	} else if err != nil {
		t.Fatal(err)
	}
	return overall, took
}

// ready is nil when the admin server at addr answers /readyz with 200.
func ready(addr string) error {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/readyz: %s", addr, resp.Status)
	}
	return nil
}

// errInputRanOut is feedSlowly's error when all of its input was fed before
// stop was closed.
var errInputRanOut = errors.New("the input ran out before stop")

// feedSlowly feeds lines [from, to) with feed (feedPaced of shardTrial), 50
// lines every 100 ms (about 500 changes per second) until stop is closed,
// then the rest at once. It returns errInputRanOut (after feeding it all)
// when the input ran out first.
func feedSlowly(feed func(from, to int, pace time.Duration) error, from, to int, stop <-chan struct{}) error {
	const chunk = 50
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := from; i < to; i += chunk {
		select {
		case <-stop:
			return feed(i, to, 0)
		case <-tick.C:
		}
		if err := feed(i, min(i+chunk, to), 0); err != nil {
			return err
		}
	}
	<-stop
	return errInputRanOut
}
