package fleetbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
)

// Source kinds of Config.Source.
const (
	SourceKafka        = "kafka"
	SourceRedisStreams = "redis-streams"
	// SourceCoPartitioned is redis-streams with the shard streams
	// partitioned by the join key (partitioned_by: join_key): a key's
	// actor lives on the reader of its shard (docs/concepts/key-groups.md, "Key
	// groups"); a change that moves a row to another key is a delete and
	// a create, as Debezium emits them (cdcgen.ByJoinKey).
	SourceCoPartitioned = "copartitioned"
	// SourceRepartitioned is redis-streams (sharded by the primary key)
	// repartitioned by the join key (repartition: stream): each raw
	// shard's reader writes its records to the repartition streams of
	// their key groups, read where the groups' keys live.
	SourceRepartitioned = "repartitioned"
	// SourceBoth is kafka,redis-streams.
	SourceBoth = "both"
)

// ParseSources returns the source kinds s names: one kind, a comma list of
// them, or "both" (kafka, then redis-streams).
func ParseSources(s string) ([]string, error) {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		switch f = strings.TrimSpace(f); f {
		case SourceKafka, SourceRedisStreams, SourceCoPartitioned, SourceRepartitioned:
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		case SourceBoth:
			for _, k := range []string{SourceKafka, SourceRedisStreams} {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		default:
			return nil, fmt.Errorf("fleetbench: unknown source %q (kafka, redis-streams, copartitioned, repartitioned, both, or a comma list)", f)
		}
	}
	return out, nil
}

// Config sizes a benchmark run.
type Config struct {
	Joinery    string   // the joinery binary (make build: bin/joinery)
	BrokerArgv []string // a command that runs a kfake broker and prints "broker host:port" (cmd/benchfleet -broker)
	Dir        string   // working directory: configs, logs, Redis data
	Nodes      []int    // fleet sizes, e.g. 1 2 3 4
	Workloads  []string // cdc, q20
	// Source is the partitioned source kind, or a comma list of them
	// (ParseSources): kafka (a topic per table, one consumer group), or
	// redis-streams (a sharded Redis Streams source: shard streams per
	// table, their leases spread over the fleet; redisstreams.go).
	Source      string
	QuotaCPU    float64 // each node's cgroup CPU quota, in CPUs
	PeriodUs    int     // the CFS period of the quota (CgroupPeriodUs when 0)
	Partitions  int     // partitions of every input topic, shard streams of every sharded table
	Users       int     // cdcgen user id space
	Domains     int     // cdcgen domain id space
	Changes     int     // cdcgen changes after the snapshot
	Timeout     time.Duration
	LatencyFor  time.Duration // open-loop latency run length
	LatencyLoad float64       // its rate as a fraction of the measured max (0.5)
	// ProfileNodes lists fleet sizes of which a 10 s CPU profile of node 1
	// is taken from the start of the measuring window, to
	// ProfileOut-<workload>-<N>nodes.pprof.
	ProfileNodes []int
	ProfileOut   string
	// ProfileLatency takes a CPU profile of node 1 over the middle half of
	// every open-loop latency run, to
	// ProfileOut-<workload>-<N>nodes-latency.pprof.
	ProfileLatency bool
	// Trickle runs the trickle row instead of the fleet sizes: one node
	// without a CPU quota (QuotaCPU is ignored), its backlog read (the
	// state the probes join with), then, once it is idle, one probe every
	// 1/TrickleRate seconds for LatencyFor: latency at a trickle, where
	// nothing has anything to batch with (docs/performance/2026-12-05-fleet.md, "Latency at a
	// trickle").
	Trickle     bool
	TrickleRate float64 // probes per second of the trickle row (DefaultTrickleRate when 0)
	// TraceOut, with Trickle, is the prefix of the execution traces of
	// the node over the middle half of the probes,
	// TraceOut-<source>-<workload>.trace (none when empty).
	TraceOut string
	// ColdStart runs the cold-start rows instead of the fleet sizes'
	// backlog and latency runs: the whole input is written to the shard
	// streams first, then the fleet starts, timed from the nodes' start
	// until every entry of every shard stream (with repartitioned, of the
	// repartition streams too) is acknowledged — the leases spreading
	// included. Shard-stream sources only (docs/performance/2026-12-05-fleet.md, "Cold start").
	ColdStart bool
	// NoExpect leaves cluster.expect out of the nodes' job files (by
	// default it is the fleet size), to measure a fleet without it.
	NoExpect bool
	// NodeLogLevel is the nodes' --log-level (default warn).
	NodeLogLevel string
	Log          io.Writer
}

// DefaultTrickleRate is the trickle row's rate: one probe every 10 ms.
const DefaultTrickleRate = 100

// ModeTrickle is Result.Mode of a trickle row.
const ModeTrickle = "trickle"

// ModeColdStart is Result.Mode of a cold-start row (Config.ColdStart).
const ModeColdStart = "cold-start"

// quota is a node's CPU quota, 0 for none (the trickle row).
func (c Config) quota() float64 {
	if c.Trickle {
		return 0
	}
	return c.QuotaCPU
}

// Run runs every workload on every fleet size and returns the report.
func Run(ctx context.Context, c Config) (Report, error) {
	if c.Trickle {
		c.Nodes = []int{1}
		c.TrickleRate = cmp.Or(c.TrickleRate, DefaultTrickleRate)
	}
	rep := Report{NumCPU: runtime.NumCPU(), QuotaCPU: c.quota(), PeriodUs: cmp.Or(c.PeriodUs, CgroupPeriodUs), Partitions: c.Partitions, Source: c.Source, Machine: machine()}
	srcs, err := ParseSources(c.Source)
	if err != nil {
		return rep, err
	}
	rep.Source = strings.Join(srcs, ",")
	if c.Partitions < 1 || c.Partitions > streamshard.MaxShards {
		return rep, fmt.Errorf("fleetbench: %d partitions: want 1 to %d", c.Partitions, streamshard.MaxShards)
	}
	var wls []*workload
	for _, name := range c.Workloads {
		w, err := newWorkload(name, c)
		if err != nil {
			return rep, err
		}
		wls = append(wls, w)
	}
	// The cgroups first: without them there is nothing to measure (the
	// trickle row runs without a quota).
	if c.quota() > 0 {
		probe, err := MakeCgroup(CgroupRoot, "joinery-bench", "probe", c.QuotaCPU, c.PeriodUs)
		if err != nil {
			return rep, err
		}
		if err := probe.Remove(); err != nil {
			return rep, err
		}
		defer os.Remove(filepath.Join(CgroupRoot, "joinery-bench"))
	}
	inf := &infra{}
	if inf.rc, err = StartRedisCluster(ctx, c.Dir, 3); err != nil {
		return rep, err
	}
	defer inf.rc.Stop()
	c.logf("redis cluster: %v", inf.rc.Addrs)
	// The broker runs for either source: the sink is a Kafka topic, which
	// the latency consumer reads.
	if inf.broker, inf.brokerAddr, err = startBroker(ctx, c); err != nil {
		return rep, err
	}
	defer inf.broker.Stop(10 * time.Second)
	c.logf("kafka (kfake, pid %d): %s", inf.broker.Pid(), inf.brokerAddr)
	if slices.ContainsFunc(srcs, func(s string) bool { return s != SourceKafka }) {
		// The shard streams' server: a plain redis-server, not CPU-limited
		// (the source has no Redis Cluster client).
		if inf.streams, err = testutil.LaunchRedis(testutil.RedisConfig{Dir: filepath.Join(c.Dir, "redis-streams"), LogName: "redis.log"}); err != nil {
			return rep, fmt.Errorf("fleetbench: %w", err)
		}
		inf.streamsAddr = inf.streams.Addr
		defer inf.streams.Stop()
		inf.rdb = redis.NewClient(&redis.Options{Addr: inf.streamsAddr})
		defer inf.rdb.Close()
		c.logf("redis streams (pid %d): %s", inf.streams.Pid(), inf.streamsAddr)
	}
	run := 0
	for _, src := range srcs {
		for _, w := range wls {
			for _, n := range c.Nodes {
				run++
				r, err := c.runOne(ctx, run, src, w, n, inf)
				if err != nil {
					return rep, fmt.Errorf("%s from %s on %d node(s): %w", w.name, src, n, err)
				}
				rep.Results = append(rep.Results, r)
				SetEfficiency(rep.Results)
				if c.Trickle {
					c.logf("%s from %s, trickle at %.0f/s: p50 %s ms, p99 %s ms, max %s ms (%d samples)", w.name, src, r.LatencyRate,
						fnum(r.P50Ms, 1), fnum(r.P99Ms, 1), fnum(r.MaxMs, 1), r.LatencySamples)
					continue
				}
				if c.ColdStart {
					c.logf("%s from %s, cold start on %d node(s): %.2f s, %.0f events/s, efficiency %s", w.name, src, n, r.WindowS, r.EventsPerSec,
						fnum(rep.Results[len(rep.Results)-1].Efficiency, 2))
					continue
				}
				c.logf("%s from %s, %d node(s): %.0f events/s, efficiency %s, p99 %s ms", w.name, src, n, r.EventsPerSec,
					fnum(rep.Results[len(rep.Results)-1].Efficiency, 2), fnum(r.P99Ms, 1))
			}
		}
	}
	return rep, nil
}

// infra is what the runs share: the state cluster, the broker (the sink's
// topic; the kafka source's topics), and with redis-streams the shard
// streams' server and a client of it.
type infra struct {
	rc          *RedisCluster
	broker      *Proc
	brokerAddr  string
	streams     *testutil.RedisServer
	streamsAddr string
	rdb         *redis.Client
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "benchfleet: "+format+"\n", args...)
	}
}

func machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs, %s/%s", model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}

// startBroker runs c.BrokerArgv and reads the broker's address from its
// output ("broker host:port").
func startBroker(ctx context.Context, c Config) (*Proc, string, error) {
	p, err := StartProc(c.Dir, "kafka", nil, c.BrokerArgv...)
	if err != nil {
		return nil, "", err
	}
	var addr string
	err = testutil.Poll(ctx, 30*time.Second, pollEvery, "kfake broker address", func() error {
		b, _ := os.ReadFile(p.Log)
		for l := range strings.SplitSeq(string(b), "\n") {
			if a, ok := strings.CutPrefix(l, "broker "); ok {
				addr = strings.TrimSpace(a)
				return nil
			}
		}
		if !p.Running() {
			return fmt.Errorf("broker exited: %s", b)
		}
		return errors.New("no address yet")
	})
	if err != nil {
		p.Kill()
		return nil, "", err
	}
	return p, addr, nil
}
