package fleetbench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
)

// Source kinds of Config.Source.
const (
	SourceKafka        = "kafka"
	SourceRedisStreams = "redis-streams"
	// SourceCoPartitioned is redis-streams with the shard streams
	// partitioned by the join key (partitioned_by: join_key): a key's
	// actor lives on the reader of its shard (docs/architecture.md, "Key
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
	// nothing has anything to batch with (docs/scaling.md, "Latency at a
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
	// included. Shard-stream sources only (docs/scaling.md, "Cold start").
	ColdStart bool
	// NoExpect leaves cluster.expect out of the nodes' job files (by
	// default it is the fleet size), to measure a fleet without it.
	NoExpect bool
	// NodeLogLevel is the nodes' --log-level (default warn).
	NodeLogLevel string
	Log          io.Writer
}

// expect is the nodes' cluster.expect in a fleet of n: n, or 0 with NoExpect.
func (c Config) expect(n int) int {
	if c.NoExpect {
		return 0
	}
	return n
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
		if inf.streams, inf.streamsAddr, err = StartRedis(ctx, filepath.Join(c.Dir, "redis-streams")); err != nil {
			return rep, err
		}
		defer inf.streams.Stop(5 * time.Second)
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
	streams     *Proc
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
	err = waitFor(ctx, 30*time.Second, "kfake broker address", func() error {
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

// inputs turns a workload's lines into input records of their table,
// with the Kafka key (table:id), the primary key ([id]) and the join key
// ([join column]) a feeder routes them by. byJoinKey: a change that moves
// a row to another join key becomes a delete and a create first, as
// Debezium emits them when a message key column changes (cdcgen.ByJoinKey).
func inputs(w *workload, byJoinKey bool) ([]msg, error) {
	lines := w.lines
	if byJoinKey {
		keyed, err := cdcgen.ByJoinKey(w.lines, w.joinCols)
		if err != nil {
			return nil, fmt.Errorf("%s input: %w", w.name, err)
		}
		lines = make([][]byte, len(keyed))
		for i, k := range keyed {
			lines[i] = k.Line
		}
	}
	out := make([]msg, 0, len(lines))
	for i, l := range lines {
		var env struct {
			Before map[string]json.RawMessage `json:"before"`
			After  map[string]json.RawMessage `json:"after"`
			Source struct {
				Table string `json:"table"`
			} `json:"source"`
		}
		if err := json.Unmarshal(l, &env); err != nil {
			return nil, fmt.Errorf("%s input line %d: %w", w.name, i, err)
		}
		row := env.After
		if row == nil {
			row = env.Before
		}
		id := row["id"]
		if len(id) == 0 || (env.Source.Table != w.left && env.Source.Table != w.right) {
			return nil, fmt.Errorf("%s input line %d has no row with an id or another table than %s and %s: %s", w.name, i, w.left, w.right, l)
		}
		jk := row[w.joinCols[env.Source.Table]]
		out = append(out, msg{table: env.Source.Table, key: fmt.Appendf(nil, "%s:%s", env.Source.Table, id), pk: fmt.Appendf(nil, "[%s]", id),
			jk: fmt.Appendf(nil, "[%s]", jk), value: l})
	}
	return out, nil
}

// topic is the Kafka topic of name in run run, and the base name of its
// shard streams.
func topic(name string, run int) string { return fmt.Sprintf("%s-%d", name, run) }

// kafkaSources is the sources: section of a node's job on the tables'
// topics, one consumer group per topic.
func kafkaSources(w *workload, run int, broker string) string {
	src := func(table, side string) string {
		return fmt.Sprintf("  - {name: %s, type: kafka, side: %s, kafka: {brokers: [%q], topic: %s, group: %s, start_offset: earliest}}\n",
			table, side, broker, topic(table, run), group(table, run))
	}
	return "sources:\n" + src(w.left, "left") + src(w.right, "right")
}

// nodeConfig is node i's (1-based) job file of run run of w, reading the
// sources srcs (kafkaSources, streamsSources).
// expect is cluster.expect (0: none).
func nodeConfig(w *workload, run, i int, srcs, broker string, redis []string, gossip, seed, admin, expect int) string {
	q := func(ss []string) string {
		b, _ := json.Marshal(ss)
		return string(b)
	}
	return w.join + srcs + fmt.Sprintf(`sinks:
  - {type: kafka, format: changelog, kafka: {brokers: [%[1]q], topic: %[2]s}}
state: {store: redis, redis: {cluster: {addrs: %[3]s}}}
cluster: {node_name: n%[4]d, gossip: "127.0.0.1:%[5]d", remote: "127.0.0.1:0", seeds: ["127.0.0.1:%[6]d"], profile: local, request_timeout: 5s%[8]s}
admin: {addr: "127.0.0.1:%[7]d", pprof: true}
`, broker, topic("out", run), q(redis), i, gossip, seed, admin, expectField(expect))
}

// expectField is nodeConfig's cluster.expect entry: none for 0 (a binary
// from before the setting reads the file too).
func expectField(expect int) string {
	if expect == 0 {
		return ""
	}
	return fmt.Sprintf(", expect: %d", expect)
}

// node is one running joinery node of a fleet.
type node struct {
	proc  *Proc
	cg    *Cgroup
	admin string // http://127.0.0.1:port
}

// sample is one reading of the fleet's counters.
type sample struct {
	t                       time.Time
	in                      float64
	nodeCPU, redisCPU, self float64 // redisCPU: the cluster's and the streams' server's
	streamsCPU              float64 // the shard streams' redis-server
	broker, throttled       float64
}

func (c Config) runOne(ctx context.Context, run int, src string, w *workload, n int, inf *infra) (Result, error) {
	workload := w.name
	res := Result{Source: src, Workload: workload, Nodes: n, P50Ms: math.NaN(), P99Ms: math.NaN(), MaxMs: math.NaN(),
		SinkP50Ms: math.NaN(), SinkP99Ms: math.NaN(), SinkMaxMs: math.NaN(), LatencyCPUPerEventUs: math.NaN(), LatencyProbeNodeCPU: math.NaN()}
	dir := filepath.Join(c.Dir, fmt.Sprintf("run%d-%s-%s-%dnodes", run, src, workload, n))
	if c.Trickle {
		res.Mode = ModeTrickle
		dir += "-trickle"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	if err := inf.rc.FlushAll(); err != nil {
		return res, err
	}
	if err := inf.rc.ResetStats(); err != nil {
		return res, err
	}
	msgs, err := inputs(w, src == SourceCoPartitioned)
	if err != nil {
		return res, err
	}
	res.Input = len(msgs)
	addr := inf.brokerAddr
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(20000))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	topics := []string{topic("out", run)}
	var f feeder
	var srcs string
	switch src {
	case SourceKafka:
		topics = append(topics, topic(w.left, run), topic(w.right, run))
		f, srcs = kafkaFeeder{cl: cl, run: run}, kafkaSources(w, run, addr)
	case SourceRedisStreams, SourceCoPartitioned, SourceRepartitioned:
		if err := inf.rdb.FlushAll(ctx).Err(); err != nil {
			return res, fmt.Errorf("flush the streams' redis-server: %w", err)
		}
		f, srcs = redisFeeder{rdb: inf.rdb, run: run, shards: c.Partitions, byJoinKey: src == SourceCoPartitioned}, streamsSources(w, run, inf.streamsAddr, c.Partitions, src)
	default:
		return res, fmt.Errorf("fleetbench: unknown source %q", src)
	}
	if err := createTopics(ctx, cl, int32(c.Partitions), topics...); err != nil {
		return res, err
	}
	if c.ColdStart {
		return c.coldStart(ctx, res, run, src, w, n, dir, srcs, msgs, f, inf)
	}
	// The fleet.
	nodes, err := c.startFleet(ctx, w, run, n, dir, srcs, addr, inf.rc.Addrs)
	defer func() { c.stopFleet(nodes) }()
	if err != nil {
		return res, err
	}
	switch src {
	case SourceKafka:
		for _, g := range []string{w.left, w.right} {
			group := group(g, run)
			err := waitFor(ctx, 2*time.Minute, "consumer group "+group+" stable with every node", func() error {
				m, err := groupMembers(ctx, cl, group)
				if err == nil && m != n {
					err = fmt.Errorf("%d of %d members", m, n)
				}
				return err
			})
			if err != nil {
				return res, err
			}
		}
	case SourceRedisStreams, SourceCoPartitioned, SourceRepartitioned:
		if err := waitLeases(ctx, inf.rdb, w, run, c.Partitions, n, src); err != nil {
			return res, err
		}
	}
	c.logf("%s from %s, %d node(s): fleet up, feeding %d records over %d partitions per table", workload, src, n, len(msgs), c.Partitions)

	// Backlog run: everything produced at once; the window is from 20% to
	// 90% of it read.
	in := inCount{}
	if src == SourceRepartitioned {
		entries, err := repartitionEntries(w, msgs, c.Partitions)
		if err != nil {
			return res, err
		}
		in = inCount{repart: true, perEntry: float64(len(msgs)) / float64(entries)}
	}
	read := func() (sample, error) { return c.read(nodes, inf, in) }
	feedErr := make(chan error, 1)
	go func() { feedErr <- produceAll(ctx, f, msgs) }()
	total := float64(len(msgs))
	var s0, s1 *sample
	var profileDone chan error
	deadline := time.Now().Add(c.Timeout)
	for {
		s, err := read()
		if err != nil {
			return res, err
		}
		if s0 == nil && s.in >= 0.2*total {
			s0 = &s
			if slices.Contains(c.ProfileNodes, n) && c.ProfileOut != "" {
				profileDone = make(chan error, 1)
				go func() { profileDone <- profile(ctx, nodes[0].admin, c.profilePath(workload, n)) }()
			}
		}
		if s1 == nil && s.in >= 0.9*total {
			s1 = &s
		}
		if s.in >= total {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("backlog not read within %v: %.0f of %.0f records in (node logs in %s)", c.Timeout, s.in, total, dir)
		}
		select {
		case err := <-feedErr:
			if err != nil {
				return res, err
			}
			feedErr = nil
		default:
		}
		for _, nd := range nodes {
			if !nd.proc.Running() {
				return res, fmt.Errorf("%s exited (see %s)", nd.proc.Name, nd.proc.Log)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	if feedErr != nil {
		if err := <-feedErr; err != nil {
			return res, err
		}
	}
	win := s1.t.Sub(s0.t).Seconds()
	c.setWindow(&res, *s0, *s1, s1.in-s0.in, win, n)
	res.EventsPerSec = Rate(s0.in, s1.in, 0, win)
	if profileDone != nil {
		if err := <-profileDone; err != nil {
			c.logf("cpu profile: %v", err)
		} else {
			c.logf("cpu profile of n1 (%d nodes) in %s", n, c.profilePath(workload, n))
		}
	}

	// Open-loop latency run at a fraction of the measured rate, once the
	// backlog's outputs are written: records in counts what the sources
	// read, and the joins and sink writes behind them may still be running.
	idle, err := c.quiet(ctx, nodes, inf)
	res.IdleNodeCPU = idle
	if err != nil {
		if ctx.Err() != nil {
			return res, err
		}
		c.logf("%v; measuring latency anyway", err)
	}
	l0, err := read()
	if err != nil {
		return res, err
	}
	rate := res.EventsPerSec * c.LatencyLoad
	if c.Trickle {
		rate = c.TrickleRate
	}
	lf := f
	if kf, ok := f.(kafkaFeeder); ok {
		// The probes go out without the backlog client's linger: the
		// feeder's own wait is not the service's latency.
		pcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0))
		if err != nil {
			return res, err
		}
		defer pcl.Close()
		kf.cl = pcl
		lf = kf
	}
	var traced chan error
	tracePath := fmt.Sprintf("%s-%s-%s.trace", c.TraceOut, src, workload)
	if c.Trickle && c.TraceOut != "" {
		// An execution trace of the node over the middle of the probes
		// (the latency run's consumer takes 2 s to start).
		traced = make(chan error, 1)
		go func() {
			select {
			case <-time.After(2*time.Second + c.LatencyFor/4):
			case <-ctx.Done():
			}
			traced <- fetchTo(ctx, nodes[0].admin+fmt.Sprintf("/debug/pprof/trace?seconds=%d", max(1, int(c.LatencyFor.Seconds()/2))), tracePath)
		}()
	}
	// The probing window's samples (the 2 s the output consumer takes to
	// start are not in it): the node CPU per record read while probing.
	var p0, p1 *sample
	var profiled chan error
	latProfile := c.profilePath(workload, n)
	latProfile = strings.TrimSuffix(latProfile, ".pprof") + "-latency.pprof"
	probing := func(start bool) {
		s, err := read()
		if err != nil {
			return
		}
		if !start {
			p1 = &s
			return
		}
		p0 = &s
		if c.ProfileLatency && c.ProfileOut != "" {
			profiled = make(chan error, 1)
			go func() {
				select {
				case <-time.After(c.LatencyFor / 4):
				case <-ctx.Done():
				}
				profiled <- profileFor(ctx, nodes[0].admin, latProfile, max(1, int(c.LatencyFor.Seconds()/2)))
			}()
		}
	}
	lat, toSink, rate, err := c.latency(ctx, run, lf, addr, w, rate, probing)
	if profiled != nil {
		if err := <-profiled; err != nil {
			c.logf("latency cpu profile: %v", err)
		} else {
			c.logf("cpu profile of n1 over the latency run (%d nodes) in %s", n, latProfile)
		}
	}
	if p0 != nil && p1 != nil && p1.in > p0.in {
		res.LatencyCPUPerEventUs = (p1.nodeCPU - p0.nodeCPU) / (p1.in - p0.in) * 1e6
		res.LatencyProbeNodeCPU = (p1.nodeCPU - p0.nodeCPU) / p1.t.Sub(p0.t).Seconds() / float64(n)
	}
	if traced != nil {
		if err := <-traced; err != nil {
			c.logf("trace: %v", err)
		} else {
			c.logf("execution trace of n1 over the trickle in %s (go tool trace)", tracePath)
		}
	}
	if err != nil {
		return res, err
	}
	if l1, err := read(); err == nil {
		cpu := (l1.nodeCPU - l0.nodeCPU) / l1.t.Sub(l0.t).Seconds() / float64(n)
		res.LatencyNodeCPU = cpu
		res.LatencyNodeCPUUtil = cpu / c.quota()
	}
	res.LatencyRate, res.LatencySamples = rate, len(lat)
	if len(lat) > 0 {
		res.P50Ms, res.P99Ms, res.MaxMs = Percentile(lat, 0.5), Percentile(lat, 0.99), Percentile(lat, 1)
		res.SinkP50Ms, res.SinkP99Ms, res.SinkMaxMs = Percentile(toSink, 0.5), Percentile(toSink, 0.99), Percentile(toSink, 1)
	}
	if res.KeysPerShard, err = inf.rc.DBSize(); err != nil {
		return res, err
	}
	if res.CommandsPerShard, err = inf.rc.Commands(); err != nil {
		return res, err
	}
	return res, nil
}

// quiet waits (up to a minute) until the fleet is idle: its nodes used
// under 10% of their quota over one second (without a quota, under 5% of
// a CPU).
// It returns the CPU a node used per second in that last second (the mean
// of the nodes).
func (c Config) quiet(ctx context.Context, nodes []*node, inf *infra) (float64, error) {
	prev, err := c.read(nodes, inf, inCount{})
	if err != nil {
		return math.NaN(), err
	}
	idle := math.NaN()
	err = waitFor(ctx, time.Minute, "the fleet idle after its backlog", func() error {
		time.Sleep(time.Second)
		s, err := c.read(nodes, inf, inCount{})
		if err != nil {
			return err
		}
		idle = (s.nodeCPU - prev.nodeCPU) / s.t.Sub(prev.t).Seconds() / float64(len(nodes))
		prev = s
		if c.quota() <= 0 {
			if idle > 0.05 {
				return fmt.Errorf("nodes at %.0f%% of a CPU", 100*idle)
			}
			return nil
		}
		if use := idle / c.quota(); use > 0.10 {
			return fmt.Errorf("nodes at %.0f%% of their quota", 100*use)
		}
		return nil
	})
	return idle, err
}

func (c Config) profilePath(w string, n int) string {
	return fmt.Sprintf("%s-%s-%dnodes.pprof", c.ProfileOut, w, n)
}

func (c Config) startFleet(ctx context.Context, w *workload, run, n int, dir, srcs, broker string, redis []string) ([]*node, error) {
	var nodes []*node
	seed := 0
	for i := 1; i <= n; i++ {
		gossip, err := FreePort()
		if err != nil {
			return nodes, err
		}
		admin, err := FreePort()
		if err != nil {
			return nodes, err
		}
		if i == 1 {
			seed = gossip
		}
		name := fmt.Sprintf("n%d", i)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(nodeConfig(w, run, i, srcs, broker, redis, gossip, seed, admin, c.expect(n))), 0o644); err != nil {
			return nodes, err
		}
		var cg *Cgroup // none for the trickle row: no CPU cap
		if c.quota() > 0 {
			if cg, err = MakeCgroup(CgroupRoot, "joinery-bench", fmt.Sprintf("node%d", i), c.QuotaCPU, c.PeriodUs); err != nil {
				return nodes, err
			}
		}
		level := c.NodeLogLevel
		if level == "" {
			level = "warn"
		}
		p, err := StartProc(dir, name, cg, c.Joinery, "run", "--config", name+".yaml", "--log-level", level)
		if err != nil {
			_ = cg.Remove()
			return nodes, err
		}
		nodes = append(nodes, &node{proc: p, cg: cg, admin: fmt.Sprintf("http://127.0.0.1:%d", admin)})
	}
	for _, nd := range nodes {
		err := waitFor(ctx, 2*time.Minute, nd.proc.Name+" sees the whole fleet", func() error {
			if !nd.proc.Running() {
				return fmt.Errorf("%s exited (see %s)", nd.proc.Name, nd.proc.Log)
			}
			var ms []json.RawMessage
			if err := getJSON(ctx, nd.admin+"/v1/members", &ms); err != nil {
				return err
			}
			if len(ms) != n {
				return fmt.Errorf("%d of %d members", len(ms), n)
			}
			return nil
		})
		if err != nil {
			return nodes, err
		}
	}
	return nodes, nil
}

// setWindow fills res's figures of a window of win seconds from s0 to s1
// in which events records went in, on n nodes.
func (c Config) setWindow(res *Result, s0, s1 sample, events, win float64, n int) {
	res.WindowS, res.Events = win, events
	res.NodeCPUs = s1.nodeCPU - s0.nodeCPU
	res.RedisCPUs = s1.redisCPU - s0.redisCPU
	res.StreamsRedisCPUs = s1.streamsCPU - s0.streamsCPU
	res.FeederCPUs = s1.self - s0.self
	res.BrokerCPUs = s1.broker - s0.broker
	res.ThrottledS = s1.throttled - s0.throttled
	res.CPUPerEventUs = 1e6 * res.NodeCPUs / res.Events
	res.EventsPerNodeCPUs = res.Events / res.NodeCPUs
	res.RedisCPUPerEventUs = 1e6 * res.RedisCPUs / res.Events
	res.NodeCPUUtil = res.NodeCPUs / (win * float64(n) * c.quota()) // +Inf without a quota: written as -1
}

// stopFleet stops the nodes and removes their cgroups.
func (c Config) stopFleet(nodes []*node) {
	for _, nd := range nodes {
		nd.proc.Stop(30 * time.Second)
	}
	for _, nd := range nodes {
		if err := nd.cg.Remove(); err != nil {
			c.logf("%v", err)
		}
	}
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func getJSON(ctx context.Context, url string, v any) error {
	b, err := get(ctx, url)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return b, nil
}

// inCount is how a run counts its input records from the nodes'
// joinery_records_in_total: every source's (the zero value), or with
// repartitioned only the repartition streams' readers' (the raw shards'
// readers only forward), times perEntry (input records per repartition
// entry: a record whose join keys are in two key groups makes two), so
// that the rate is of input records applied, not of records forwarded.
type inCount struct {
	repart   bool
	perEntry float64
}

// repartLabel ends the source label of a repartition streams' reader
// (job.RepartitionSuffix).
const repartLabel = `:repart"`

// read samples every counter: records in (all nodes, as in says), CPU
// seconds.
func (c Config) read(nodes []*node, inf *infra, in inCount) (sample, error) {
	s := sample{t: time.Now()}
	var keep func(string) bool
	if in.repart {
		keep = func(labels string) bool { return strings.Contains(labels, repartLabel) }
	}
	for _, nd := range nodes {
		b, err := get(context.Background(), nd.admin+"/metrics")
		if err != nil {
			return s, fmt.Errorf("%s metrics: %w", nd.proc.Name, err)
		}
		v, _, err := SumCounterWhere(b, "joinery_records_in_total", keep)
		if err != nil {
			return s, fmt.Errorf("%s metrics: %w", nd.proc.Name, err)
		}
		if in.repart {
			v *= in.perEntry
		}
		s.in += v
		cpu, err := nd.proc.CPU()
		if err != nil {
			return s, err
		}
		s.nodeCPU += cpu
		_, th := nd.cg.Throttled()
		s.throttled += th
	}
	rcpu, err := inf.rc.CPU()
	if err != nil {
		return s, err
	}
	for _, v := range rcpu {
		s.redisCPU += v
	}
	if inf.streams != nil {
		if s.streamsCPU, err = inf.streams.CPU(); err != nil {
			return s, err
		}
		s.redisCPU += s.streamsCPU
	}
	if s.self, err = ProcCPU(os.Getpid()); err != nil {
		return s, err
	}
	if s.broker, err = inf.broker.CPU(); err != nil {
		return s, err
	}
	return s, nil
}

// profile fetches a 10 s CPU profile from a node's admin endpoint.
func profile(ctx context.Context, admin, out string) error {
	return profileFor(ctx, admin, out, 10)
}

// profileFor fetches a CPU profile of secs seconds from a node's admin
// endpoint.
func profileFor(ctx context.Context, admin, out string, secs int) error {
	return fetchTo(ctx, admin+fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), out)
}

// fetchTo writes what GET url answers (a pprof profile or trace) to out.
func fetchTo(ctx context.Context, url, out string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: %s", resp.Status)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// latency runs the open-loop phase: w's probes (changes whose
// w.stampField carries the produce time) at rate per second for
// c.LatencyFor, and the latencies (ms) of the joined rows that carry them,
// as read from the output topic, and of the same rows to the sink's
// produce call (their record timestamps, in whole ms). It returns the rate
// it ran at. probing, when not nil, is called with true as the first probe
// goes out and with false once the outputs are in (or the wait for them
// gave up): the probing window.
func (c Config) latency(ctx context.Context, run int, f feeder, addr string, w *workload, rate float64, probing func(start bool)) (lat, toSink []float64, _ float64, _ error) {
	if rate < 1 {
		return nil, nil, rate, nil
	}
	probe, err := w.probes()
	if err != nil {
		return nil, nil, rate, err
	}
	prefix := fmt.Sprintf("lat-%d-", run)
	out, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic("out", run)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		return nil, nil, rate, err
	}
	defer out.Close()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := out.PollFetches(cctx)
			if cctx.Err() != nil {
				return
			}
			now := time.Now().UnixNano()
			fs.EachRecord(func(r *kgo.Record) {
				var o struct {
					Op  string         `json:"op"`
					Row map[string]any `json:"row"`
				}
				if json.Unmarshal(r.Value, &o) != nil || (o.Op != "+I" && o.Op != "+U") {
					return
				}
				name, _ := o.Row[w.stampField].(string)
				ts, ok := strings.CutPrefix(name, prefix)
				if !ok {
					return
				}
				ns, err := strconv.ParseInt(ts, 10, 64)
				if err != nil {
					return
				}
				mu.Lock()
				lat = append(lat, float64(now-ns)/1e6)
				// The record's timestamp is the sink's produce call (the
				// node's clock is this one), in whole milliseconds.
				toSink = append(toSink, float64(r.Timestamp.UnixMilli()-ns/1e6))
				mu.Unlock()
			})
		}
	}()
	time.Sleep(2 * time.Second) // the consumer has its end offsets
	if probing != nil {
		probing(true)
	}
	sent, lag, err := produceAt(ctx, f, rate, c.LatencyFor, func(i int) msg { return probe(prefix, i) })
	if err != nil {
		return nil, nil, rate, err
	}
	if lag > c.LatencyFor/10 {
		c.logf("latency run: the feeder ended %v behind its schedule", lag)
	}
	// Wait for the last outputs (at most 20 s after the last update).
	_ = waitFor(ctx, 20*time.Second, "latency outputs", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(lat) < sent {
			return fmt.Errorf("%d of %d", len(lat), sent)
		}
		return nil
	})
	if probing != nil {
		probing(false)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(lat) < sent {
		c.logf("latency run: %d of %d updates seen in the output within 20 s; the missing are left out of the percentiles", len(lat), sent)
	}
	return lat, toSink, rate, nil
}

// coldStart runs a cold-start row (Config.ColdStart): msgs are written to
// the shard streams, then n nodes start on them; the row's time is from
// their start until every entry of src's shard streams is acknowledged,
// and its EventsPerSec the input records over that time, so Efficiency is
// T(1)/(N×T(N)). The nodes' CPU is all they used, from their start.
func (c Config) coldStart(ctx context.Context, res Result, run int, src string, w *workload, n int, dir, srcs string, msgs []msg, f feeder, inf *infra) (Result, error) {
	res.Mode = ModeColdStart
	if src == SourceKafka {
		return res, errors.New("fleetbench: the cold-start rows are for the shard-stream sources (redis-streams, copartitioned, repartitioned)")
	}
	if err := produceAll(ctx, f, msgs); err != nil {
		return res, err
	}
	c.logf("%s from %s, %d node(s): cold start on %d records over %d partitions per table", w.name, src, n, len(msgs), c.Partitions)
	s0, err := c.read(nil, inf, inCount{}) // the servers' CPU before: they outlive the run
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	nodes, err := c.startFleet(ctx, w, run, n, dir, srcs, inf.brokerAddr, inf.rc.Addrs)
	defer func() { c.stopFleet(nodes) }()
	if err != nil {
		return res, err
	}
	c.logf("%s from %s, %d node(s): every node sees the fleet %.2f s after the start", w.name, src, n, time.Since(t0).Seconds())
	err = waitFor(ctx, c.Timeout, "every entry acknowledged", func() error {
		for _, nd := range nodes {
			if !nd.proc.Running() {
				return fmt.Errorf("%s exited (see %s)", nd.proc.Name, nd.proc.Log)
			}
		}
		time.Sleep(50 * time.Millisecond)
		return allAcked(ctx, inf.rdb, w, run, c.Partitions, src)
	})
	took := time.Since(t0)
	if err != nil {
		return res, fmt.Errorf("%w (node logs in %s)", err, dir)
	}
	s1, err := c.read(nodes, inf, inCount{})
	if err != nil {
		return res, err
	}
	c.setWindow(&res, s0, s1, float64(len(msgs)), took.Seconds(), n) // s0 has no nodes: theirs from their start
	res.EventsPerSec = res.Events / res.WindowS
	c.logf("%s from %s, %d node(s): cold start done in %.2f s", w.name, src, n, res.WindowS)
	return res, nil
}
