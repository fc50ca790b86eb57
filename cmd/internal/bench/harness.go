package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// Systems the harness can run for a workload.
const (
	SysCore      = "core"       // decode + route + joins state machines, one goroutine
	SysNode      = "node"       // the full node in-process, embedded store
	SysNodeRedis = "node+redis" // the full node on a redis-server with RDB snapshots on
	// SysNode3Redis is node+redis with two more nodes in the same process,
	// without sources: the one ingesting node's keys spread over three
	// nodes, most requests remote (issue 7: three nodes on one machine >=
	// 0.6 x one node). Not in the default systems since issue 23 (the
	// fleet reads co-partitioned streams: SysNode3Streams).
	SysNode3Redis = "3nodes+redis"
	// SysNodeStreams is one node reading the input from shard streams
	// partitioned by the join key (streams.go), state on the same Redis;
	// SysNode3Streams is three nodes in the same process running the same
	// job, each reading the shards of the key groups it hosts, so events
	// reach their key actors without a network hop (issue 23: three nodes
	// >= 0.8 x one node per CPU-second, ThreeNodesRatio over
	// SysNodeStreams).
	SysNodeStreams  = "node+streams"
	SysNode3Streams = "3nodes+streams"
	// SysNodeRedisBudget is node+redis with state.memory_budget a quarter
	// of the working set (issue 15): the live keys' accounted bytes at the
	// end of an unmeasured run with the default budget (every key live),
	// divided by BudgetWorkingSet. The budget passivates the least recently
	// used keys and their next change reactivates them from Redis; its
	// events per CPU-second over node+redis's is BudgetRatio.
	SysNodeRedisBudget = "node+redis+budget"
)

// DefaultSystems are the systems a run without Options.Systems runs.
var DefaultSystems = []string{SysCore, SysNode, SysNodeRedis, SysNodeStreams, SysNode3Streams, SysNodeRedisBudget}

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

// Figures are one system's measurements, medians over the rounds.
type Figures struct {
	EventsPerCPUSec        float64   `json:"events_per_cpu_sec"`
	EventsPerCPUSecWithGen float64   `json:"events_per_cpu_sec_with_generator"`
	EventsPerWallSec       float64   `json:"events_per_wall_sec"`
	CPUSec                 float64   `json:"cpu_sec"`
	WallSec                float64   `json:"wall_sec"`
	PeakRSSMB              float64   `json:"peak_rss_mb"`
	HeapBytes              uint64    `json:"live_heap_bytes,omitempty"`
	LiveKeys               int       `json:"live_keys,omitempty"`
	BytesPerLiveKey        float64   `json:"bytes_per_live_key,omitempty"`
	Samples                []float64 `json:"events_per_cpu_sec_samples"`
}

// Result is one workload × system.
type Result struct {
	Workload string `json:"workload"`
	System   string `json:"system"`
	Doc      string `json:"doc"`
	// Events is the stream's event count (the Nexmark convention: source
	// events, whatever the query keeps); InputLines what the system read.
	Events     int    `json:"events"`
	InputLines int    `json:"input_lines"`
	Rounds     int    `json:"rounds"`
	Valid      bool   `json:"valid"`
	Invalid    string `json:"invalid,omitempty"`
	Skipped    string `json:"skipped,omitempty"`
	Checksum   string `json:"checksum"`
	Outputs    int64  `json:"engine_outputs"`
	ResultRows int64  `json:"result_rows"`
	// Ratio is engine / baseline events per CPU-second (pre-generated input);
	// RatioWithGen counts the generator's CPU on both sides.
	Ratio        float64 `json:"ratio"`
	RatioWithGen float64 `json:"ratio_with_generator"`
	Engine       Figures `json:"engine"`
	Baseline     Figures `json:"baseline"`
	GenCPUSec    float64 `json:"generator_cpu_sec"`
	// SnapshotCost (node+redis): 1 - its events/CPU-s over the node's on the
	// embedded store, the CPU cost of persisting every key's state to Redis
	// (redis-server's CPU included); SnapshotCostWall the same on wall time.
	SnapshotCost     *float64 `json:"snapshot_cost,omitempty"`
	SnapshotCostWall *float64 `json:"snapshot_cost_wall,omitempty"`
	// ThreeNodesRatio: 3nodes+redis's events/CPU-s over node+redis's, or
	// 3nodes+streams' over node+streams', on the same workload (both on
	// Redis; the process's CPU, all three nodes', plus redis-server's).
	ThreeNodesRatio *float64 `json:"three_nodes_ratio,omitempty"`
	// KeyRequests (node levels): the requests the nodes' readers sent key
	// actors on their own node and on another, per run (medians); on
	// 3nodes+streams the remote ones stay 0 (co-partitioned).
	KeyRequests *KeyRequests `json:"key_requests,omitempty"`
	// OutputsPerNode (stream systems): each node's sink lines (first round).
	OutputsPerNode []int64 `json:"outputs_per_node,omitempty"`
	// node+redis+budget: the working set (accounted bytes of every key
	// live), the budget (a BudgetWorkingSet-th of it), the passivations the
	// budget asked for per run (median), and BudgetRatio, its events per
	// CPU-second over node+redis's (all in memory) on the same workload.
	WorkingSetBytes    int64    `json:"working_set_bytes,omitempty"`
	BudgetBytes        int64    `json:"budget_bytes,omitempty"`
	BudgetPassivations int64    `json:"budget_passivations,omitempty"`
	BudgetRatio        *float64 `json:"budget_ratio,omitempty"`
	// Redis (node+redis): what the node wrote to Redis and the RDB
	// snapshots the server took meanwhile.
	Redis *RedisFigures `json:"redis,omitempty"`
	// Latency is the open-loop run's (nil with LatencySkipped saying why).
	Latency        *Latency `json:"latency,omitempty"`
	LatencySkipped string   `json:"latency_skipped,omitempty"`
	// SkewOf names the unskewed workload this one skews; SkewRatio is this
	// run's engine events/CPU-s over that one's on the same system, and
	// HotKeyShare the share of the stream's events on the hottest key.
	SkewOf      string   `json:"skew_of,omitempty"`
	SkewRatio   *float64 `json:"skew_ratio,omitempty"`
	HotKeyShare float64  `json:"hot_key_share,omitempty"`
	Notes       string   `json:"notes,omitempty"`

	want Checksum // the baseline's, for the latency run's check
}

// KeyRequests are a run's key requests by where the key's actor lives.
type KeyRequests struct {
	Local  float64 `json:"local"`
	Remote float64 `json:"remote"`
}

// RedisFigures are a node+redis run's writes to Redis, medians over the
// rounds: StateBytesPerSec is the bytes the node sent the server
// (total_net_input_bytes: the pipelined key snapshots with their offsets and
// outboxes, plus the commands around them) per second of node.Run, and per
// event; RDBSaves the background RDB snapshots (save 1 1) taken during a
// run and RDBDumpBytes the RDB file's size after the last one.
type RedisFigures struct {
	StateBytesPerSec   float64 `json:"state_bytes_per_sec"`
	StateBytesPerEvent float64 `json:"state_bytes_per_event"`
	RDBSaves           float64 `json:"rdb_saves_per_run"`
	RDBDumpBytes       int64   `json:"rdb_dump_bytes"`
}

// Report is the whole run.
type Report struct {
	Scale     string    `json:"scale"`
	Rounds    int       `json:"rounds"`
	GoVersion string    `json:"go_version"`
	NumCPU    int       `json:"num_cpu"`
	LoadAvg   string    `json:"load_avg_at_start"`
	Started   time.Time `json:"started"`
	Results   []Result  `json:"results"`
	// Targets compares the figures with the targets.
	Targets []Target `json:"targets"`
}

type sample struct {
	res  RunResult
	cpu  time.Duration
	wall time.Duration
	rss  float64
	heap uint64
	live int
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the kernel's high-water mark (Linux >= 4.0); peakRSSMB
// reads it, falling back to Getrusage's maxrss (the process's lifetime peak).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSSMB() float64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024
}

// measure runs f once, timing its process CPU (plus redis-server's, when
// given), wall time and peak RSS; probe (called by f at the end of input)
// weighs the live heap and is excluded from the timings.
func measure(redis *redisServer, f func(probe func(live int)) (RunResult, error)) (sample, error) {
	var s sample
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	resetPeakRSS()
	var exclCPU, exclWall time.Duration
	probe := func(live int) {
		c0, t0 := cpuNow(), time.Now()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > base {
			s.heap = ms.HeapAlloc - base
		}
		s.live = live
		exclCPU += cpuNow() - c0
		exclWall += time.Since(t0)
	}
	c0, r0, t0 := cpuNow(), redis.CPU(), time.Now()
	res, err := f(probe)
	s.wall = time.Since(t0) - exclWall
	s.cpu = cpuNow() - c0 + redis.CPU() - r0 - exclCPU
	s.rss = peakRSSMB()
	s.res = res
	if res.Wall > 0 {
		s.wall = res.Wall
	}
	if res.CPU > 0 {
		s.cpu = res.CPU
	}
	return s, err
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func figures(ss []sample, events int, gen time.Duration) Figures {
	var f Figures
	var eps, epsGen, wall, cpu, walls, bpk []float64
	for _, s := range ss {
		c := max(s.cpu.Seconds(), 1e-9)
		eps = append(eps, float64(events)/c)
		epsGen = append(epsGen, float64(events)/(c+gen.Seconds()))
		wall = append(wall, float64(events)/max(s.wall.Seconds(), 1e-9))
		cpu = append(cpu, c)
		walls = append(walls, s.wall.Seconds())
		f.PeakRSSMB = max(f.PeakRSSMB, s.rss)
		if s.live > 0 {
			bpk = append(bpk, float64(s.heap)/float64(s.live))
		}
		f.HeapBytes, f.LiveKeys = s.heap, s.live
	}
	f.EventsPerCPUSec, f.EventsPerCPUSecWithGen, f.EventsPerWallSec = median(eps), median(epsGen), median(wall)
	f.CPUSec, f.WallSec, f.BytesPerLiveKey, f.Samples = median(cpu), median(walls), median(bpk), eps
	return f
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*1000) / 1000
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
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "joinery-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	rep := &Report{Scale: o.Scale.Name, Rounds: o.Rounds, GoVersion: runtime.Version(), NumCPU: runtime.NumCPU(), Started: time.Now()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	var ws []*Workload
	if len(o.Workloads) == 0 {
		ws = Workloads
	}
	for _, name := range o.Workloads {
		w, err := Find(name)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	var redis *redisServer
	if slices.ContainsFunc(o.Systems, func(s string) bool { return s != SysCore && s != SysNode }) {
		rdir := filepath.Join(dir, "redis")
		if err := os.MkdirAll(rdir, 0o755); err != nil {
			return nil, err
		}
		r, err := startRedis(rdir)
		if err != nil {
			return nil, err
		}
		redis = r
		defer redis.Stop()
	}
	runID := 0
	for _, w := range ws {
		logf("%s: generating (%s scale)", w.Name, o.Scale.Name)
		c0 := cpuNow()
		in := w.Generate(o.Scale, o.Seed)
		gen := cpuNow() - c0
		byEngine := map[string]*Result{}
		var streams *streamInput // the stream systems' input, made once per workload
		for _, sys := range o.Systems {
			r := Result{Workload: w.Name, System: sys, Doc: w.Doc, Events: len(in.Lines), InputLines: len(in.Lines),
				Rounds: o.Rounds, GenCPUSec: gen.Seconds(), SkewOf: w.SkewOf, HotKeyShare: in.HotKeyShare}
			lines := in.Lines
			var err error
			switch sys {
			case SysCore:
				err = runRounds(&r, o.Rounds, gen, logf, nil,
					func(p func(int)) (RunResult, error) { return w.Core(lines, p), nil },
					func(p func(int)) (RunResult, error) { return w.Baseline(lines, p), nil })
			case SysNode, SysNodeRedis, SysNode3Redis, SysNodeRedisBudget:
				addr, peers := "", 0
				if sys == SysNode3Redis {
					peers = 2
				}
				switch {
				case w.NodeJob == "":
					r.Skipped = w.NodeSkip
				case sys != SysNode && redis == nil:
					r.Skipped = "redis-server not found in PATH"
				case sys != SysNode:
					addr = redis.Addr
				}
				if r.Skipped != "" {
					break
				}
				if in.NodeLines != nil {
					lines = in.NodeLines
					r.InputLines = len(lines)
					r.Notes = fmt.Sprintf("filters pushed down to the source: the node and its baseline read %d of the %d stream events", len(lines), len(in.Lines))
				}
				inPath := filepath.Join(dir, w.Name+".in.jsonl")
				if err = writeLines(inPath, lines); err != nil {
					return nil, err
				}
				var rs *redisServer
				if addr != "" {
					rs = redis
				}
				budget := ""
				if sys == SysNodeRedisBudget {
					// Calibration: every key live, the working set as the budget accounts it.
					runID++
					if err := rs.Flush(); err != nil {
						return nil, err
					}
					cal, err := nodeRun(ctx, w, dir, inPath, addr, "", runID, 0, func(f func() error) error { return f() })
					if err != nil {
						return nil, fmt.Errorf("%s/%s calibration: %w", w.Name, sys, err)
					}
					r.WorkingSetBytes = cal.Accounted
					r.BudgetBytes = max(cal.Accounted/BudgetWorkingSet, 1)
					budget = strconv.FormatInt(r.BudgetBytes, 10)
					logf("  %s/%s: working set %.1f MiB accounted, budget %.1f MiB", w.Name, sys, float64(r.WorkingSetBytes)/(1<<20), float64(r.BudgetBytes)/(1<<20))
				}
				var passivations []float64
				var kr keyRequestsOf
				err = runRounds(&r, o.Rounds, gen, logf, rs,
					func(p func(int)) (RunResult, error) {
						runID++
						if rs != nil {
							if err := rs.Flush(); err != nil {
								return RunResult{}, err
							}
						}
						var c0 redisCounters
						if rs != nil {
							var err error
							if c0, err = rs.counters(); err != nil {
								return RunResult{}, err
							}
						}
						res, err := nodeRun(ctx, w, dir, inPath, addr, budget, runID, peers, func(f func() error) error { return f() })
						passivations = append(passivations, float64(res.BudgetPassivations))
						kr.add(res)
						if err == nil && rs != nil {
							c1, cerr := rs.counters()
							if cerr != nil {
								return res, cerr
							}
							res.RedisInBytes, res.RDBSaves = c1.inBytes-c0.inBytes, c1.saves-c0.saves
						}
						return res, err
					},
					func(p func(int)) (RunResult, error) { return w.Baseline(lines, p), nil })
				os.Remove(inPath)
				if sys == SysNodeRedisBudget && len(passivations) > 0 {
					r.BudgetPassivations = int64(median(passivations))
				}
				r.KeyRequests = kr.median()
			case SysNodeStreams, SysNode3Streams:
				switch {
				case w.NodeJob == "":
					r.Skipped = w.NodeSkip
				case redis == nil:
					r.Skipped = "redis-server not found in PATH"
				}
				if r.Skipped != "" {
					break
				}
				if in.NodeLines != nil {
					lines = in.NodeLines
					r.Notes = fmt.Sprintf("filters pushed down to the source: the node and its baseline read %d of the %d stream events", len(lines), len(in.Lines))
				}
				if streams == nil {
					if streams, err = newStreamInput(w, lines, streamShards); err != nil {
						return nil, err
					}
				}
				r.InputLines = streams.entries
				nodes := 1
				if sys == SysNode3Streams {
					nodes = 3
				}
				var kr keyRequestsOf
				err = runRounds(&r, o.Rounds, gen, logf, redis,
					func(p func(int)) (RunResult, error) {
						runID++
						res, err := streamsRun(ctx, w, dir, streams, redis, runID, nodes, -1)
						kr.add(res)
						if r.OutputsPerNode == nil {
							r.OutputsPerNode = res.OutputsPerNode
						}
						return res, err
					},
					func(p func(int)) (RunResult, error) { return w.Baseline(lines, p), nil })
				r.KeyRequests = kr.median()
			default:
				return nil, fmt.Errorf("bench: unknown system %q", sys)
			}
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", w.Name, sys, err)
			}
			if sys == SysNodeRedis && r.Skipped == "" {
				if n := byEngine[SysNode]; n != nil && n.Skipped == "" {
					c := math.Round((1-r.Engine.EventsPerCPUSec/n.Engine.EventsPerCPUSec)*1000) / 1000
					cw := math.Round((1-r.Engine.EventsPerWallSec/n.Engine.EventsPerWallSec)*1000) / 1000
					r.SnapshotCost, r.SnapshotCostWall = &c, &cw
				}
			}
			if one := map[string]string{SysNode3Redis: SysNodeRedis, SysNode3Streams: SysNodeStreams}[sys]; one != "" && r.Skipped == "" {
				if n := byEngine[one]; n != nil && n.Skipped == "" {
					x := math.Round(r.Engine.EventsPerCPUSec/n.Engine.EventsPerCPUSec*1000) / 1000
					r.ThreeNodesRatio = &x
				}
			}
			if sys == SysNodeRedisBudget && r.Skipped == "" {
				if n := byEngine[SysNodeRedis]; n != nil && n.Skipped == "" {
					x := math.Round(r.Engine.EventsPerCPUSec/n.Engine.EventsPerCPUSec*1000) / 1000
					r.BudgetRatio = &x
				}
			}
			if sys != SysCore {
				r.Engine.HeapBytes, r.Engine.LiveKeys, r.Engine.BytesPerLiveKey = 0, 0, 0
			}
			if sys != SysCore && sys != SysNode && sys != SysNode3Redis && r.Skipped == "" {
				r.Redis.RDBDumpBytes = redis.dumpBytes()
			}
			if r.Skipped == "" {
				switch {
				case o.NoLatency:
					r.LatencySkipped = "not asked for (-latency=false)"
				case sys == SysNodeRedisBudget || sys == SysNode3Redis || sys == SysNodeStreams || sys == SysNode3Streams:
					r.LatencySkipped = "no latency run on this system (its figure is the throughput ratio; the node latency run feeds one node's stdin)"
				case sys == SysCore && w.Engine != nil:
					logf("  %s/%s: open-loop latency run at %.0f ev/s", w.Name, sys, LoadShare*r.Engine.EventsPerWallSec)
					runtime.GC()
					lat, res := OpenLoop(w.Engine(), lines, LoadShare*r.Engine.EventsPerWallSec)
					if !res.Check.Equal(r.want) {
						lat.Invalid = fmt.Sprintf("output %v, baseline %v", res.Check, r.want)
					}
					r.Latency = &lat
				case sys != SysCore && w.NodeLatency:
					logf("  %s/%s: open-loop latency run at %.0f ev/s", w.Name, sys, LoadShare*r.Engine.EventsPerWallSec)
					runID++
					var rs *redisServer
					if sys == SysNodeRedis {
						rs = redis
						if err := rs.Flush(); err != nil {
							return nil, err
						}
					}
					addr := ""
					if rs != nil {
						addr = rs.Addr
					}
					lat, check, err := nodeLatency(ctx, w, lines, addr, runID, LoadShare*r.Engine.EventsPerWallSec)
					if err != nil {
						return nil, fmt.Errorf("%s/%s latency: %w", w.Name, sys, err)
					}
					if !check.Equal(r.want) {
						lat.Invalid = fmt.Sprintf("output %v, baseline %v", check, r.want)
					}
					r.Latency = &lat
				default:
					r.LatencySkipped = "no latency run for this workload on this system (core level: every workload; node levels: cdc)"
				}
				if r.Latency != nil {
					r.Latency.MaxRate = r.Engine.EventsPerWallSec
					r.Latency.Measures = "from " + w.LatencyFrom + " to the output"
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
	}
	rep.Targets = targets(rep)
	return rep, nil
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
		logf("  %s/%s round %d: engine %.0f ev/cpu-s, baseline %.0f ev/cpu-s", r.Workload, r.System, i+1,
			float64(r.Events)/es[i].cpu.Seconds(), float64(r.Events)/bs[i].cpu.Seconds())
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
		var bps, bpe, saves []float64
		for _, s := range es {
			bps = append(bps, s.res.RedisInBytes/max(s.wall.Seconds(), 1e-9))
			bpe = append(bpe, s.res.RedisInBytes/float64(r.Events))
			saves = append(saves, s.res.RDBSaves)
		}
		r.Redis = &RedisFigures{StateBytesPerSec: median(bps), StateBytesPerEvent: median(bpe), RDBSaves: median(saves)}
	}
	return nil
}

// WriteJSON writes the report, indented.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteTable prints the report as a table, then the notes, the latency
// runs and the targets.
func (rep *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "scale %s, %d rounds (medians), %s, %d CPUs, load at start %s; events/s per CPU-second of this process (+ redis-server)\n",
		rep.Scale, rep.Rounds, rep.GoVersion, rep.NumCPU, rep.LoadAvg)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tsystem\tevents\tengine ev/cpu-s\tbaseline ev/cpu-s\tratio\tengine +gen\tratio +gen\tengine ev/wall-s\tp50 ms\tp99 ms\tpeak RSS MB\tB/live key\tsnap cost\tredis MB/s\tskew ratio\tvalid\t")
	for _, r := range rep.Results {
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%s\t%s\t%d\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\tskipped\t\n", r.Workload, r.System, r.Events)
			continue
		}
		bpk, snap, p50, p99, rmb, skew := "-", "-", "-", "-", "-", "-"
		if r.Engine.BytesPerLiveKey > 0 {
			bpk = fmt.Sprintf("%.0f", r.Engine.BytesPerLiveKey)
		}
		if r.SnapshotCost != nil {
			snap = fmt.Sprintf("%.0f%%", *r.SnapshotCost*100)
		}
		if r.Latency != nil {
			p50, p99 = fmt.Sprintf("%.3f", r.Latency.P50Ms), fmt.Sprintf("%.3f", r.Latency.P99Ms)
			if r.Latency.Invalid != "" {
				p99 += "!"
			}
		}
		if r.Redis != nil {
			rmb = fmt.Sprintf("%.1f", r.Redis.StateBytesPerSec/1e6)
		}
		if r.SkewRatio != nil {
			skew = fmt.Sprintf("%.3f", *r.SkewRatio)
		}
		valid := "ok"
		if !r.Valid {
			valid = "INVALID"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.3f\t%.0f\t%.3f\t%.0f\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", r.Workload, r.System, r.Events,
			r.Engine.EventsPerCPUSec, r.Baseline.EventsPerCPUSec, r.Ratio, r.Engine.EventsPerCPUSecWithGen, r.RatioWithGen,
			r.Engine.EventsPerWallSec, p50, p99, r.Engine.PeakRSSMB, bpk, snap, rmb, skew, valid)
	}
	tw.Flush()
	for _, r := range rep.Results {
		if r.Skipped != "" {
			fmt.Fprintf(w, "  %s/%s skipped: %s\n", r.Workload, r.System, r.Skipped)
		}
		if r.Invalid != "" {
			fmt.Fprintf(w, "  %s/%s INVALID: %s\n", r.Workload, r.System, r.Invalid)
		}
		if r.Notes != "" {
			fmt.Fprintf(w, "  %s/%s: %s\n", r.Workload, r.System, r.Notes)
		}
		if r.BudgetBytes > 0 {
			ratio := "no node+redis run to compare with"
			if r.BudgetRatio != nil {
				ratio = fmt.Sprintf("%.3f of node+redis's events per CPU-second (all in memory)", *r.BudgetRatio)
			}
			fmt.Fprintf(w, "  %s/%s: working set %.1f MiB accounted, memory budget %.1f MiB (1/%d): %d passivations by the budget per run; %s\n",
				r.Workload, r.System, float64(r.WorkingSetBytes)/(1<<20), float64(r.BudgetBytes)/(1<<20), BudgetWorkingSet, r.BudgetPassivations, ratio)
		}
		if r.KeyRequests != nil && (r.System == SysNode3Redis || r.System == SysNodeStreams || r.System == SysNode3Streams) {
			var b strings.Builder
			if r.ThreeNodesRatio != nil {
				one := map[string]string{SysNode3Redis: SysNodeRedis, SysNode3Streams: SysNodeStreams}[r.System]
				fmt.Fprintf(&b, "%.3f of %s's events per CPU-second; ", *r.ThreeNodesRatio, one)
			}
			fmt.Fprintf(&b, "key requests per run %.0f local, %.0f remote", r.KeyRequests.Local, r.KeyRequests.Remote)
			if r.OutputsPerNode != nil {
				outs := make([]string, len(r.OutputsPerNode))
				for i, n := range r.OutputsPerNode {
					outs[i] = strconv.FormatInt(n, 10)
				}
				fmt.Fprintf(&b, "; outputs per node %s; %d stream entries, %d shards per table", strings.Join(outs, "/"), r.InputLines, streamShards)
			}
			fmt.Fprintf(w, "  %s/%s: %s\n", r.Workload, r.System, b.String())
		}
		if r.Redis != nil {
			fmt.Fprintf(w, "  %s/%s: Redis received %.0f B/event (%.1f MB/s of node.Run); %.0f RDB saves per run, RDB file %.1f MB at the end\n",
				r.Workload, r.System, r.Redis.StateBytesPerEvent, r.Redis.StateBytesPerSec/1e6, r.Redis.RDBSaves, float64(r.Redis.RDBDumpBytes)/1e6)
		}
	}
	fmt.Fprintf(w, "latency p50/p99: open loop at %.0f%% of the closed-loop rate measured first (events released on a schedule; latency from release to output)\n", LoadShare*100)
	for _, r := range rep.Results {
		if l := r.Latency; l != nil {
			fmt.Fprintf(w, "  %s/%s: p50 %.3f ms, p99 %.3f ms, max %.3f ms over %d outputs; offered %.0f ev/s (max %.0f), achieved %.0f; from %s\n",
				r.Workload, r.System, l.P50Ms, l.P99Ms, l.MaxMs, l.Outputs, l.Rate, l.MaxRate, l.Achieved, strings.TrimPrefix(l.Measures, "from "))
			if l.Invalid != "" {
				fmt.Fprintf(w, "  %s/%s latency run INVALID: %s\n", r.Workload, r.System, l.Invalid)
			}
		}
	}
	writeTargets(w, rep.Targets)
}
