package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestStreamSystems runs node+streams and 3nodes+streams on cdc at the
// tiny scale against a real redis-server: both give the baseline's result
// (the three nodes' sinks together), every node of three reads and writes
// its share, none sends a key request to another (the shards follow the
// key groups), and the ratio is reported and checked as a target.
// Then a run fed without one shard must not verify: the union's checksum
// is what detects a lost part of the input.
func TestStreamSystems(t *testing.T) {
	if raceEnabled {
		t.Skip("the node starts protoactor remoting, which races (see the Makefile); run without -race")
	}
	if testing.Short() {
		t.Skip("short")
	}
	rep, err := Run(context.Background(), Options{Scale: Scales["tiny"], Rounds: 1, Workloads: []string{"cdc"},
		Systems: []string{SysNodeStreams, SysNode3Streams}, Dir: t.TempDir(), NoLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want 2: %+v", len(rep.Results), rep.Results)
	}
	for _, r := range rep.Results {
		name := r.Workload + "/" + r.System
		if r.Skipped != "" {
			t.Skipf("%s skipped: %s", name, r.Skipped) // no redis-server
		}
		if !r.Valid {
			t.Errorf("%s invalid: %s", name, r.Invalid)
		}
		if r.InputLines <= r.Events {
			t.Errorf("%s: %d stream entries for %d events, want more (every move a delete and a create)", name, r.InputLines, r.Events)
		}
		nodes := map[string]int{SysNodeStreams: 1, SysNode3Streams: 3}[r.System]
		if len(r.OutputsPerNode) != nodes {
			t.Fatalf("%s: outputs per node %v, want %d nodes'", name, r.OutputsPerNode, nodes)
		}
		for i, n := range r.OutputsPerNode {
			if n == 0 {
				t.Errorf("%s: node %d wrote nothing (outputs per node %v)", name, i+1, r.OutputsPerNode)
			}
		}
		if k := r.KeyRequests; k == nil || k.Local == 0 || k.Remote != 0 {
			t.Errorf("%s: key requests %+v, want all local", name, k)
		}
	}
	three := rep.Results[1]
	if three.ThreeNodesRatio == nil || *three.ThreeNodesRatio <= 0 {
		t.Errorf("three nodes' ratio %v: want one measured against %s", three.ThreeNodesRatio, SysNodeStreams)
	}
	found := false
	for _, tg := range rep.Targets {
		found = found || tg.On == "cdc/"+SysNode3Streams && tg.Want == ">= 0.8"
	}
	if !found {
		t.Errorf("no 0.8 target checked on cdc/%s: %+v", SysNode3Streams, rep.Targets)
	}

	// A shard left out of the feed: the run completes (its stream is
	// empty, so every entry is acknowledged) and the result must not verify.
	rs, err := startRedis(t.TempDir())
	if err != nil || rs == nil {
		t.Fatalf("redis-server: %v", err)
	}
	defer rs.Stop()
	w, _ := Find("cdc")
	in := w.Generate(Scales["tiny"], 1)
	streams, err := newStreamInput(w, in.Lines, streamShards)
	if err != nil {
		t.Fatal(err)
	}
	drop := 0
	for len(streams.tables[1].shards[drop]) == 0 {
		drop++
	}
	r := Result{Workload: "cdc", System: SysNode3Streams, Events: len(in.Lines)}
	err = runRounds(&r, 1, 0, t.Logf, rs,
		func(func(int)) (RunResult, error) {
			return streamsRun(context.Background(), w, t.TempDir(), streams, rs, 1, 3, drop)
		},
		func(p func(int)) (RunResult, error) { return w.Baseline(in.Lines, p), nil })
	if err != nil {
		t.Fatal(err)
	}
	if r.Valid || !strings.Contains(r.Invalid, "engine") {
		t.Errorf("shard %d of %d per table left out: valid %v (%s), want the checksum to differ from the baseline's", drop, streamShards, r.Valid, r.Invalid)
	}
	if r.Engine.WallSec <= 0 || r.Engine.CPUSec <= 0 || r.Engine.WallSec > float64(time.Minute/time.Second) {
		t.Errorf("engine figures %+v", r.Engine)
	}
}
