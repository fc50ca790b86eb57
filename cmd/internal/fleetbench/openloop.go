package fleetbench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// openLoop is the open-loop latency run at a fraction of the measured
// rate (or the trickle's), once the backlog's outputs are written: records
// in counts what the sources read, and the joins and sink writes behind
// them may still be running.
func (c Config) openLoop(ctx context.Context, res *Result, nodes []*node, inf *infra, read func() (sample, error), run int, f feeder, w *workload) error {
	n := res.Nodes
	idle, err := c.quiet(ctx, nodes, inf)
	res.IdleNodeCPU = idle
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		c.logf("%v; measuring latency anyway", err)
	}
	l0, err := read()
	if err != nil {
		return err
	}
	rate := res.EventsPerSec * c.LatencyLoad
	if c.Trickle {
		rate = c.TrickleRate
	}
	lf := f
	if kf, ok := f.(kafkaFeeder); ok {
		// The probes go out without the backlog client's linger: the
		// feeder's own wait is not the service's latency.
		pcl, err := kgo.NewClient(kgo.SeedBrokers(inf.brokerAddr), kgo.ProducerLinger(0))
		if err != nil {
			return err
		}
		defer pcl.Close()
		kf.cl = pcl
		lf = kf
	}
	tracePath := fmt.Sprintf("%s-%s-%s.trace", c.TraceOut, res.Source, res.Workload)
	var traced chan error
	if c.Trickle && c.TraceOut != "" {
		traced = c.trace(ctx, nodes[0].admin, tracePath)
	}
	pw := &probeWindow{c: c, ctx: ctx, read: read, admin: nodes[0].admin,
		profile: strings.TrimSuffix(c.profilePath(res.Workload, n), ".pprof") + "-latency.pprof"}
	lat, toSink, rate, err := c.latency(ctx, run, lf, inf.brokerAddr, w, rate, pw.probing)
	pw.figures(res)
	if traced != nil {
		if err := <-traced; err != nil {
			c.logf("trace: %v", err)
		} else {
			c.logf("execution trace of n1 over the trickle in %s (go tool trace)", tracePath)
		}
	}
	if err != nil {
		return err
	}
	if l1, err := read(); err == nil {
		cpu := (l1.nodeCPU - l0.nodeCPU) / l1.t.Sub(l0.t).Seconds() / float64(n)
		res.LatencyNodeCPU = cpu
		res.LatencyNodeCPUUtil = cpu / c.quota()
	}
	res.LatencyRate, res.LatencySamples = rate, len(lat)
	if len(lat) > 0 {
		res.P50Ms, res.P99Ms, res.MaxMs = Percentile(lat, 0.5), Percentile(lat, 0.99), Percentile(lat, 1)
		res.SinkP50Ms, res.SinkP99Ms, res.SinkMaxMs = Percentile(toSink, 0.5), Percentile(toSink, 0.99), Percentile(toSink, 1)
	}
	return nil
}

// trace fetches an execution trace of the node at admin over the middle of
// the latency run's probes (its consumer takes 2 s to start) to path; the
// channel says how it went.
func (c Config) trace(ctx context.Context, admin, path string) chan error {
	traced := make(chan error, 1)
	go func() {
		select {
		case <-time.After(2*time.Second + c.LatencyFor/4):
		case <-ctx.Done():
		}
		traced <- fetchTo(ctx, admin+fmt.Sprintf("/debug/pprof/trace?seconds=%d", max(1, int(c.LatencyFor.Seconds()/2))), path)
	}()
	return traced
}

// probeWindow is the latency run's probing window (the 2 s the output
// consumer takes to start are not in it): the fleet's samples at its start
// and end, for the node CPU per record read while probing, and with
// Config.ProfileLatency a CPU profile of n1 over its middle.
type probeWindow struct {
	c        Config
	ctx      context.Context
	read     func() (sample, error)
	admin    string // n1's admin address
	profile  string // where the profile goes
	p0, p1   *sample
	profiled chan error
}

// probing is called as the probes start and once they end.
func (p *probeWindow) probing(start bool) {
	s, err := p.read()
	if err != nil {
		return
	}
	if !start {
		p.p1 = &s
		return
	}
	p.p0 = &s
	if p.c.ProfileLatency && p.c.ProfileOut != "" {
		p.profiled = make(chan error, 1)
		go func() {
			select {
			case <-time.After(p.c.LatencyFor / 4):
			case <-p.ctx.Done():
			}
			p.profiled <- profileFor(p.ctx, p.admin, p.profile, max(1, int(p.c.LatencyFor.Seconds()/2)))
		}()
	}
}

// figures waits for the profile and sets res's figures of the window.
func (p *probeWindow) figures(res *Result) {
	if p.profiled != nil {
		if err := <-p.profiled; err != nil {
			p.c.logf("latency cpu profile: %v", err)
		} else {
			p.c.logf("cpu profile of n1 over the latency run (%d nodes) in %s", res.Nodes, p.profile)
		}
	}
	if p.p0 != nil && p.p1 != nil && p.p1.in > p.p0.in {
		p0, p1 := p.p0, p.p1
		res.LatencyCPUPerEventUs = (p1.nodeCPU - p0.nodeCPU) / (p1.in - p0.in) * 1e6
		res.LatencyProbeNodeCPU = (p1.nodeCPU - p0.nodeCPU) / p1.t.Sub(p0.t).Seconds() / float64(res.Nodes)
		res.LatencyGCCycles, res.LatencyGCShare = gcFigures(*p0, *p1)
	}
}
