package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/failpoint"
	"github.com/joinery/joinery/internal/testutil"
)

// fleet is a three-node job on one Redis: n1 reads the input and writes the
// changelog; n2 and n3 only host key actors.
type fleet struct {
	dir        string
	redis      *testutil.Redis
	n1, n2, n3 *proc
	n4, n5     *proc // not started by newFleet: the nodes that join mid-stream, or a bigger fleet's
	want       map[string]string
	out        string

	opts  fleetOpts
	recs  []*recovery      // one per fault, watching the output grow again
	admin [maxNodes]string // http://host:port of each node's admin endpoint (withAdmin)
}

// fleetOpts change a fleet from the default one of newFleet.
type fleetOpts struct {
	state         string               // extra state settings, e.g. "passivate_after: 50ms"
	admin         bool                 // serve each node's admin endpoint (/metrics)
	net           *netLab              // run each node in its own network namespace (withNetns)
	stateRedis    string               // the nodes' state.redis block (withStateRedis; default: the fleet's own Redis)
	rate          int                  // n1's input rate, changes per second (withRate; default about 4 s of input)
	bins          [maxNodes + 1]string // bins[n]: node n's joinery binary (withBinary; "": the one under test)
	env           [maxNodes + 1]string // env[n]: a VAR=value node n runs with (withEnv)
	trial, trials int                  // for the summary row (default 1 of 1)
}

type fleetOpt func(*fleetOpts)

// withState adds settings to every node's state: block.
func withState(s string) fleetOpt { return func(o *fleetOpts) { o.state = s } }

// withAdmin serves every node's admin endpoint (f.admin) for /metrics.
func withAdmin() fleetOpt { return func(o *fleetOpts) { o.admin = true } }

// withNetns runs node i in lab's namespace i, bound to its address there,
// with Redis reachable on lab's Redis address (see netLab).
func withNetns(lab *netLab) fleetOpt { return func(o *fleetOpts) { o.net = lab } }

// withStateRedis gives every node the state.redis block redis (e.g. a
// Redis Cluster's "{cluster: {addrs: [...]}}") instead of the fleet's own
// Redis, which is then not started.
func withStateRedis(redis string) fleetOpt { return func(o *fleetOpts) { o.stateRedis = redis } }

// withBinary runs node n (1-based) on the joinery binary bin.
func withBinary(n int, bin string) fleetOpt { return func(o *fleetOpts) { o.bins[n] = bin } }

// withEnv runs node n with the environment variable kv (VAR=value).
func withEnv(n int, kv string) fleetOpt { return func(o *fleetOpts) { o.env[n] = kv } }

// withRate paces n1's input at n changes per second.
func withRate(n int) fleetOpt { return func(o *fleetOpts) { o.rate = n } }

// inTrial names the trial (0-based) of n for the summary row.
func inTrial(trial, n int) fleetOpt {
	return func(o *fleetOpts) { o.trial, o.trials = trial+1, n }
}

// inputChanges is the size of the CDC input: CHAOS_CHANGES, default 20000
// (CI); `make chaos` runs 200000.
var inputChanges = envInt("CHAOS_CHANGES", 20000)

// moment picks a random number of output lines to wait for before a fault:
// somewhere in the first n/20000 of the run's output (n scaled to the input).
func moment(r *rand.Rand, n int) int { return 1 + r.IntN(n*inputChanges/20000) }

func newFleet(t *testing.T, seed uint64, opts ...fleetOpt) *fleet {
	t.Helper()
	f := &fleet{dir: t.TempDir(), opts: fleetOpts{trial: 1, trials: 1}}
	t.Cleanup(func() { keepFiles(t, f.dir) }) // after the nodes stopped, before the directory goes
	for _, o := range opts {
		o(&f.opts)
	}
	extraState := ""
	if f.opts.state != "" {
		extraState = ", " + f.opts.state
	}
	redisArgs := []string{"--appendonly", "yes", "--appendfsync", "always"}
	if f.opts.net != nil { // also on the address the namespaces route to
		redisArgs = append(redisArgs, "--bind", "127.0.0.1", f.opts.net.redisIP())
	}
	stateRedis := f.opts.stateRedis
	if stateRedis == "" {
		f.redis = testutil.StartRedis(t, redisArgs...)
		redisAddr := f.redis.Addr
		if f.opts.net != nil {
			_, port, _ := net.SplitHostPort(f.redis.Addr)
			redisAddr = net.JoinHostPort(f.opts.net.redisIP(), port)
		}
		stateRedis = fmt.Sprintf("{addr: %q}", redisAddr)
	}
	h := cdcgen.Generate(cdcgen.Config{Seed: seed, Users: 300, Domains: 900, Changes: inputChanges})
	f.want = h.LeftJoin()
	in, err := os.Create(filepath.Join(f.dir, "in.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range h.Lines {
		in.Write(append(l, '\n'))
	}
	in.Close()
	f.out = filepath.Join(f.dir, "out.jsonl")
	var ports [maxNodes]int
	for i := range ports {
		ports[i] = testutil.FreePort(t)
	}
	seedAddr := fmt.Sprintf("%s:%d", f.host(0), ports[0])
	secure := "" // off loopback (network namespaces) a node needs a gossip key and remoting TLS
	if f.opts.net != nil {
		certs := testutil.WriteTLSFiles(t, f.dir)
		secure = fmt.Sprintf(", secret_key: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=, tls: {ca_file: %q, cert_file: %q, key_file: %q}",
			certs.CA, certs.Cert, certs.Key)
	}
	for i := range maxNodes {
		job := jobYAML + fmt.Sprintf(`state: {store: redis, redis: %s%s}
cluster: {node_name: n%d, gossip: "%s:%d", remote: "%s:0", seeds: [%q], profile: lan, request_timeout: 2s%s}
`, stateRedis, extraState, i+1, f.host(i), ports[i], f.host(i), seedAddr, secure)
		if f.opts.admin {
			port := testutil.FreePort(t)
			f.admin[i] = fmt.Sprintf("http://%s:%d", f.host(i), port)
			job += fmt.Sprintf("admin: {addr: \"%s:%d\", pprof: true, insecure: true}\n", f.host(i), port)
		}
		if i == 0 {
			// Paced so a fault lands mid-stream: about 4 seconds of input.
			rate := max(6000, inputChanges/4)
			if f.opts.rate > 0 {
				rate = f.opts.rate
			}
			job += "sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}, rate: " + fmt.Sprint(rate) + "}]\n"
			job += "sinks: [{type: file, path: out.jsonl, format: changelog}]\n"
		}
		if err := os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("n%d.yaml", i+1)), []byte(job), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.n2 = f.start(t, 2)
	f.n3 = f.start(t, 3)
	return f
}

// maxNodes is how many nodes a fleet has job files for: newFleet starts
// n2 and n3, a test n1 (startReader) and any of n4 and n5 it needs.
const maxNodes = 5

// jobYAML is the chaos job's name and join, users ⋈ domains (left).
const jobYAML = `name: chaos
join:
  type: cdc
  mode: left
  left:  {name: users,   pk: id, join_on: id}
  right: {name: domains, pk: id, join_on: user_id}
  project:
    - {name: user_id,     from: users.id}
    - {name: firstname,   from: users.firstname}
    - {name: lastname,    from: users.lastname}
    - {name: domain_id,   from: domains.id}
    - {name: domain_name, from: domains.domain_name}
`

// keepFiles copies a fleet's directory under CHAOS_KEEP, when set.
func keepFiles(t *testing.T, dir string) {
	if keep := os.Getenv("CHAOS_KEEP"); keep != "" {
		dst := filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
			t.Logf("CHAOS_KEEP: %v", err)
		} else {
			t.Logf("kept the fleet's files in %s", dst)
		}
	}
}

// host is the address node i (0-based) binds: loopback, or its namespace's.
func (f *fleet) host(i int) string {
	if f.opts.net != nil {
		return f.opts.net.nodeIP(i + 1)
	}
	return "127.0.0.1"
}

// start starts node n (1-based) from its nN.yaml, in its namespace if any.
func (f *fleet) start(t *testing.T, n int) *proc {
	t.Helper()
	var wrap []string
	if f.opts.net != nil {
		wrap = f.opts.net.exec(n)
	}
	if kv := f.opts.env[n]; kv != "" {
		wrap = append(wrap, "env", kv)
	}
	p := startProcBin(t, f.dir, fmt.Sprint("n", n), fmt.Sprintf("n%d.yaml", n), f.opts.bins[n], nil, wrap...)
	if f.opts.admin {
		// Its admin endpoint serves once the node has started: a test that
		// reads every node's /metrics as soon as output flows must not
		// race a node still starting (n1 can write output before n2 and n3
		// have come up on a loaded machine: PassivateEveryKey failed so).
		base := f.admin[n-1]
		// Any answer will do (a probe's verdict is the tests' to check).
		testutil.WaitFor(t, scaled(time.Minute), func() error {
			resp, err := http.Get(base + "/healthz")
			if err != nil {
				return err
			}
			return resp.Body.Close()
		})
	}
	return p
}

func (f *fleet) startReader(t *testing.T) { f.n1 = f.start(t, 1) }

// fault marks the moment of a fault: the summary's recovery time is the
// longest wait, over the faults, until the output grew again.
func (f *fleet) fault() { f.recs = append(f.recs, watchRecovery(f.out)) }

func (f *fleet) finish(t *testing.T) {
	t.Helper()
	row := summaryRow{
		Scenario: strings.TrimPrefix(strings.SplitN(t.Name(), "/", 2)[0], "TestChaos"),
		Trial:    f.opts.trial, Trials: f.opts.trials,
		EventsIn: inputChanges, Lost: len(f.want), RecoveryMS: -1, MaxStallMS: -1,
	}
	defer func() { record1(row) }() // also when a check below fails the test
	err := f.n1.wait(scaled(3 * time.Minute))
	for _, rc := range f.recs {
		rt := rc.done()
		row.RecoveryMS = max(row.RecoveryMS, ms(rt.first))
		row.MaxStallMS = max(row.MaxStallMS, ms(rt.stall))
	}
	row.Outputs, row.Fenced, row.DupIDs = lineCount(f.out), fencedWrites(f.dir), dupOutputs(f.out)
	if err != nil {
		logs, _ := os.ReadFile(filepath.Join(f.dir, "n1.log"))
		t.Fatalf("reading node: %v\n%s", err, tail(logs, 3000))
	}
	got, lines, dups := table(t, f.out)
	bad := compare(t, got, f.want)
	row.Equal, row.Lost = bad == 0, rowsLost(got, f.want)
	t.Logf("changelog: %d lines, %d repeated ids (at-least-once re-emissions)", lines, dups)
	f.n2.term()
	f.n3.term()
	row.Fenced = fencedWrites(f.dir)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// TestChaosFaultFree is the baseline: three nodes, no fault.
func TestChaosFaultFree(t *testing.T) {
	f := newFleet(t, 1)
	f.startReader(t)
	f.finish(t)
}

// TestChaosKillActorNode kills -9 a node that hosts key actors at a random
// moment; its keys move to the others through Redis, requests to it are
// retried, and the result equals the fault-free one.
func TestChaosKillActorNode(t *testing.T) {
	for trial := range killTrials(3) {
		seed := uint64(100 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed))
			f := newFleet(t, seed, inTrial(trial, killTrials(3)))
			f.startReader(t)
			waitLines(t, f.out, moment(r, 20000), time.Minute)
			f.fault()
			f.n2.kill()
			t.Logf("killed n2 with %d output lines written", lineCount(f.out))
			f.finish(t)
		})
	}
}

// TestChaosKillReaderNode kills -9 the node that reads the input and writes
// the changelog, at a random moment, and starts it again: it resumes from
// the committed offsets, the key actors skip what they applied and re-send
// the outputs that may not have reached the sink; no row is lost or wrong.
func TestChaosKillReaderNode(t *testing.T) {
	for trial := range trials(2) {
		seed := uint64(200 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed))
			f := newFleet(t, seed, inTrial(trial, trials(2)))
			f.startReader(t)
			waitLines(t, f.out, moment(r, 20000), time.Minute)
			f.fault()
			f.n1.kill()
			t.Logf("killed n1 with %d output lines written", lineCount(f.out))
			f.startReader(t)
			f.finish(t)
		})
	}
}

// TestChaosKillRedis kills -9 Redis at a random moment and restarts it from
// its append-only file (appendfsync always) a moment later: nodes stall
// (state writes, loads and commits are retried), then recover by themselves;
// nothing acknowledged was lost.
func TestChaosKillRedis(t *testing.T) {
	for trial := range trials(1) {
		seed := uint64(300 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed))
			f := newFleet(t, seed, inTrial(trial, trials(1)))
			f.startReader(t)
			waitLines(t, f.out, moment(r, 20000), time.Minute)
			f.fault()
			f.redis.Kill()
			t.Logf("killed redis with %d output lines written", lineCount(f.out))
			time.Sleep(time.Duration(500+r.IntN(1500)) * time.Millisecond) // the outage itself, not a wait for a condition
			f.redis.Start()
			f.finish(t)
		})
	}
}

// TestChaosPauseActorNode stops (SIGSTOP) a node that hosts key actors past
// failure detection, lets its keys move, then continues it (SIGCONT): the
// paused node wakes up with stale activations, and their state writes must be
// refused (fenced) — the result equals the fault-free one, and at least one
// write was refused. The pause is 12 s: memberlist (profile lan) marks n2
// failed about 5 s into it, so its keys live elsewhere (a newer epoch writes
// them) for ~7 s before n2 wakes with its pending writes. n2 waits 100 ms
// before each state write batch (JOINERY_FAILPOINT=delay-state-write:100ms),
// so the pause always finds a write on its way: without it a pause that fell
// between two batches left n2 nothing to write when it woke (0 refused in 1
// of 3 trials of a full run). CHAOS_PAUSE overrides the pause.
func TestChaosPauseActorNode(t *testing.T) {
	for trial := range trials(1) {
		seed := uint64(400 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed))
			f := newFleet(t, seed, withAdmin(), withEnv(2, failpoint.Env+"=delay-state-write:100ms"), inTrial(trial, trials(1)))
			f.startReader(t)
			waitFormed(t, f, 3) // a node that never joined is declared dead by no one
			waitLines(t, f.out, moment(r, 15000), time.Minute)
			if err := f.n2.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			f.fault()
			t.Logf("stopped n2 with %d output lines written", lineCount(f.out))
			// Past memberlist's failure detection (profile lan): the fleet
			// declares n2 dead and its keys reactivate elsewhere.
			pause, err := time.ParseDuration(envStr("CHAOS_PAUSE", "12s"))
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(pause) // the pause itself, not a wait for a condition
			if err := f.n2.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			// n1 and n3 declared n2 dead: n2 learns it from their gossip
			// and reports that it needs a restart (cluster.DeadNotice).
			testutil.WaitFor(t, 45*time.Second, func() error {
				logs, _ := os.ReadFile(filepath.Join(f.dir, "n2.log"))
				if !bytes.Contains(logs, []byte("declared dead by its live peers")) {
					return errors.New("n2 has not logged that it was declared dead")
				}
				return nil
			})
			f.finish(t)
			logs, _ := os.ReadFile(filepath.Join(f.dir, "n2.log"))
			fenced := bytes.Count(logs, []byte("key write fenced"))
			t.Logf("n2 logged %d fenced writes after waking", fenced)
			if fenced < 1 {
				t.Errorf("n2 logged no refused (fenced) state write after a %v pause, want >= 1: its stale activations were not fenced out, or had nothing to write", pause)
			}
		})
	}
}

// TestChaosRebalance changes the fleet while events flow: a fourth node
// joins (keys whose placement moves to it reactivate there from Redis, the
// old activations are fenced out), then a node that hosts key actors leaves
// gracefully (SIGTERM: it drains, passivates and leaves the cluster), then
// it comes back. The result equals the fault-free one.
func TestChaosRebalance(t *testing.T) {
	for trial := range trials(1) {
		seed := uint64(600 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed))
			f := newFleet(t, seed, inTrial(trial, trials(1)))
			f.startReader(t)
			waitLines(t, f.out, moment(r, 5000), time.Minute)
			f.fault()
			f.n4 = f.start(t, 4)
			t.Logf("n4 joined with %d output lines written", lineCount(f.out))
			waitLines(t, f.out, lineCount(f.out)+moment(r, 4000), time.Minute)
			f.fault()
			f.n3.term()
			t.Logf("n3 left gracefully with %d output lines written", lineCount(f.out))
			waitLines(t, f.out, lineCount(f.out)+moment(r, 3000), time.Minute)
			f.fault()
			f.n3 = f.start(t, 3)
			t.Logf("n3 rejoined with %d output lines written", lineCount(f.out))
			f.finish(t)
			f.n4.term()
		})
	}
}

// TestChaosGracefulRestartReader stops the reading node with SIGTERM at a
// random moment and starts it again: a graceful stop drains (stops reading,
// completes and commits what it sent), so the restart replays nothing and no
// output is written twice.
func TestChaosGracefulRestartReader(t *testing.T) {
	seed := uint64(500)
	r := rand.New(rand.NewPCG(seed, seed))
	f := newFleet(t, seed)
	f.startReader(t)
	waitLines(t, f.out, moment(r, 20000), time.Minute)
	f.fault()
	f.n1.term()
	t.Logf("stopped n1 with %d output lines written", lineCount(f.out))
	f.startReader(t)
	f.finish(t)
	if _, _, dups := table(t, f.out); dups != 0 {
		t.Errorf("%d outputs written twice after a graceful restart, want 0", dups)
	}
}
