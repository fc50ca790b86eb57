package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

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
	// EOSCost (node+kafka+eos): 1 - its events/CPU-s over node+kafka's on
	// the same workload, the CPU cost of the exactly-once Kafka sink (its
	// transactions) against the at-least-once one.
	EOSCost *float64 `json:"eos_cost,omitempty"`
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
	// ServerMicrosPerEvent is redis-server's CPU per event (counted in
	// the engine's ev/cpu-s), NodeMicrosPerEvent the node process's.
	ServerMicrosPerEvent float64 `json:"server_us_per_event"`
	NodeMicrosPerEvent   float64 `json:"node_us_per_event"`
	// Commands is the last round's INFO commandstats.
	Commands map[string]RedisCommand `json:"commands,omitempty"`
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
	// Targets compares the figures with the project's performance targets
	// (targets.go).
	Targets []Target `json:"targets"`
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
		if r.EOSCost != nil {
			fmt.Fprintf(w, "  %s/%s: the exactly-once Kafka sink costs %.1f%% of node+kafka's (at least once) events per CPU-second%s\n",
				r.Workload, r.System, 100**r.EOSCost, eosLatency(rep, r))
		}
		if r.Redis != nil {
			fmt.Fprintf(w, "  %s/%s: Redis received %.0f B/event (%.1f MB/s of node.Run); %.0f RDB saves per run, RDB file %.1f MB at the end\n",
				r.Workload, r.System, r.Redis.StateBytesPerEvent, r.Redis.StateBytesPerSec/1e6, r.Redis.RDBSaves, float64(r.Redis.RDBDumpBytes)/1e6)
			fmt.Fprintf(w, "  %s/%s: CPU per event: redis-server %.1f µs, node %.1f µs; commands per 1000 events (µs of the server's each):",
				r.Workload, r.System, r.Redis.ServerMicrosPerEvent, r.Redis.NodeMicrosPerEvent)
			names := slices.Sorted(maps.Keys(r.Redis.Commands))
			for _, n := range names {
				c := r.Redis.Commands[n]
				fmt.Fprintf(w, " %s %.1f (%.1f)", n, c.Calls*1000/float64(r.Events), c.Micros/c.Calls)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "latency p50/p99: open loop at %.0f%% of the closed-loop rate measured first (events released on a schedule; latency from release to output)\n", LoadShare*100)
	for _, r := range rep.Results {
		if l := r.Latency; l != nil {
			fmt.Fprintf(w, "  %s/%s: p50 %.3f ms, p99 %.3f ms, max %.3f ms over %d outputs; offered %.0f ev/s (max %.0f), achieved %.0f; %d collections (GC %.0f%% of the busy CPU); from %s\n",
				r.Workload, r.System, l.P50Ms, l.P99Ms, l.MaxMs, l.Outputs, l.Rate, l.MaxRate, l.Achieved, l.GCCycles, 100*l.GCShare, strings.TrimPrefix(l.Measures, "from "))
			if l.Invalid != "" {
				fmt.Fprintf(w, "  %s/%s latency run INVALID: %s\n", r.Workload, r.System, l.Invalid)
			}
		}
	}
	writeTargets(w, rep.Targets)
}

// eosLatency compares r's (node+kafka+eos) latency run with node+kafka's
// on the same workload ("" without both).
func eosLatency(rep *Report, r Result) string {
	for _, u := range rep.Results {
		if u.Workload == r.Workload && u.System == SysNodeKafka && u.Latency != nil && r.Latency != nil {
			return fmt.Sprintf("; p99 %.3f ms against %.3f ms at half each one's rate", r.Latency.P99Ms, u.Latency.P99Ms)
		}
	}
	return ""
}
