// Command benchcapacity runs the capacity benchmark (cmd/internal/capbench):
// the seed's users ⋈ domains join through one node on a redis-server, with
// narrow rows and with ten unused 24-byte columns per row, and reports what
// Redis holds per join key and per row, Redis keys per join key, sampled
// keys' MEMORY USAGE and encodings, and the node's heap per live key.
//
//	go run ./cmd/benchcapacity -changes 200000 -out /tmp/joinery-capacity.json
//
// It prints a table and writes the report as JSON to -out.
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/joinery/joinery/cmd/internal/reportfile"
	"os"
	"os/signal"
	"strings"

	"github.com/joinery/joinery/cmd/internal/capbench"
	"github.com/joinery/joinery/internal/gctune"
)

func main() {
	changes := flag.Int("changes", 200_000, "Debezium changes after the snapshot (users: changes/4 ids, domains: three times as many)")
	seed := flag.Uint64("seed", 1, "generator seed")
	variants := flag.String("variants", "narrow,wide", "comma-separated variants: narrow (the seed's columns), wide (ten more 24-byte columns per row)")
	out := flag.String("out", "", "write the JSON report here (default: none)")
	flag.Parse()
	// The node runs with the GC settings the node binary uses, unless
	// GOGC/GOMEMLIMIT say otherwise.
	gc := gctune.Apply(0, 0)
	fmt.Fprintf(os.Stderr, "benchcapacity: GC percent %d (%s), memory limit %d (%s)\n", gc.Percent, gc.PercentFrom, gc.Limit, gc.LimitFrom)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var vs []string
	for _, v := range strings.Split(*variants, ",") {
		if v = strings.TrimSpace(v); v != "" {
			vs = append(vs, v)
		}
	}
	rep, err := capbench.Run(ctx, capbench.Config{Changes: *changes, Seed: *seed, Variants: vs, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcapacity:", err)
		os.Exit(1)
	}
	rep.WriteTable(os.Stdout)
	if err := reportfile.Write(*out, "benchcapacity", os.Stderr, rep.WriteJSON); err != nil {
		fmt.Fprintln(os.Stderr, "benchcapacity:", err)
		os.Exit(1)
	}
}
