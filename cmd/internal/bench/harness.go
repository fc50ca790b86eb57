package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Systems the harness can run for a workload.
const (
	SysCore      = "core"       // decode + route + joins state machines, one goroutine
	SysNode      = "node"       // the full node in-process, embedded store
	SysNodeRedis = "node+redis" // the full node on a redis-server with RDB snapshots on
	// SysNode3Redis is node+redis with two more nodes in the same process,
	// without sources: the one reading node's keys spread over three
	// nodes, most requests remote (target: three nodes on one machine >=
	// 0.6 x one node). Not in the default systems: the fleet reads
	// co-partitioned streams (SysNode3Streams).
	SysNode3Redis = "3nodes+redis"
	// SysNodeStreams is one node reading the input from shard streams
	// partitioned by the join key (streams.go), state on the same Redis;
	// SysNode3Streams is three nodes in the same process running the same
	// job, each reading the shards of the key groups it hosts, so events
	// reach their key actors without a network hop (target: three nodes
	// >= 0.8 x one node per CPU-second, ThreeNodesRatio over
	// SysNodeStreams).
	SysNodeStreams  = "node+streams"
	SysNode3Streams = "3nodes+streams"
	// SysNodeRedisBudget is node+redis with state.memory_budget a quarter
	// of the working set: the live keys' accounted bytes at the
	// end of an unmeasured run with the default budget (every key live),
	// divided by BudgetWorkingSet. The budget passivates the least recently
	// used keys and their next change reactivates them from Redis; its
	// events per CPU-second over node+redis's is BudgetRatio.
	SysNodeRedisBudget = "node+redis+budget"
)

// DefaultSystems are the systems a run without Options.Systems runs.
var DefaultSystems = []string{SysCore, SysNode, SysNodeRedis, SysNodeStreams, SysNode3Streams, SysNodeRedisBudget, SysNodeKafka, SysNodeKafkaEOS}

// BudgetWorkingSet is how many times the working set exceeds the memory
// budget on SysNodeRedisBudget.
const BudgetWorkingSet = 4

// Options configure a harness run.
type Options struct {
	Scale     Scale
	Rounds    int      // engine/baseline alternations; the median is reported
	Workloads []string // names; empty: all
	Systems   []string // empty: DefaultSystems
	Seed      uint64
	Dir       string    // temp files; empty: a fresh os.MkdirTemp
	Log       io.Writer // progress; nil: silent
	// NoLatency skips the open-loop latency runs.
	NoLatency bool
}

// Run runs the benchmark and returns its report. A checksum mismatch marks
// a result invalid; it is not an error.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if len(o.Systems) == 0 {
		o.Systems = DefaultSystems
	}
	h := &harness{ctx: ctx, o: o, dir: o.Dir}
	h.logf = func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	if h.dir == "" {
		d, err := os.MkdirTemp("", "joinery-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		h.dir = d
	}
	rep := &Report{Scale: o.Scale.Name, Rounds: o.Rounds, GoVersion: runtime.Version(), NumCPU: runtime.NumCPU(), Started: time.Now()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	ws, err := findWorkloads(o.Workloads)
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(o.Systems, func(s string) bool { return s != SysCore && s != SysNode && s != SysNodeKafka && s != SysNodeKafkaEOS }) {
		rdir := filepath.Join(h.dir, "redis")
		if err := os.MkdirAll(rdir, 0o755); err != nil {
			return nil, err
		}
		if h.redis, err = startRedis(rdir); err != nil {
			return nil, err
		}
		if h.redis != nil {
			defer h.redis.Stop()
		}
	}
	for _, w := range ws {
		if err := h.workload(w, rep); err != nil {
			return nil, err
		}
	}
	rep.Targets = targets(rep)
	return rep, nil
}

// harness is one Run's state: its options, scratch directory and Redis,
// and the run counter that gives every engine run its own ID.
type harness struct {
	ctx   context.Context
	o     Options
	dir   string
	redis *redisServer // nil: no system needs it, or redis-server is not installed
	runID int
	logf  func(format string, args ...any)
}

// findWorkloads is the workloads named (all when none is).
func findWorkloads(names []string) ([]*Workload, error) {
	if len(names) == 0 {
		return Workloads, nil
	}
	var ws []*Workload
	for _, name := range names {
		w, err := Find(name)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// workload generates w's input and runs it on every system: the
// throughput rounds, the ratios to the systems before it, the latency run.
func (h *harness) workload(w *Workload, rep *Report) error {
	h.logf("%s: generating (%s scale)", w.Name, h.o.Scale.Name)
	c0 := cpuNow()
	in := w.Generate(h.o.Scale, h.o.Seed)
	gen := cpuNow() - c0
	byEngine := map[string]*Result{}
	var streams *streamInput // the stream systems' input, made once per workload
	for _, sys := range h.o.Systems {
		r := Result{Workload: w.Name, System: sys, Doc: w.Doc, Events: len(in.Lines), InputLines: len(in.Lines),
			Rounds: h.o.Rounds, GenCPUSec: gen.Seconds(), SkewOf: w.SkewOf, HotKeyShare: in.HotKeyShare}
		var lines [][]byte
		var err error
		switch sys {
		case SysCore:
			lines = in.Lines
			err = runRounds(&r, h.o.Rounds, gen, h.logf, nil,
				func(p func(int)) (RunResult, error) { return w.Core(lines, p), nil },
				func(p func(int)) (RunResult, error) { return w.Baseline(lines, p), nil })
			if err != nil {
				err = fmt.Errorf("%s/%s: %w", w.Name, sys, err)
			}
		case SysNode, SysNodeRedis, SysNode3Redis, SysNodeRedisBudget:
			lines, err = h.nodeRounds(&r, w, in, gen)
		case SysNodeStreams, SysNode3Streams:
			lines, err = h.streamsRounds(&r, w, in, gen, &streams)
		case SysNodeKafka, SysNodeKafkaEOS:
			lines, err = h.kafkaRounds(&r, w, in, gen) // kafka.go
		default:
			err = fmt.Errorf("bench: unknown system %q", sys)
		}
		if err != nil {
			return err
		}
		compare(&r, byEngine)
		if sys != SysCore {
			r.Engine.HeapBytes, r.Engine.LiveKeys, r.Engine.BytesPerLiveKey = 0, 0, 0
		}
		if sys != SysCore && sys != SysNode && sys != SysNode3Redis && sys != SysNodeKafka && sys != SysNodeKafkaEOS && r.Skipped == "" {
			r.Redis.RDBDumpBytes = h.redis.dumpBytes()
		}
		if r.Skipped == "" {
			if err := h.latency(&r, w, lines); err != nil {
				return err
			}
		}
		if r.SkewOf != "" && r.Skipped == "" {
			for _, u := range rep.Results {
				if u.Workload == r.SkewOf && u.System == sys && u.Skipped == "" {
					x := ratio(r.Engine.EventsPerCPUSec, u.Engine.EventsPerCPUSec)
					r.SkewRatio = &x
				}
			}
		}
		byEngine[sys] = &r
		rep.Results = append(rep.Results, r)
	}
	return nil
}

// compare sets r's ratios to the results of the same workload on the
// systems run before it: the snapshot cost (node+redis over node), three
// nodes over one, and the memory budget's cost.
func compare(r *Result, byEngine map[string]*Result) {
	if r.Skipped != "" {
		return
	}
	if r.System == SysNodeRedis {
		if n := byEngine[SysNode]; n != nil && n.Skipped == "" {
			c := math.Round((1-r.Engine.EventsPerCPUSec/n.Engine.EventsPerCPUSec)*1000) / 1000
			cw := math.Round((1-r.Engine.EventsPerWallSec/n.Engine.EventsPerWallSec)*1000) / 1000
			r.SnapshotCost, r.SnapshotCostWall = &c, &cw
		}
	}
	if one := map[string]string{SysNode3Redis: SysNodeRedis, SysNode3Streams: SysNodeStreams}[r.System]; one != "" {
		if n := byEngine[one]; n != nil && n.Skipped == "" {
			x := math.Round(r.Engine.EventsPerCPUSec/n.Engine.EventsPerCPUSec*1000) / 1000
			r.ThreeNodesRatio = &x
		}
	}
	if r.System == SysNodeRedisBudget {
		if n := byEngine[SysNodeRedis]; n != nil && n.Skipped == "" {
			x := math.Round(r.Engine.EventsPerCPUSec/n.Engine.EventsPerCPUSec*1000) / 1000
			r.BudgetRatio = &x
		}
	}
	if r.System == SysNodeKafkaEOS {
		if n := byEngine[SysNodeKafka]; n != nil && n.Skipped == "" {
			c := math.Round((1-r.Engine.EventsPerCPUSec/n.Engine.EventsPerCPUSec)*1000) / 1000
			r.EOSCost = &c
		}
	}
}

// latency runs the open-loop latency run r's system has, at LoadShare of
// the closed-loop rate just measured, over lines, or says why there is
// none.
func (h *harness) latency(r *Result, w *Workload, lines [][]byte) error {
	sys := r.System
	switch {
	case h.o.NoLatency:
		r.LatencySkipped = "not asked for (-latency=false)"
	case sys == SysNodeRedisBudget || sys == SysNode3Redis || sys == SysNodeStreams || sys == SysNode3Streams:
		r.LatencySkipped = "no latency run on this system (its figure is the throughput ratio; the node latency run feeds one node's stdin)"
	case (sys == SysNodeKafka || sys == SysNodeKafkaEOS) && w.NodeLatency:
		if err := h.openLoop(r, w, func(rate float64) (Latency, Checksum, error) {
			return kafkaLatency(h.ctx, w, lines, sys == SysNodeKafkaEOS, h.runID, rate) // kafka.go
		}); err != nil {
			return err
		}
	case sys == SysCore && w.Engine != nil:
		h.logf("  %s/%s: open-loop latency run at %.0f ev/s", w.Name, sys, LoadShare*r.Engine.EventsPerWallSec)
		runtime.GC()
		gc0 := readGCStats()
		lat, res := OpenLoop(w.Engine(), lines, LoadShare*r.Engine.EventsPerWallSec)
		lat.setGC(gc0)
		if !res.Check.Equal(r.want) {
			lat.Invalid = fmt.Sprintf("output %v, baseline %v", res.Check, r.want)
		}
		r.Latency = &lat
	case sys != SysCore && w.NodeLatency:
		addr := ""
		if sys == SysNodeRedis {
			if err := h.redis.Flush(); err != nil {
				return err
			}
			addr = h.redis.Addr
		}
		if err := h.openLoop(r, w, func(rate float64) (Latency, Checksum, error) {
			return nodeLatency(h.ctx, w, lines, addr, h.runID, rate)
		}); err != nil {
			return err
		}
	default:
		r.LatencySkipped = "no latency run for this workload on this system (core level: every workload; node levels: cdc)"
	}
	if r.Latency != nil {
		r.Latency.MaxRate = r.Engine.EventsPerWallSec
		r.Latency.Measures = "from " + w.LatencyFrom + " to the output"
	}
	return nil
}

// openLoop runs a node level's open-loop latency run (run at rate, LoadShare
// of the closed-loop rate just measured) as r's, its output checked
// against the baseline's.
func (h *harness) openLoop(r *Result, w *Workload, run func(rate float64) (Latency, Checksum, error)) error {
	rate := LoadShare * r.Engine.EventsPerWallSec
	h.logf("  %s/%s: open-loop latency run at %.0f ev/s", w.Name, r.System, rate)
	h.runID++
	gc0 := readGCStats()
	lat, check, err := run(rate)
	if err != nil {
		return fmt.Errorf("%s/%s latency: %w", w.Name, r.System, err)
	}
	lat.setGC(gc0)
	if !check.Equal(r.want) {
		lat.Invalid = fmt.Sprintf("output %v, baseline %v", check, r.want)
	}
	r.Latency = &lat
	return nil
}

// runRounds alternates engine and baseline runs (the order flips each
// round) and fills r with medians and the checksum verdict.
func runRounds(r *Result, rounds int, gen time.Duration, logf func(string, ...any), redis *redisServer,
	engine, baseline func(func(int)) (RunResult, error)) error {
	var es, bs []sample
	for i := range rounds {
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		for _, isEngine := range order {
			if isEngine {
				s, err := measure(redis, engine)
				if err != nil {
					return err
				}
				es = append(es, s)
			} else {
				s, err := measure(nil, baseline)
				if err != nil {
					return err
				}
				bs = append(bs, s)
			}
		}
		perEv := func(n uint64) float64 { return float64(n) / float64(max(r.Events, 1)) }
		logf("  %s/%s round %d: engine %.0f ev/cpu-s (%.1f allocs/ev, %.0f B/ev), baseline %.0f ev/cpu-s (%.1f allocs/ev, %.0f B/ev)", r.Workload, r.System, i+1,
			float64(r.Events)/es[i].cpu.Seconds(), perEv(es[i].mallocs), perEv(es[i].allocBytes),
			float64(r.Events)/bs[i].cpu.Seconds(), perEv(bs[i].mallocs), perEv(bs[i].allocBytes))
	}
	r.Valid = true
	want := bs[0].res.Check
	for i := range es {
		if !es[i].res.Check.Equal(want) || !bs[i].res.Check.Equal(want) {
			r.Valid = false
			r.Invalid = fmt.Sprintf("round %d: engine %v, baseline %v (first baseline %v)", i+1, es[i].res.Check, bs[i].res.Check, want)
			break
		}
		if es[i].res.Late != 0 || es[i].res.Rejected != 0 {
			r.Valid = false
			r.Invalid = fmt.Sprintf("round %d: engine dropped %d late and rejected %d records", i+1, es[i].res.Late, es[i].res.Rejected)
			break
		}
	}
	r.Checksum, r.want = es[0].res.Check.String(), want
	r.Outputs, r.ResultRows = es[0].res.Check.Outs, es[0].res.Check.Rows
	r.Engine = figures(es, r.Events, gen)
	r.Baseline = figures(bs, r.Events, gen)
	r.Ratio = ratio(r.Engine.EventsPerCPUSec, r.Baseline.EventsPerCPUSec)
	r.RatioWithGen = ratio(r.Engine.EventsPerCPUSecWithGen, r.Baseline.EventsPerCPUSecWithGen)
	if redis != nil {
		var bps, bpe, saves, srv, proc []float64
		for _, s := range es {
			bps = append(bps, s.res.RedisInBytes/max(s.wall.Seconds(), 1e-9))
			bpe = append(bpe, s.res.RedisInBytes/float64(r.Events))
			saves = append(saves, s.res.RDBSaves)
			srv = append(srv, s.redisCPU.Seconds()*1e6/float64(r.Events))
			proc = append(proc, (s.cpu-s.redisCPU).Seconds()*1e6/float64(r.Events))
		}
		r.Redis = &RedisFigures{StateBytesPerSec: median(bps), StateBytesPerEvent: median(bpe), RDBSaves: median(saves),
			ServerMicrosPerEvent: median(srv), NodeMicrosPerEvent: median(proc), Commands: es[len(es)-1].res.RedisCommands}
	}
	return nil
}
