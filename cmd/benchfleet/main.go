// Command benchfleet is the fleet benchmark (`make bench-fleet`): does
// adding nodes add capacity? It runs 1, 2, 3 and 4 real joinery nodes, each
// in a cgroup v1 CPU quota of its own (default 0.3 CPU), against a Redis
// Cluster of three masters and a kfake Kafka broker in its own process
// (with -source redis-streams, the input is shard streams on a redis-server
// of their own, the output still a Kafka topic), and
// prints events/s, scaling efficiency, p99 latency, CPU per event and keys
// per Redis shard; it writes them as JSON (-out) and a PNG plot (-plot).
// See cmd/internal/fleetbench and docs/performance.md.
//
//	make build && go run ./cmd/benchfleet -joinery bin/joinery -out /tmp/fleet.json -plot /tmp/joinery-bench/scaling.png
//
// It needs root (to make the cgroups under /sys/fs/cgroup/cpu) and
// redis-server and redis-cli on PATH, and fails saying so without them.
//
// With -trickle it runs the trickle row alone: one node without a CPU
// quota, one probe every 10 ms (-trickle-rate 100) into the idle node,
// p50/p99/max event-to-sink.
//
//	make build && go run ./cmd/benchfleet -trickle -source redis-streams
//
// With -cold-start it runs the cold-start rows: the input (40,000 cdc
// changes at -scale 1) written to the shard streams first, then each fleet
// size started on it and timed until every entry is acknowledged. It draws
// no plot (-plot is ignored).
//
//	make build && go run ./cmd/benchfleet -cold-start -nodes 1,2,3,4
//
// With -broker it is the broker process instead: it starts a kfake broker,
// prints "broker host:port" and serves until SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/joinery/joinery/cmd/internal/fleetbench"
)

func main() {
	brokerMode := flag.Bool("broker", false, "run the kfake broker process (used by the benchmark itself)")
	joinery := flag.String("joinery", "bin/joinery", "the joinery binary (make build)")
	nodes := flag.String("nodes", "1,2,3,4", "fleet sizes, comma separated")
	workloads := flag.String("workloads", "cdc,q20", "workloads, comma separated: cdc (users ⋈ domains), q20 (Nexmark bid ⋈ auction)")
	source := flag.String("source", fleetbench.SourceKafka, "partitioned source: kafka (a topic per table), redis-streams (shard streams per table, on a redis-server of their own, sharded by primary key), copartitioned (redis-streams sharded by the join key: partitioned_by: join_key), repartitioned (redis-streams sharded by primary key, repartitioned by the join key: repartition: stream), both, or a comma list")
	quota := flag.Float64("cpu", 0.3, "CPU quota of each node, in CPUs (cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us)")
	period := flag.Duration("cpu-period", 100*time.Millisecond, "CFS period of the quota (cgroup v1 cpu.cfs_period_us; the kernel's default 100ms): a node that spends its quota early in a period waits for the next one")
	partitions := flag.Int("partitions", 12, "partitions of each input topic, shard streams of each table with redis-streams")
	scale := flag.Float64("scale", 1, "input size multiplier: 1 is 40000 changes over 4000 users and 12000 domains")
	latFor := flag.Duration("latency-duration", 10*time.Second, "length of the open-loop latency run of each fleet size")
	latLoad := flag.Float64("latency-load", 0.5, "rate of the open-loop latency run, as a fraction of the measured events/s")
	timeout := flag.Duration("timeout", 5*time.Minute, "longest a fleet may take to read its backlog")
	out := flag.String("out", "/tmp/joinery-bench-fleet.json", "JSON report")
	plotOut := flag.String("plot", "", "PNG plot of throughput and p99 against nodes (empty: none)")
	profNodes := flag.String("profile-nodes", "", "fleet sizes (comma separated) of which to take a 10 s CPU profile of node 1")
	profOut := flag.String("profile", "/tmp/joinery-bench-fleet", "-profile-nodes writes PREFIX-<workload>-<N>nodes.pprof, -profile-latency PREFIX-<workload>-<N>nodes-latency.pprof")
	profLat := flag.Bool("profile-latency", false, "take a CPU profile of node 1 over the middle half of every open-loop latency run")
	dir := flag.String("dir", "", "working directory (default: a new one under /dev/shm or TMPDIR, removed unless -keep)")
	keep := flag.Bool("keep", false, "keep the working directory (configs and logs)")
	trickle := flag.Bool("trickle", false, "run the trickle row alone: one node without a CPU quota reads its backlog, then, once idle, gets one probe every 1/-trickle-rate s for -latency-duration; prints p50/p99/max event-to-sink (-nodes, -cpu and -plot are ignored; -workloads defaults to cdc)")
	trickleRate := flag.Float64("trickle-rate", fleetbench.DefaultTrickleRate, "probes per second of the trickle row")
	coldStart := flag.Bool("cold-start", false, "run the cold-start rows instead: the whole input written to the shard streams first, then each fleet size started on it, timed from the nodes' start until every entry is acknowledged (leases spreading included); efficiency T(1)/(N×T(N)); redis-streams, copartitioned and repartitioned sources only (-workloads defaults to cdc, -source to copartitioned,repartitioned; -plot is ignored)")
	noExpect := flag.Bool("no-expect", false, "leave cluster.expect (the fleet size by default) out of the nodes' job files: to measure a fleet whose nodes take shards as soon as they start")
	nodeLog := flag.String("node-log-level", "warn", "the nodes' --log-level (their logs are in -dir with -keep)")
	traceOut := flag.String("trace", "", "with -trickle: execution traces of the node over the middle half of the probes, to PREFIX-<source>-<workload>.trace (go tool trace)")
	flag.Parse()
	if *trickle {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["workloads"] {
			*workloads = "cdc"
		}
		*nodes, *plotOut = "1", ""
	}
	if *coldStart {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["workloads"] {
			*workloads = "cdc"
		}
		if !set["source"] {
			*source = fleetbench.SourceCoPartitioned + "," + fleetbench.SourceRepartitioned
		}
		*plotOut = "" // the plot is of the fleet sizes' backlog rows (make bench-fleet's scaling.png)
	}
	if *brokerMode {
		if err := serveBroker(); err != nil {
			fail(err)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sizes, err := parseInts(*nodes)
	if err != nil {
		fail(fmt.Errorf("-nodes: %w", err))
	}
	var profSizes []int
	if *profNodes != "" {
		if profSizes, err = parseInts(*profNodes); err != nil {
			fail(fmt.Errorf("-profile-nodes: %w", err))
		}
	}
	bin, err := filepath.Abs(*joinery)
	if err != nil {
		fail(err)
	}
	if _, err := os.Stat(bin); err != nil {
		fail(fmt.Errorf("-joinery: %w (run make build)", err))
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	wd := *dir
	if wd == "" {
		base := ""
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			base = "/dev/shm"
		}
		if wd, err = os.MkdirTemp(base, "joinery-bench-fleet"); err != nil {
			fail(err)
		}
		if !*keep {
			defer os.RemoveAll(wd)
		}
	}
	cfg := fleetbench.Config{
		Joinery: bin, BrokerArgv: []string{self, "-broker"}, Dir: wd, Nodes: sizes,
		Workloads: strings.Split(*workloads, ","), Source: *source, QuotaCPU: *quota, PeriodUs: int(period.Microseconds()), Partitions: *partitions,
		Users: int(4000 * *scale), Domains: int(12000 * *scale), Changes: int(40000 * *scale),
		Timeout: *timeout, LatencyFor: *latFor, LatencyLoad: *latLoad,
		ProfileNodes: profSizes, ProfileOut: *profOut, ProfileLatency: *profLat, Trickle: *trickle, TrickleRate: *trickleRate, TraceOut: *traceOut, ColdStart: *coldStart, NodeLogLevel: *nodeLog, NoExpect: *noExpect, Log: os.Stderr,
	}
	rep, err := fleetbench.Run(ctx, cfg)
	if len(rep.Results) > 0 {
		fleetbench.SetEfficiency(rep.Results)
		_ = fleetbench.WriteTable(os.Stdout, rep.Results)
		for _, p := range []string{*out, *plotOut} {
			if p != "" {
				_ = os.MkdirAll(filepath.Dir(p), 0o755) // a scratch folder such as /tmp/joinery-bench
			}
		}
		if werr := fleetbench.WriteJSON(*out, rep); werr != nil {
			fmt.Fprintln(os.Stderr, "benchfleet:", werr)
		} else {
			fmt.Fprintln(os.Stderr, "benchfleet: wrote", *out)
		}
		if *plotOut != "" {
			if perr := fleetbench.Plot(rep, *plotOut); perr != nil {
				fmt.Fprintln(os.Stderr, "benchfleet:", perr)
			} else {
				fmt.Fprintln(os.Stderr, "benchfleet: wrote", *plotOut)
			}
		}
	}
	if err != nil {
		if *keep || *dir != "" {
			fmt.Fprintln(os.Stderr, "benchfleet: files in", wd)
		}
		fail(err)
	}
}

func serveBroker() error {
	c, err := fleetbench.NewBroker()
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("broker %s\n", c.ListenAddrs()[0])
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchfleet:", err)
	os.Exit(1)
}
