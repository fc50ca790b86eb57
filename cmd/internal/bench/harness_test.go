package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestNodeMatchesBaseline: the full node (embedded store) gives the
// baseline's result on every workload it can run, at the tiny scale.
func TestNodeMatchesBaseline(t *testing.T) {
	if raceEnabled {
		t.Skip("the node starts protoactor remoting, which races (see the Makefile); run without -race")
	}
	if testing.Short() {
		t.Skip("short")
	}
	rep, err := Run(context.Background(), Options{Scale: Scales["tiny"], Rounds: 1, Systems: []string{SysNode}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Skipped == "" && !r.Valid {
			t.Errorf("%s/%s: %s", r.Workload, r.System, r.Invalid)
		}
	}
}

// TestReportShape runs the harness on the core level, one tiny workload,
// and checks the JSON report: one object per workload × system with its
// figures and the ratio.
func TestReportShape(t *testing.T) {
	// The node levels are TestNodeMatchesBaseline's; here only their skip
	// (q9 has no node wiring) shows in the report, which starts no node.
	rep, err := Run(context.Background(), Options{Scale: Scales["tiny"], Rounds: 2, Workloads: []string{"cdc", "q8"},
		Systems: []string{SysCore}, Dir: t.TempDir()})
	if err == nil {
		var skip *Report
		skip, err = Run(context.Background(), Options{Scale: Scales["tiny"], Rounds: 1, Workloads: []string{"q9"},
			Systems: []string{SysNode}, Dir: t.TempDir()})
		if err == nil {
			rep.Results = append(rep.Results, skip.Results...)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Scale   string           `json:"scale"`
		Rounds  int              `json:"rounds"`
		Results []map[string]any `json:"results"`
		Targets []map[string]any `json:"targets"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Scale != "tiny" || got.Rounds != 2 {
		t.Errorf("scale %q rounds %d", got.Scale, got.Rounds)
	}
	want := 3
	if len(got.Results) != want {
		t.Fatalf("%d results, want %d:\n%s", len(got.Results), want, buf.String())
	}
	for _, r := range got.Results {
		name := r["workload"].(string) + "/" + r["system"].(string)
		if r["skipped"] != nil {
			if name != "q9/node" {
				t.Errorf("%s skipped: %v", name, r["skipped"])
			}
			continue
		}
		for _, k := range []string{"events", "ratio", "ratio_with_generator", "valid", "checksum", "engine", "baseline", "latency"} {
			if _, ok := r[k]; !ok {
				t.Errorf("%s: no %q", name, k)
			}
		}
		if r["valid"] != true {
			t.Errorf("%s: invalid: %v", name, r["invalid"])
		}
		eng := r["engine"].(map[string]any)
		for _, k := range []string{"events_per_cpu_sec", "events_per_cpu_sec_with_generator", "peak_rss_mb", "cpu_sec", "events_per_cpu_sec_samples"} {
			if _, ok := eng[k]; !ok {
				t.Errorf("%s: engine has no %q", name, k)
			}
		}
		if r["system"] == SysCore {
			if v, _ := eng["bytes_per_live_key"].(float64); v <= 0 {
				t.Errorf("%s: bytes_per_live_key %v, want > 0", name, eng["bytes_per_live_key"])
			}
		}
		if s := eng["events_per_cpu_sec_samples"].([]any); len(s) != 2 {
			t.Errorf("%s: %d samples, want 2 (one per round)", name, len(s))
		}
		lat, _ := r["latency"].(map[string]any)
		p50, _ := lat["p50_ms"].(float64)
		p99, _ := lat["p99_ms"].(float64)
		if !(p50 > 0 && p50 <= p99) || lat["invalid"] != nil {
			t.Errorf("%s: latency %v", name, r["latency"])
		}
	}
	if len(got.Targets) == 0 {
		t.Error("no targets in the report")
	}
	for _, tg := range got.Targets {
		if st := tg["status"]; st != "met" && st != "not met" && st != "not measured" {
			t.Errorf("target %v: status %v", tg["target"], st)
		}
	}
	var table bytes.Buffer
	rep.WriteTable(&table)
	if !bytes.Contains(table.Bytes(), []byte("cdc")) || !bytes.Contains(table.Bytes(), []byte("targets: ")) {
		t.Errorf("table lacks the workload:\n%s", table.String())
	}
}

// TestNodeRedisBudget: on node+redis+budget the budget is a quarter of the
// working set the calibration run accounted, the budget passivates keys,
// the result still equals the baseline's, and the ratio to node+redis is
// reported and checked as a target; node+redis reports redis-server's and
// the node's CPU per event.
func TestNodeRedisBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the node starts protoactor remoting, which races (see the Makefile); run without -race")
	}
	if testing.Short() {
		t.Skip("short")
	}
	rep, err := Run(context.Background(), Options{Scale: Scales["tiny"], Rounds: 1, Workloads: []string{"cdc"},
		Systems: []string{SysNodeRedis, SysNodeRedisBudget}, Dir: t.TempDir(), NoLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	var b *Result
	for i := range rep.Results {
		if rep.Results[i].System == SysNodeRedisBudget {
			b = &rep.Results[i]
		}
		// node+redis splits its CPU between redis-server and the node,
		// with the server's command counts.
		if r := rep.Results[i]; r.System == SysNodeRedis {
			if r.Redis == nil || r.Redis.ServerMicrosPerEvent <= 0 || r.Redis.NodeMicrosPerEvent <= 0 || r.Redis.Commands["evalsha"].Calls <= 0 {
				t.Errorf("node+redis Redis figures %+v: want the CPU split and EVALSHA counted", r.Redis)
			}
		}
	}
	if b == nil || b.Skipped != "" {
		t.Fatalf("no node+redis+budget result: %+v", rep.Results)
	}
	if !b.Valid {
		t.Errorf("invalid: %s", b.Invalid)
	}
	if b.WorkingSetBytes <= 0 || b.BudgetBytes != b.WorkingSetBytes/BudgetWorkingSet {
		t.Errorf("working set %d B, budget %d B: want the budget a %dth of a measured working set", b.WorkingSetBytes, b.BudgetBytes, BudgetWorkingSet)
	}
	if b.BudgetPassivations == 0 {
		t.Errorf("the budget passivated no key")
	}
	if b.BudgetRatio == nil || *b.BudgetRatio <= 0 {
		t.Errorf("budget ratio %v: want one measured against node+redis", b.BudgetRatio)
	}
	found := false
	for _, tg := range rep.Targets {
		found = found || tg.On == "cdc/"+SysNodeRedisBudget
	}
	if !found {
		t.Errorf("no target checked on cdc/%s: %+v", SysNodeRedisBudget, rep.Targets)
	}
}

// TestQ8NodeMatchesCore: q8 on the node (two file sources of plain JSON
// events, the window join on key actors) gives the core level's pairs, each
// system verified against its own baseline too.
func TestQ8NodeMatchesCore(t *testing.T) {
	if raceEnabled {
		t.Skip("the node starts protoactor remoting, which races (see the Makefile); run without -race")
	}
	if testing.Short() {
		t.Skip("short")
	}
	rep, err := Run(context.Background(), Options{Scale: Scales["tiny"], Rounds: 1, Workloads: []string{"q8"},
		Systems: []string{SysCore, SysNode}, Dir: t.TempDir(), NoLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want core and node: %+v", len(rep.Results), rep.Results)
	}
	core, nd := rep.Results[0], rep.Results[1]
	if nd.Skipped != "" || !core.Valid || !nd.Valid {
		t.Fatalf("core valid %v (%s), node skipped %q valid %v (%s)", core.Valid, core.Invalid, nd.Skipped, nd.Valid, nd.Invalid)
	}
	if nd.Checksum != core.Checksum || core.ResultRows <= 0 {
		t.Errorf("node %s, core %s: want the same non-empty set of pairs", nd.Checksum, core.Checksum)
	}
	if nd.InputLines >= nd.Events {
		t.Errorf("node read %d lines of %d events: want the persons and auctions only", nd.InputLines, nd.Events)
	}
}

// TestNodeKafkaEOS: node+kafka and node+kafka+eos run cdc through Kafka
// topics (kfake) and equal the baseline, throughput and latency runs
// alike; the exactly-once run reports its cost against the at-least-once
// one; an event-time join (q8) is skipped on them.
func TestNodeKafkaEOS(t *testing.T) {
	if raceEnabled {
		t.Skip("the node starts protoactor remoting, which races (see the Makefile); run without -race")
	}
	if testing.Short() {
		t.Skip("short")
	}
	rep, err := Run(context.Background(), Options{Scale: Scales["tiny"], Rounds: 1, Workloads: []string{"cdc", "q8"},
		Systems: []string{SysNodeKafka, SysNodeKafkaEOS}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Workload == "q8" {
			if r.Skipped == "" {
				t.Errorf("q8/%s ran: want it skipped (exactly once is for changelog joins)", r.System)
			}
			continue
		}
		if !r.Valid {
			t.Errorf("cdc/%s invalid: %s", r.System, r.Invalid)
		}
		if r.Latency == nil || r.Latency.Invalid != "" || r.Latency.Outputs == 0 {
			t.Errorf("cdc/%s latency run %+v (%s): want a valid one", r.System, r.Latency, r.LatencySkipped)
		}
		if (r.EOSCost != nil) != (r.System == SysNodeKafkaEOS) {
			t.Errorf("cdc/%s exactly-once cost %v: want one on %s alone", r.System, r.EOSCost, SysNodeKafkaEOS)
		}
	}
	var b bytes.Buffer
	rep.WriteTable(&b)
	if !strings.Contains(b.String(), "cdc/node+kafka+eos: the exactly-once Kafka sink costs") {
		t.Errorf("the report does not print the exactly-once cost:\n%s", b.String())
	}
}
