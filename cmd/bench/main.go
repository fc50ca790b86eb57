// Command bench runs Joinery's benchmark harness (bench/): Nexmark q3, q8,
// q9, q20 (plain and with a pinned hot auction) and the users ⋈ domains CDC
// join (plain and skewed), each on the engine's core loop, the full node
// in-process, the node on Redis, one and three nodes reading shard
// streams partitioned by the join key and the node between Kafka topics
// (at least once and exactly once), side by side with a plain Go baseline
// over the same events in the same run, then an open-loop latency run at
// half the measured rate.
//
//	go run ./cmd/bench -scale small -out /tmp/bench.json -rounds 3 -workloads q3,q8,q9,q20,q20-skew,cdc,cdc-skew
//
// It prints a table, the latency runs and the performance goals (met or not),
// and writes the report as JSON to -out. A result whose engine and baseline
// checksums differ is marked INVALID (exit status 1).
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/joinery/joinery/cmd/internal/reportfile"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/joinery/joinery/cmd/internal/bench"
	"github.com/joinery/joinery/internal/gctune"
)

func main() {
	scale := flag.String("scale", "small", "tiny, small or full")
	out := flag.String("out", "", "write the JSON report here (default: none)")
	rounds := flag.Int("rounds", 3, "engine/baseline alternations; medians are reported")
	workloads := flag.String("workloads", "", "comma-separated workloads (default all: q3,q8,q9,q20,q20-skew,cdc,cdc-skew)")
	systems := flag.String("systems", "", "comma-separated systems (default: "+strings.Join(bench.DefaultSystems, ",")+"; also 3nodes+redis)")
	seed := flag.Uint64("seed", 1, "generator seed")
	latency := flag.Bool("latency", true, "run the open-loop latency runs")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run here (go tool pprof)")
	memprofile := flag.String("memprofile", "", "write an allocation profile of the whole run here (go tool pprof -sample_index=alloc_objects)")
	memrate := flag.Int("memprofilerate", 0, "with -memprofile: sample one allocation per this many bytes (1: every allocation, exact counts but a slower run; 0: the runtime's default, 512 KiB)")
	flag.Parse()
	if *memprofile != "" {
		if *memrate > 0 {
			runtime.MemProfileRate = *memrate
		}
		defer func() {
			runtime.GC() // the profile is as of the last GC: include the last run's allocations
			f, err := os.Create(*memprofile)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
			}
		}()
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	sc, ok := bench.Scales[*scale]
	if !ok {
		fmt.Fprintf(os.Stderr, "bench: unknown scale %q (tiny, small or full)\n", *scale)
		os.Exit(2)
	}
	// Every system and the baseline run with the GC settings the node
	// binary uses (internal/gctune), unless GOGC/GOMEMLIMIT say otherwise.
	gc := gctune.Apply(0, 0)
	fmt.Fprintf(os.Stderr, "bench: GC percent %d (%s), memory limit %d (%s)\n", gc.Percent, gc.PercentFrom, gc.Limit, gc.LimitFrom)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := bench.Run(ctx, bench.Options{Scale: sc, Rounds: *rounds, Workloads: split(*workloads),
		Systems: split(*systems), Seed: *seed, Log: os.Stderr, NoLatency: !*latency})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	rep.WriteTable(os.Stdout)
	if err := reportfile.Write(*out, "bench", os.Stderr, rep.WriteJSON); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	for _, r := range rep.Results {
		if r.Skipped == "" && !r.Valid {
			os.Exit(1)
		}
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
