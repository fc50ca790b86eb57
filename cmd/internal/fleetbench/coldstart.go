package fleetbench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/joinery/joinery/internal/testutil"
)

// coldStart runs a cold-start row (Config.ColdStart): msgs are written to
// the shard streams, then n nodes start on them; the row's time is from
// their start until every entry of src's shard streams is acknowledged,
// and its EventsPerSec the input records over that time, so Efficiency is
// T(1)/(N×T(N)). The nodes' CPU is all they used, from their start.
func (c Config) coldStart(ctx context.Context, res Result, run int, src string, w *workload, n int, dir, srcs string, msgs []msg, f feeder, inf *infra) (Result, error) {
	res.Mode = ModeColdStart
	if src == SourceKafka {
		return res, errors.New("fleetbench: the cold-start rows are for the shard-stream sources (redis-streams, copartitioned, repartitioned)")
	}
	if err := produceAll(ctx, f, msgs); err != nil {
		return res, err
	}
	c.logf("%s from %s, %d node(s): cold start on %d records over %d partitions per table", w.name, src, n, len(msgs), c.Partitions)
	s0, err := c.read(nil, inf, inCount{}) // the servers' CPU before: they outlive the run
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	nodes, err := c.startFleet(ctx, w, run, n, dir, srcs, inf.brokerAddr, inf.rc.Addrs)
	defer func() { c.stopFleet(nodes) }()
	if err != nil {
		return res, err
	}
	c.logf("%s from %s, %d node(s): every node sees the fleet %.2f s after the start", w.name, src, n, time.Since(t0).Seconds())
	err = testutil.Poll(ctx, c.Timeout, pollEvery, "every entry acknowledged", func() error {
		for _, nd := range nodes {
			if !nd.proc.Running() {
				return fmt.Errorf("%s exited (see %s)", nd.proc.Name, nd.proc.Log)
			}
		}
		time.Sleep(50 * time.Millisecond)
		return allAcked(ctx, inf.rdb, w, run, c.Partitions, src)
	})
	took := time.Since(t0)
	if err != nil {
		return res, fmt.Errorf("%w (node logs in %s)", err, dir)
	}
	s1, err := c.read(nodes, inf, inCount{})
	if err != nil {
		return res, err
	}
	c.setWindow(&res, s0, s1, float64(len(msgs)), took.Seconds(), n) // s0 has no nodes: theirs from their start
	res.EventsPerSec = res.Events / res.WindowS
	c.logf("%s from %s, %d node(s): cold start done in %.2f s", w.name, src, n, res.WindowS)
	return res, nil
}
