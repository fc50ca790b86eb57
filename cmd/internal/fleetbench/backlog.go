package fleetbench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/internal/testutil"
)

// sample is one reading of the fleet's counters.
type sample struct {
	t                       time.Time
	in                      float64
	nodeCPU, redisCPU, self float64 // redisCPU: the cluster's and the streams' server's
	streamsCPU              float64 // the shard streams' redis-server
	broker, throttled       float64
	// The nodes' Go runtime (admin's go_cpu_classes_* and
	// go_gc_cycles_total_gc_cycles_total, summed): the collector's CPU, the
	// time their Ps were not idle, and the collections completed.
	gcCPU, busyCPU, gcCycles float64
}

func (c Config) runOne(ctx context.Context, run int, src string, w *workload, n int, inf *infra) (Result, error) {
	workload := w.name
	res := Result{Source: src, Workload: workload, Nodes: n, P50Ms: math.NaN(), P99Ms: math.NaN(), MaxMs: math.NaN(),
		SinkP50Ms: math.NaN(), SinkP99Ms: math.NaN(), SinkMaxMs: math.NaN(), LatencyCPUPerEventUs: math.NaN(), LatencyProbeNodeCPU: math.NaN(),
		GCShare: math.NaN(), LatencyGCCycles: math.NaN(), LatencyGCShare: math.NaN()}
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
	f, srcs, err := c.feed(ctx, cl, run, src, w, inf)
	if err != nil {
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
	if err := c.waitReaders(ctx, cl, run, src, w, n, inf); err != nil {
		return res, err
	}
	c.logf("%s from %s, %d node(s): fleet up, feeding %d records over %d partitions per table", workload, src, n, len(msgs), c.Partitions)
	in := inCount{}
	if src == SourceRepartitioned {
		entries, err := repartitionEntries(w, msgs, c.Partitions)
		if err != nil {
			return res, err
		}
		in = inCount{repart: true, perEntry: float64(len(msgs)) / float64(entries)}
	}
	read := func() (sample, error) { return c.read(nodes, inf, in) }
	if err := c.backlog(ctx, &res, nodes, read, f, msgs, dir); err != nil {
		return res, err
	}
	if err := c.openLoop(ctx, &res, nodes, inf, read, run, f, w); err != nil {
		return res, err
	}
	if res.KeysPerShard, err = inf.rc.DBSize(); err != nil {
		return res, err
	}
	if res.CommandsPerShard, err = inf.rc.Commands(); err != nil {
		return res, err
	}
	return res, nil
}

// feed makes the run's topics and returns the feeder that writes the
// input for src and the job's sources section reading it.
func (c Config) feed(ctx context.Context, cl *kgo.Client, run int, src string, w *workload, inf *infra) (feeder, string, error) {
	topics := []string{topic("out", run)}
	var f feeder
	var srcs string
	switch src {
	case SourceKafka:
		topics = append(topics, topic(w.left, run), topic(w.right, run))
		f, srcs = kafkaFeeder{cl: cl, run: run}, kafkaSources(w, run, inf.brokerAddr)
	case SourceRedisStreams, SourceCoPartitioned, SourceRepartitioned:
		if err := inf.rdb.FlushAll(ctx).Err(); err != nil {
			return nil, "", fmt.Errorf("flush the streams' redis-server: %w", err)
		}
		f, srcs = redisFeeder{rdb: inf.rdb, run: run, shards: c.Partitions, byJoinKey: src == SourceCoPartitioned}, streamsSources(w, run, inf.streamsAddr, c.Partitions, src)
	default:
		return nil, "", fmt.Errorf("fleetbench: unknown source %q", src)
	}
	if err := createTopics(ctx, cl, int32(c.Partitions), topics...); err != nil {
		return nil, "", err
	}
	return f, srcs, nil
}

// waitReaders waits until every node of the fleet reads its share of the
// input: the consumer groups hold every node, or the shard leases are
// spread over them.
func (c Config) waitReaders(ctx context.Context, cl *kgo.Client, run int, src string, w *workload, n int, inf *infra) error {
	switch src {
	case SourceKafka:
		for _, g := range []string{w.left, w.right} {
			group := group(g, run)
			err := testutil.Poll(ctx, 2*time.Minute, pollEvery, "consumer group "+group+" stable with every node", func() error {
				m, err := groupMembers(ctx, cl, group)
				if err == nil && m != n {
					err = fmt.Errorf("%d of %d members", m, n)
				}
				return err
			})
			if err != nil {
				return err
			}
		}
	case SourceRedisStreams, SourceCoPartitioned, SourceRepartitioned:
		return waitLeases(ctx, inf.rdb, w, run, c.Partitions, n, src)
	}
	return nil
}

// backlog is the backlog run: everything produced at once; the window is
// from 20% to 90% of it read (res's window figures and EventsPerSec).
func (c Config) backlog(ctx context.Context, res *Result, nodes []*node, read func() (sample, error), f feeder, msgs []msg, dir string) error {
	workload, n := res.Workload, res.Nodes
	feedErr := make(chan error, 1)
	go func() { feedErr <- produceAll(ctx, f, msgs) }()
	total := float64(len(msgs))
	var s0, s1 *sample
	var profileDone chan error
	deadline := time.Now().Add(c.Timeout)
	for {
		s, err := read()
		if err != nil {
			return err
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
			return fmt.Errorf("backlog not read within %v: %.0f of %.0f records in (node logs in %s)", c.Timeout, s.in, total, dir)
		}
		select {
		case err := <-feedErr:
			if err != nil {
				return err
			}
			feedErr = nil
		default:
		}
		for _, nd := range nodes {
			if !nd.proc.Running() {
				return fmt.Errorf("%s exited (see %s)", nd.proc.Name, nd.proc.Log)
			}
		}
		time.Sleep(backlogSample)
	}
	if feedErr != nil {
		if err := <-feedErr; err != nil {
			return err
		}
	}
	win := s1.t.Sub(s0.t).Seconds()
	if win < minWindow.Seconds() {
		c.logf("%s from %s, %d node(s): the measured window is %.2f s, under %v: its figures rest on a few samples and the feed; use a larger -scale", workload, res.Source, n, win, minWindow)
	}
	c.setWindow(res, *s0, *s1, s1.in-s0.in, win, n)
	res.EventsPerSec = Rate(s0.in, s1.in, 0, win)
	if profileDone != nil {
		if err := <-profileDone; err != nil {
			c.logf("cpu profile: %v", err)
		} else {
			c.logf("cpu profile of n1 (%d nodes) in %s", n, c.profilePath(workload, n))
		}
	}
	return nil
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
	err = testutil.Poll(ctx, time.Minute, pollEvery, "the fleet idle after its backlog", func() error {
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

// backlogSample is how often the backlog run samples the records read. At
// 250 ms a fleet that drained 70% of a scale-1 q20 backlog in under a
// second was measured on three or four samples, and its efficiency came out
// anywhere from 0.55 to 0.98 for the same build (nodes at 70% of their
// quota: the window's edges, not the nodes, set the figure).
const backlogSample = 50 * time.Millisecond

// minWindow is the shortest measured window whose figures the run reports
// without a warning.
const minWindow = 2 * time.Second

// addRuntime adds a node's Go runtime figures from its /metrics text.
func (s *sample) addRuntime(metrics []byte) error {
	var v [4]float64
	for i, name := range []string{"go_cpu_classes_gc_total_cpu_seconds_total", "go_cpu_classes_total_cpu_seconds_total",
		"go_cpu_classes_idle_cpu_seconds_total", "go_gc_cycles_total_gc_cycles_total"} {
		x, found, err := SumCounter(metrics, name)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("no %s", name)
		}
		v[i] = x
	}
	s.gcCPU += v[0]
	s.busyCPU += v[1] - v[2]
	s.gcCycles += v[3]
	return nil
}

// gcFigures are the collections completed from s0 to s1 and the
// collector's share of the nodes' busy CPU time (NaN without any).
func gcFigures(s0, s1 sample) (cycles, share float64) {
	share = math.NaN()
	if busy := s1.busyCPU - s0.busyCPU; busy > 0 {
		share = (s1.gcCPU - s0.gcCPU) / busy
	}
	return s1.gcCycles - s0.gcCycles, share
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
	res.GCCycles, res.GCShare = gcFigures(s0, s1)
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
		if err := s.addRuntime(b); err != nil {
			return s, fmt.Errorf("%s metrics: %w", nd.proc.Name, err)
		}
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
		if s.streamsCPU, err = ProcCPU(inf.streams.Pid()); err != nil {
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
