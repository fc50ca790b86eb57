package fleetbench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
)

// Result is the figures of one workload on one fleet size.
type Result struct {
	// Source is the partitioned source kind the nodes read: kafka or
	// redis-streams.
	Source string `json:"source"`
	// Mode is "trickle" for the trickle row (Config.Trickle: one node
	// without a CPU quota, LatencyRate probes per second once idle),
	// "cold-start" for a cold-start row (Config.ColdStart: EventsPerSec is
	// the input over WindowS, from the nodes' start to every entry
	// acknowledged), empty for a fleet size's row.
	Mode     string `json:"mode,omitempty"`
	Workload string `json:"workload"`
	Nodes    int    `json:"nodes"`
	// EventsPerSec is the fleet's steady-state input rate: the sum of the
	// nodes' joinery_records_in_total over the measuring window (from 20%
	// to 90% of a backlog consumed), per second.
	EventsPerSec float64 `json:"events_per_sec"`
	// Efficiency is EventsPerSec / (Nodes × EventsPerSec of 1 node).
	Efficiency float64 `json:"efficiency"`
	// CPUEfficiency is CPUPerEventUs of 1 node / CPUPerEventUs: the same
	// question asked of the CPU the nodes used rather than of the wall
	// clock, so a machine too busy to give every node its whole quota does
	// not count against the fleet (1: a node's event costs what it costs
	// alone).
	CPUEfficiency float64 `json:"cpu_efficiency"`
	// EventsPerNodeCPUs is events per CPU-second of the nodes (1e6 /
	// CPUPerEventUs).
	EventsPerNodeCPUs float64 `json:"events_per_node_cpu_s"`
	// P50Ms, P99Ms, MaxMs: event-to-output latency of the open-loop run at
	// LatencyRate events/s (half of EventsPerSec), feeder's produce stamp to
	// the output consumer's receipt of the joined row.
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	LatencyRate float64 `json:"latency_rate"`
	// SinkP50Ms, SinkP99Ms, SinkMaxMs: the same probes from the feeder's
	// stamp to the sink's produce call in the node (the output record's
	// timestamp, whole milliseconds): the node's part of P50Ms…, without
	// the broker and the output consumer.
	SinkP50Ms float64 `json:"sink_p50_ms"`
	SinkP99Ms float64 `json:"sink_p99_ms"`
	SinkMaxMs float64 `json:"sink_max_ms"`
	// LatencyNodeCPUUtil is NodeCPUUtil over the latency run (its waits
	// included): near 1, the probes saturated the nodes.
	LatencyNodeCPUUtil float64 `json:"latency_node_cpu_util"`
	// LatencyNodeCPU is the CPU per second a node used over the latency
	// run (the mean of the nodes).
	LatencyNodeCPU float64 `json:"latency_node_cpu"`
	// LatencyCPUPerEventUs is the nodes' CPU per record read over the
	// probing window alone (from the first probe sent to the last output
	// seen: not the idle seconds before), in microseconds; LatencyProbeNodeCPU
	// the CPU per second a node used over that window.
	LatencyCPUPerEventUs float64 `json:"latency_cpu_per_event_us"`
	LatencyProbeNodeCPU  float64 `json:"latency_probe_node_cpu"`
	LatencySamples       int     `json:"latency_samples"`
	// GCCycles and LatencyGCCycles are the garbage collections the nodes
	// completed over the window and over the probing window; GCShare and
	// LatencyGCShare the collector's share of the nodes' busy CPU time
	// there (the Go runtime's /cpu/classes estimates): under a CPU quota a
	// collection's mark takes the node's quota for as long as it lasts
	// (docs/performance/2026-12-05-fleet.md, "p99 at half the rate under a 0.3-CPU quota").
	GCCycles        float64 `json:"gc_cycles"`
	GCShare         float64 `json:"gc_share"`
	LatencyGCCycles float64 `json:"latency_gc_cycles"`
	LatencyGCShare  float64 `json:"latency_gc_share"`
	// KeysPerShard is DBSIZE of each Redis master after the run.
	KeysPerShard []int64 `json:"keys_per_shard"`
	// CommandsPerShard is each Redis master's commands over the whole run
	// (the backlog and the latency run): how the store's writes spread.
	CommandsPerShard []int64 `json:"commands_per_shard"`
	// CPUPerEventUs is the nodes' CPU (all of them, /proc/<pid>/stat) over
	// the window per event, in microseconds; RedisCPUPerEventUs the same
	// for the redis-server processes (the three masters, and with
	// redis-streams the shard streams' server).
	CPUPerEventUs      float64 `json:"cpu_per_event_us"`
	RedisCPUPerEventUs float64 `json:"redis_cpu_per_event_us"`
	// NodeCPUs, RedisCPUs, FeederCPUs, BrokerCPUs are CPU seconds over the
	// window: the nodes (sum), the Redis servers (sum: the masters, and
	// with redis-streams the shard streams' server, StreamsRedisCPUs of
	// it), the driver process (feeder and metrics polling) and the kfake
	// broker process (the sink's topic; with kafka the input topics too).
	NodeCPUs         float64 `json:"node_cpu_s"`
	RedisCPUs        float64 `json:"redis_cpu_s"`
	StreamsRedisCPUs float64 `json:"streams_redis_cpu_s"`
	FeederCPUs       float64 `json:"feeder_cpu_s"`
	BrokerCPUs       float64 `json:"broker_cpu_s"`
	// NodeCPUUtil is NodeCPUs / (window × Nodes × quota): how much of its
	// quota a node used (1 = the quota is the bound).
	NodeCPUUtil float64 `json:"node_cpu_util"`
	// IdleNodeCPU is the CPU per second a node used when the fleet had
	// gone idle after its backlog (gossip, timers, polling): a floor that
	// every node pays whatever its share of the events.
	IdleNodeCPU float64 `json:"idle_node_cpu"`
	// ThrottledS is the nodes' cgroups' throttled_time over the window.
	ThrottledS float64 `json:"throttled_s"`
	Events     float64 `json:"events"`
	WindowS    float64 `json:"window_s"`
	Input      int     `json:"input"`
}

// Report is the JSON written to BENCH_OUT. Source is the source kinds run,
// comma separated (each result says its own).
type Report struct {
	Machine    string   `json:"machine"`
	NumCPU     int      `json:"num_cpu"`
	QuotaCPU   float64  `json:"quota_cpu"`
	PeriodUs   int      `json:"cfs_period_us"`
	Partitions int      `json:"partitions"`
	Source     string   `json:"source"`
	Results    []Result `json:"results"`
}

// SetEfficiency fills Efficiency and CPUEfficiency of every result from the
// 1-node result of its source and workload (NaN, written as -1, without
// one).
func SetEfficiency(rs []Result) {
	type series struct{ source, mode, workload string }
	one := map[series]Result{}
	for _, r := range rs {
		if r.Nodes == 1 {
			one[series{r.Source, r.Mode, r.Workload}] = r
		}
	}
	for i := range rs {
		o, ok := one[series{rs[i].Source, rs[i].Mode, rs[i].Workload}]
		rs[i].Efficiency = Efficiency(rs[i].Nodes, rs[i].EventsPerSec, o.EventsPerSec)
		rs[i].CPUEfficiency = math.NaN()
		if ok && rs[i].CPUPerEventUs > 0 {
			rs[i].CPUEfficiency = o.CPUPerEventUs / rs[i].CPUPerEventUs
		}
	}
}

// WriteTable prints the results as a table: the fleet sizes' rows, then
// the trickle rows (WriteTrickle) and the cold-start rows (WriteColdStart)
// as tables of their own.
func WriteTable(w io.Writer, rs []Result) error {
	var fleet, trickle, cold []Result
	for _, r := range rs {
		switch r.Mode {
		case ModeTrickle:
			trickle = append(trickle, r)
		case ModeColdStart:
			cold = append(cold, r)
		default:
			fleet = append(fleet, r)
		}
	}
	sep := false
	for _, t := range []struct {
		rs    []Result
		write func(io.Writer, []Result) error
	}{{fleet, writeFleet}, {trickle, WriteTrickle}, {cold, WriteColdStart}} {
		if len(t.rs) == 0 {
			continue
		}
		if sep {
			fmt.Fprintln(w)
		}
		if err := t.write(w, t.rs); err != nil {
			return err
		}
		sep = true
	}
	return nil
}

// WriteColdStart prints cold-start rows: the time from the nodes' start to
// every entry acknowledged, the input records over it, the efficiency
// T(1)/(N×T(N)), and the nodes' CPU from their start.
func WriteColdStart(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cold start\tsource\tworkload\tnodes\trecords\tseconds\tevents/s\tefficiency\tCPU efficiency\tnode CPU s\tnode CPU µs/event\tnode CPU use\tredis CPU s\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "cold start\t%s\t%s\t%d\t%.0f\t%.2f\t%.0f\t%s\t%s\t%.2f\t%.1f\t%.0f%%\t%.2f\t\n", r.Source, r.Workload, r.Nodes, r.Events, r.WindowS, r.EventsPerSec,
			fnum(r.Efficiency, 2), fnum(r.CPUEfficiency, 2), r.NodeCPUs, r.CPUPerEventUs, 100*r.NodeCPUUtil, r.RedisCPUs)
	}
	return tw.Flush()
}

// WriteTrickle prints trickle rows: the probes' rate, their event-to-sink
// latency, the node's CPU over them, and the backlog's rate without a
// quota.
func WriteTrickle(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trickle\tsource\tworkload\tnodes\tprobes/s\tsamples\tp50 ms\tp99 ms\tmax ms\tto sink p50/p99/max ms\tnode CPU\tidle node CPU\tbacklog events/s\tnode CPU µs/event\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "trickle\t%s\t%s\t%d\t%.0f\t%d\t%s\t%s\t%s\t%s/%s/%s\t%s%%\t%s%%\t%.0f\t%.1f\t\n", r.Source, r.Workload, r.Nodes, r.LatencyRate, r.LatencySamples,
			fnum(r.P50Ms, 2), fnum(r.P99Ms, 2), fnum(r.MaxMs, 2), fnum(r.SinkP50Ms, 0), fnum(r.SinkP99Ms, 0), fnum(r.SinkMaxMs, 0), fnum(100*r.LatencyNodeCPU, 1), fnum(100*r.IdleNodeCPU, 1), r.EventsPerSec, r.CPUPerEventUs)
	}
	return tw.Flush()
}

func writeFleet(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source\tworkload\tnodes\tevents/s\tefficiency\tCPU efficiency\tevents/node-CPU-s\tp50 ms\tp99 ms\tnode CPU µs/event\tlatency µs/event\tlatency node CPU\tGC CPU\tlatency GCs/GC CPU\tnode CPU use\tidle node CPU\tredis CPU s\tredis µs/event\tfeeder CPU s\tkeys per shard\t")
	for _, r := range rs {
		keys := make([]string, len(r.KeysPerShard))
		for i, k := range r.KeysPerShard {
			keys[i] = fmt.Sprint(k)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%s\t%.0f\t%s\t%s\t%.1f\t%s\t%s%%\t%s%%\t%s/%s%%\t%.0f%%\t%s%%\t%.2f\t%.1f\t%.2f\t%s\t%s\t\n", r.Source, r.Workload, r.Nodes, r.EventsPerSec,
			fnum(r.Efficiency, 2), fnum(r.CPUEfficiency, 2), r.EventsPerNodeCPUs, fnum(r.P50Ms, 1), fnum(r.P99Ms, 1), r.CPUPerEventUs,
			fnum(r.LatencyCPUPerEventUs, 1), fnum(100*r.LatencyProbeNodeCPU, 0), fnum(100*r.GCShare, 0), fnum(r.LatencyGCCycles, 0), fnum(100*r.LatencyGCShare, 0), 100*r.NodeCPUUtil, fnum(100*r.IdleNodeCPU, 1),
			r.RedisCPUs, r.RedisCPUPerEventUs, r.FeederCPUs, strings.Join(keys, "/"), maxShare(r.CommandsPerShard))
	}
	return tw.Flush()
}

// maxShare is the largest element's share of the sum, as a percentage ("-"
// for none).
func maxShare(v []int64) string {
	var sum, most int64
	for _, x := range v {
		sum += x
		most = max(most, x)
	}
	if sum == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(most)/float64(sum))
}

func fnum(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// MarshalJSON writes NaN figures (not measured) as -1.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	b, err := json.Marshal(plain(r.clean()))
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (r Result) clean() Result {
	for _, p := range []*float64{&r.EventsPerSec, &r.Efficiency, &r.P50Ms, &r.P99Ms, &r.MaxMs, &r.CPUPerEventUs,
		&r.RedisCPUPerEventUs, &r.NodeCPUUtil, &r.CPUEfficiency, &r.EventsPerNodeCPUs, &r.IdleNodeCPU, &r.LatencyNodeCPUUtil, &r.LatencyNodeCPU, &r.LatencyCPUPerEventUs, &r.LatencyProbeNodeCPU, &r.SinkP50Ms, &r.SinkP99Ms, &r.SinkMaxMs, &r.GCShare, &r.LatencyGCCycles, &r.LatencyGCShare} {
		if math.IsNaN(*p) || math.IsInf(*p, 0) {
			*p = -1
		}
	}
	return r
}

// WriteJSON writes the report to path.
func WriteJSON(path string, rep Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
