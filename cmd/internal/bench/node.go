package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node"
)

// nodeRun runs the full node in-process on a file of lines: cluster of one,
// actors, the embedded store (redisAddr "") or Redis, a file source, and a
// changelog file sink whose output is checksummed after the measured part.
// measure wraps exactly node.Run and node.Close (the flush of pending state
// writes) for CPU time; the wall time is node.Run's alone (Close spends ~2 s
// idle in the graceful cluster leave). The job file, node start and reading
// the sink back are outside it; but Run's callers pass measure through and
// time the whole call, so the node levels' CPU counts the node's start and
// the sink's read-back too (the stream systems' streamsRun leaves them out).
//
// With peers > 0 (on Redis only) that many more nodes run in the same
// process, without sources: the ingesting node's keys spread over all of
// them, so most key requests take a remote hop over protoactor remoting,
// and the process's CPU counts every node's.
//
// budget is the job's state.memory_budget ("": the default, which on this
// machine holds every key of the bench's scales).
func nodeRun(ctx context.Context, w *Workload, dir, inPath, redisAddr, budget string, run, peers int, measure func(f func() error) error) (RunResult, error) {
	var excl harnessWork // starting the nodes and reading the sink back: not the engine's work
	excl.start()
	name := fmt.Sprintf("bench-%s-%d", strings.ReplaceAll(w.Name, "-", ""), run)
	outPath := filepath.Join(dir, name+".out.jsonl")
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	var seeds string
	for i := range peers {
		spec, err := nodeSpec(&Workload{Name: w.Name, NodeJob: w.NodeJob}, name, "", "", redisAddr, budget, seeds)
		if err != nil {
			return RunResult{}, err
		}
		p, err := node.Start(ctx, spec, node.Options{Logger: log, Stdout: io.Discard, Stdin: strings.NewReader("")})
		if err != nil {
			return RunResult{}, fmt.Errorf("peer %d start: %w", i+1, err)
		}
		defer p.Close(context.Background())
		if seeds == "" {
			seeds = p.GossipAddr()
		}
	}
	spec, err := nodeSpec(w, name, inPath, fmt.Sprintf("{type: file, path: %q, format: changelog}", outPath), redisAddr, budget, seeds)
	if err != nil {
		return RunResult{}, err
	}
	n, err := node.Start(ctx, spec, node.Options{Logger: log, Stdout: io.Discard, Stdin: strings.NewReader("")})
	if err != nil {
		return RunResult{}, fmt.Errorf("node start: %w", err)
	}
	defer n.Close(context.Background())
	for deadline := time.Now().Add(30 * time.Second); len(n.Members()) < peers+1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return RunResult{}, fmt.Errorf("only %d of %d nodes joined", len(n.Members()), peers+1)
		}
	}
	var runWall time.Duration
	var accounted int64
	excl.stop()
	if err := measure(func() error {
		t0 := time.Now()
		if err := n.Run(ctx); err != nil {
			return err
		}
		runWall = time.Since(t0)
		accounted = n.Budget().Bytes
		return n.Close(ctx)
	}); err != nil {
		return RunResult{}, fmt.Errorf("node run: %w", err)
	}
	defer os.Remove(outPath)
	stopCheck := excl.start()
	// An event-time join's output ids (and PKs) are built from the
	// node's source positions, which the core's Stepper and the baseline
	// (one stream, other offsets) do not share: its outputs are compared
	// on what both must agree on, each joined pair's columns and its
	// window's time (end-1), without the PK.
	res, err := checksumFile(outPath, len(w.NodeSources) == 0)
	stopCheck()
	res.Excluded, res.ExcludedMallocs, res.ExcludedBytes = excl.cpu, excl.mallocs, excl.bytes
	if err != nil {
		return res, err
	}
	res.Rejected = int(n.Stats().BadTotal())
	res.Late = int(n.Stats().Late.Load())
	res.Wall = runWall
	res.Accounted, res.BudgetPassivations = accounted, n.Stats().BudgetPassivations.Load()
	res.LocalRequests, res.RemoteRequests = keyRequests(n) // the peers read nothing, so send none
	return res, nil
}

// nodeSpec is w's node job: a node reading the file source inPath ("-":
// the node's stdin; "": no source, a node that only hosts key actors) into
// sink, on Redis when redisAddr is set, with state.memory_budget budget
// when set, joining the nodes at seeds (a gossip address; "": a cluster of
// its own). For a workload with NodeSources, it reads their files next to
// inPath (sideFile) instead.
func nodeSpec(w *Workload, name, inPath, sink, redisAddr, budget, seeds string) (*job.Spec, error) {
	_, tables, _ := strings.Cut(w.NodeJob, "tables:")
	sources := ""
	switch {
	case inPath == "":
	case len(w.NodeSources) > 0 && inPath == "-":
		return nil, fmt.Errorf("%s: its node input is %d files, not one stdin", w.Name, len(w.NodeSources))
	case len(w.NodeSources) > 0:
		sources = "sources:\n"
		for _, s := range w.NodeSources {
			sources += fmt.Sprintf("  - {name: %s, type: file, path: %q, side: %s, watermark: {max_out_of_orderness: %dms}}\n",
				s.Name, sideFile(inPath, s.Name), s.Side, s.BoundMs)
		}
	default:
		sources = fmt.Sprintf("sources: [{name: in, type: file, path: %q, tables: %s}]\n", inPath, strings.TrimSpace(tables))
	}
	return jobSpec(w, name, sources, sink, redisAddr, budget, "", seeds)
}

// jobSpec is w's join with the sources: section sources (YAML; "": none,
// and no sink either) writing to sink, on Redis when redisAddr is set,
// with state.memory_budget budget when set, as the cluster member
// nodeName ("": the default name) joining the nodes at seeds ("": a
// cluster of its own).
func jobSpec(w *Workload, name, sources, sink, redisAddr, budget, nodeName, seeds string) (*job.Spec, error) {
	join, _, _ := strings.Cut(w.NodeJob, "tables:")
	yml := "name: " + name + "\n" + join
	if sources != "" {
		yml += sources + "sinks: [" + sink + "]\n"
	}
	cl := "profile: local"
	if nodeName != "" {
		cl += ", node_name: " + nodeName
	}
	if seeds != "" {
		cl += fmt.Sprintf(", seeds: [%q]", seeds)
	}
	yml += "cluster: {" + cl + "}\n"
	switch {
	case redisAddr != "" && budget != "":
		yml += fmt.Sprintf("state: {store: redis, redis: {addr: %q}, memory_budget: %q}\n", redisAddr, budget)
	case redisAddr != "":
		yml += fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", redisAddr)
	case budget != "":
		yml += fmt.Sprintf("state: {memory_budget: %q}\n", budget)
	}
	spec, err := job.Parse([]byte(yml))
	if err != nil {
		return nil, fmt.Errorf("job: %w\n%s", err, yml)
	}
	return spec, nil
}

// nodeLatency is the node's open-loop latency run: the node reads its stdin
// (a file source on "-") from a pipe that a feeder goroutine writes at rate
// events per second, event i (offset i+1) due at start + i/rate, in one
// write per wake-up of whatever is due (sleepUntil: woken on time, not up
// to a millisecond late with a burst of events); the stdout sink writes to a
// stampWriter. An output's latency is the time the sink wrote it minus its
// event's due time, the event found by the source offset in the output's
// id. The outputs are checksummed too.
func nodeLatency(ctx context.Context, w *Workload, lines [][]byte, redisAddr string, run int, rate float64) (Latency, Checksum, error) {
	name := fmt.Sprintf("bench-%s-lat-%d", strings.ReplaceAll(w.Name, "-", ""), run)
	spec, err := nodeSpec(w, name, "-", "{type: stdout, format: changelog}", redisAddr, "", "")
	if err != nil {
		return Latency{}, Checksum{}, err
	}
	out := &stampWriter{}
	pr, pw := io.Pipe()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	n, err := node.Start(ctx, spec, node.Options{Logger: log, Stdout: out, Stdin: pr})
	if err != nil {
		return Latency{}, Checksum{}, fmt.Errorf("node start: %w", err)
	}
	defer n.Close(context.Background())
	gap := float64(time.Second) / rate
	t0 := time.Now()
	due := func(i int) time.Time { return t0.Add(time.Duration(float64(i) * gap)) }
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		var buf []byte
		sent := 0
		for sent < len(lines) {
			sleepUntil(due(sent))
			upTo := min(len(lines), int(time.Since(t0).Seconds()*rate)+1)
			buf = buf[:0]
			for ; sent < upTo; sent++ {
				buf = append(append(buf, lines[sent]...), '\n')
			}
			if _, err := pw.Write(buf); err != nil {
				return
			}
		}
		pw.Close()
	}()
	runErr := n.Run(ctx)
	wall := time.Since(t0)
	pr.CloseWithError(io.ErrClosedPipe)
	<-fed
	if runErr != nil {
		return Latency{}, Checksum{}, fmt.Errorf("node run: %w", runErr)
	}
	if err := n.Close(ctx); err != nil {
		return Latency{}, Checksum{}, fmt.Errorf("node close: %w", err)
	}
	var l latencies
	var check Checksum
	var h Hasher
	var decErr error
	out.lines(func(line []byte, at time.Time, off int64) {
		o, err := changelog.DecodeChangelog(line)
		if err != nil {
			decErr = err
			return
		}
		check.Add(o.Kind, h.HashOutput(o, true))
		if off >= 1 && off <= int64(len(lines)) {
			l.add(at.Sub(due(int(off-1))), 1)
		}
	})
	if decErr != nil {
		return Latency{}, check, fmt.Errorf("sink output: %w", decErr)
	}
	lat := Latency{Rate: rate, Achieved: float64(len(lines)) / wall.Seconds()}
	l.summary(&lat)
	return lat, check, nil
}

// checksumFile reads a changelog file sink's output back.
func checksumFile(path string, withPK bool) (RunResult, error) {
	var res RunResult
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var h Hasher
	for sc.Scan() {
		o, err := changelog.DecodeChangelog(sc.Bytes())
		if err != nil {
			return res, fmt.Errorf("sink output: %w", err)
		}
		res.Check.Add(o.Kind, h.HashOutput(o, withPK))
	}
	return res, sc.Err()
}

// redisServer is a redis-server the harness started, RDB snapshots on.
type redisServer struct{ *testutil.RedisServer }

// startRedis starts redis-server on a free loopback port in dir with RDB
// snapshots on (save 1 1: a background save each second there were
// writes; internal/testutil's test servers save nothing), so the figures
// include what persistence costs Redis. Measured: the forks do not move the
// latency run's p99 (docs/performance/2026-12-05-latency.md, "p99 at half the rate"). It
// returns nil, nil when redis-server is not installed.
func startRedis(dir string) (*redisServer, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, nil
	}
	s, err := testutil.LaunchRedis(testutil.RedisConfig{Dir: dir, Args: []string{"--save", "1 1", "--loglevel", "warning"}, Log: io.Discard})
	if err != nil {
		return nil, err
	}
	return &redisServer{s}, nil
}

// Flush empties the server between runs.
func (r *redisServer) Flush() error {
	c := goredis.NewClient(&goredis.Options{Addr: r.Addr})
	defer c.Close()
	return c.FlushAll(context.Background()).Err()
}

// CPU is the server's user+system CPU time so far (Linux /proc; 0 elsewhere).
func (r *redisServer) CPU() time.Duration {
	if r == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.Pid()))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// Info returns the fields of the server's INFO section as numbers (those
// that parse as one).
func (r *redisServer) Info(section string) (map[string]float64, error) {
	c := goredis.NewClient(&goredis.Options{Addr: r.Addr})
	defer c.Close()
	txt, err := c.Info(context.Background(), section).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for _, l := range strings.Split(txt, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			m[k] = f
		}
	}
	return m, nil
}

// redisCounters are the server counters a node+redis run reports.
type redisCounters struct {
	inBytes float64 // total_net_input_bytes: what clients sent, i.e. the key snapshots
	saves   float64 // rdb_saves: background RDB snapshots taken
	// cmds is INFO commandstats: per command (as Redis names it: evalsha,
	// set, hset...; a script's commands count too), its calls and the
	// microseconds it took.
	cmds map[string]RedisCommand
}

// RedisCommand is one command's line of INFO commandstats over a run.
type RedisCommand struct {
	Calls  float64 `json:"calls"`
	Micros float64 `json:"usec"`
}

func (r *redisServer) counters() (redisCounters, error) {
	m, err := r.Info("all")
	if err != nil {
		return redisCounters{}, err
	}
	c := redisCounters{inBytes: m["total_net_input_bytes"], saves: m["rdb_saves"], cmds: map[string]RedisCommand{}}
	cl := goredis.NewClient(&goredis.Options{Addr: r.Addr})
	defer cl.Close()
	txt, err := cl.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return redisCounters{}, err
	}
	for _, l := range strings.Split(txt, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var rc RedisCommand
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				rc.Calls = f
			case "usec":
				rc.Micros = f
			}
		}
		c.cmds[strings.TrimPrefix(name, "cmdstat_")] = rc
	}
	return c, nil
}

// commandsSince is the commands run between c0 and c.
func (c redisCounters) commandsSince(c0 redisCounters) map[string]RedisCommand {
	out := map[string]RedisCommand{}
	for k, v := range c.cmds {
		v.Calls -= c0.cmds[k].Calls
		v.Micros -= c0.cmds[k].Micros
		if v.Calls > 0 {
			out[k] = v
		}
	}
	return out
}

// dumpBytes is the size of the server's RDB file (0 before the first save).
func (r *redisServer) dumpBytes() int64 {
	fi, err := os.Stat(filepath.Join(r.Dir, "dump.rdb"))
	if err != nil {
		return 0
	}
	return fi.Size()
}

var errInvalid = errors.New("checksum mismatch")

// harnessWork sums the CPU time and heap allocations of stretches of a
// run that are the harness's work, not the engine's.
type harnessWork struct {
	cpu     time.Duration
	mallocs uint64
	bytes   uint64
	c0      time.Duration
	m0, b0  uint64
	on      bool
}

// start begins a stretch and returns its stop.
func (h *harnessWork) start() func() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.c0, h.m0, h.b0, h.on = cpuNow(), ms.Mallocs, ms.TotalAlloc, true
	return h.stop
}

// stop ends the stretch begun by start (a no-op when none is open).
func (h *harnessWork) stop() {
	if !h.on {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.cpu += cpuNow() - h.c0
	h.mallocs += ms.Mallocs - h.m0
	h.bytes += ms.TotalAlloc - h.b0
	h.on = false
}
