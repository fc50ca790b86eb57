package fleetbench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// A trickle row prints as a table of its own, after the fleet's rows, and
// does not count as the fleet's 1-node baseline.
func TestTrickleRow(t *testing.T) {
	rs := []Result{
		{Source: SourceKafka, Workload: "cdc", Nodes: 1, EventsPerSec: 1000, CPUPerEventUs: 100, P50Ms: 40, P99Ms: 900},
		{Source: SourceKafka, Workload: "cdc", Nodes: 2, EventsPerSec: 1800, CPUPerEventUs: 110, P50Ms: 50, P99Ms: 950},
		{Source: SourceKafka, Mode: ModeTrickle, Workload: "cdc", Nodes: 1, EventsPerSec: 9000, CPUPerEventUs: 70,
			LatencyRate: 100, LatencySamples: 1000, P50Ms: 1.75, P99Ms: 4.5, MaxMs: 8.25,
			SinkP50Ms: 1, SinkP99Ms: 4, SinkMaxMs: 8, LatencyNodeCPU: 0.12, IdleNodeCPU: 0.01, CPUEfficiency: math.NaN(), Efficiency: math.NaN()},
	}
	SetEfficiency(rs)
	if e := rs[1].Efficiency; math.Abs(e-0.9) > 1e-9 {
		t.Fatalf("2-node efficiency %v, want 0.9 (against the fleet's 1-node row, not the trickle's)", e)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	fleet, trickle, ok := strings.Cut(b.String(), "\n\n")
	if !ok {
		t.Fatalf("no second table:\n%s", b.String())
	}
	if strings.Contains(fleet, "trickle") || len(strings.Split(strings.TrimSpace(fleet), "\n")) != 3 {
		t.Fatalf("fleet table:\n%s", fleet)
	}
	lines := strings.Split(strings.TrimSpace(trickle), "\n")
	if len(lines) != 2 {
		t.Fatalf("trickle table:\n%s", trickle)
	}
	for _, want := range []string{"p50 ms", "p99 ms", "max ms", "to sink"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("trickle header lacks %q: %s", want, lines[0])
		}
	}
	for _, want := range []string{" 1.75 ", " 4.50 ", " 8.25 ", " 1/4/8 ", " 12.0%", " 9000 "} {
		if !strings.Contains(lines[1]+" ", want) {
			t.Errorf("trickle row lacks %q: %s", want, lines[1])
		}
	}
	j, err := json.Marshal(rs[2])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"mode":"trickle"`, `"sink_p99_ms":4`, `"latency_node_cpu":0.12`} {
		if !strings.Contains(string(j), want) {
			t.Errorf("JSON lacks %s: %s", want, j)
		}
	}
	if j, _ := json.Marshal(rs[0]); strings.Contains(string(j), `"mode"`) {
		t.Errorf("a fleet row has a mode: %s", j)
	}
}

func TestTrickleQuota(t *testing.T) {
	c := Config{QuotaCPU: 0.3}
	if c.quota() != 0.3 {
		t.Fatalf("quota %v", c.quota())
	}
	c.Trickle = true
	if c.quota() != 0 {
		t.Fatalf("trickle quota %v, want none", c.quota())
	}
}

// Cold-start rows print as a table of their own, after the fleet's rows,
// with their efficiency T(1)/(N×T(N)) taken against the cold-start 1-node
// row of their source, and their mode in the JSON.
func TestColdStartRow(t *testing.T) {
	rs := []Result{
		{Source: SourceRepartitioned, Workload: "cdc", Nodes: 1, EventsPerSec: 1000, CPUPerEventUs: 100},
		{Source: SourceRepartitioned, Mode: ModeColdStart, Workload: "cdc", Nodes: 1, Events: 48000, WindowS: 8, EventsPerSec: 6000, CPUPerEventUs: 40, NodeCPUs: 1.92},
		{Source: SourceRepartitioned, Mode: ModeColdStart, Workload: "cdc", Nodes: 3, Events: 48000, WindowS: 4, EventsPerSec: 12000, CPUPerEventUs: 50, NodeCPUs: 2.4},
	}
	SetEfficiency(rs)
	if e := rs[2].Efficiency; math.Abs(e-8.0/(3*4)) > 1e-9 {
		t.Fatalf("3-node cold-start efficiency %v, want T(1)/(3×T(3)) = %v", e, 8.0/(3*4))
	}
	if e := rs[2].CPUEfficiency; math.Abs(e-0.8) > 1e-9 {
		t.Fatalf("3-node cold-start CPU efficiency %v, want 0.8", e)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	fleet, cold, ok := strings.Cut(b.String(), "\n\n")
	if !ok || strings.Contains(fleet, "cold start") {
		t.Fatalf("want the fleet table, then the cold-start one:\n%s", b.String())
	}
	lines := strings.Split(strings.TrimSpace(cold), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "seconds") {
		t.Fatalf("cold-start table:\n%s", cold)
	}
	for _, want := range []string{" 48000 ", " 4.00 ", " 12000 ", " 0.67 ", " 0.80 ", " 2.40 "} {
		if !strings.Contains(lines[2]+" ", want) {
			t.Errorf("cold-start row lacks %q: %s", want, lines[2])
		}
	}
	if j, _ := json.Marshal(rs[2]); !strings.Contains(string(j), `"mode":"cold-start"`) {
		t.Errorf("JSON lacks the mode: %s", j)
	}
}
