package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/joinery/joinery/internal/testutil"
)

const echoKind = "echo"

// testLogger discards logs unless JOINERY_TEST_LOG is set. Logging to t.Log
// is not an option: protoactor logs from goroutines that outlive the test.
func testLogger() *slog.Logger {
	if os.Getenv("JOINERY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// testConfig is a Config with loopback timings.
func testConfig(seeds ...string) Config {
	return Config{
		BindAddr:         "127.0.0.1",
		Seeds:            seeds,
		Profile:          ProfileLocal,
		GossipInterval:   20 * time.Millisecond,
		ProbeInterval:    200 * time.Millisecond,
		ProbeTimeout:     100 * time.Millisecond,
		PushPullInterval: time.Second,
		TCPTimeout:       time.Second,
		JoinRetryMin:     20 * time.Millisecond,
		JoinRetryMax:     200 * time.Millisecond,
		LeaveTimeout:     300 * time.Millisecond,
		Logger:           testLogger(),
	}
}

// freePort returns a port that was free for both TCP and UDP on loopback.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", l.Addr().String())
		l.Close()
		if err != nil {
			continue
		}
		u.Close()
		return port
	}
	t.Fatal("no free port")
	return 0
}

// echoActor answers any StringValue with "<actor system address>|<member ID>".
type echoActor struct{}

func (echoActor) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*wrapperspb.StringValue); ok {
		sys := ctx.ActorSystem()
		ctx.Respond(wrapperspb.String(sys.Address() + "|" + sys.ID))
	}
}

// fullStack reports whether test nodes run protoactor's full stack
// (remote over gRPC, gossip, disthash activations). Under -race they do
// not: protoactor-go itself has data races that the detector reports
// whenever that stack runs (Remote.Start writes gRPC's global logger on
// every start, BlockList.BlockedMembers reads without its lock while the
// gossip actor calls Block, Remote.Shutdown races its endpoint manager).
// Under -race, nodes are instead real protoactor Cluster and MemberList
// objects fed by a real Provider over real memberlist, without remoting,
// so the Provider's own concurrency is still race-checked; the request
// round trips run in the ordinary (non-race) test run.
const fullStack = !raceEnabled

type testNode struct {
	full     bool
	system   *actor.ActorSystem
	cluster  *protocluster.Cluster
	provider *Provider
	topo     atomic.Int32 // members in the last ClusterTopology published
	stopOnce sync.Once
}

// size is the member count protoactor's MemberList last saw, once the
// provider's publication of it has fully returned (so every other
// topology subscriber, e.g. disthash, has processed it too).
func (n *testNode) size() int {
	s := int(n.topo.Load())
	if n.provider.publishing.Load() {
		return -1
	}
	return s
}

func (n *testNode) addr() string { return n.system.Address() }

func (n *testNode) stop(t *testing.T, graceful bool) {
	n.stopOnce.Do(func() {
		if n.full {
			n.cluster.Shutdown(graceful) // calls provider.Shutdown only when graceful
		}
		if err := n.provider.Shutdown(graceful); err != nil {
			t.Errorf("provider shutdown: %v", err)
		}
		if !n.full {
			n.system.Shutdown()
		}
	})
}

// fleet starts test nodes and shuts them all down, concurrently, at test end.
type fleet struct {
	t     *testing.T
	mu    sync.Mutex
	nodes []*testNode
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	checkNoProviderGoroutines(t) // registered first, so it runs last
	f := &fleet{t: t}
	t.Cleanup(func() {
		f.mu.Lock()
		nodes := f.nodes
		f.mu.Unlock()
		var wg sync.WaitGroup
		for _, n := range nodes {
			wg.Go(func() { n.stop(t, true) })
		}
		wg.Wait()
	})
	return f
}

// start starts a full protoactor cluster member (remote over gRPC on its
// own loopback port) with a Provider built from cfg.
func (f *fleet) start(cfg Config) *testNode {
	f.t.Helper()
	return f.startMode(cfg, fullStack, false)
}

// startMode starts a node with the full protoactor stack or without
// remoting (see fullStack), as a member or as a client.
func (f *fleet) startMode(cfg Config, full, client bool) *testNode {
	f.t.Helper()
	p, err := New(cfg)
	if err != nil {
		f.t.Fatalf("New: %v", err)
	}
	n := &testNode{provider: p}
	n.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return testLogger() }))
	n.system.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*protocluster.ClusterTopology); ok {
			n.topo.Store(int32(len(t.Members)))
		}
	})
	port := freePort(f.t)
	remoteCfg := remote.Configure("127.0.0.1", port)
	kind := protocluster.NewKind(echoKind, actor.PropsFromProducer(func() actor.Actor { return echoActor{} }))
	ccfg := protocluster.Configure("joinery-test", p, disthash.New(), remoteCfg,
		protocluster.WithKinds(kind), protocluster.WithRequestTimeout(5*time.Second))
	n.cluster = protocluster.New(n.system, ccfg)
	f.mu.Lock()
	f.nodes = append(f.nodes, n)
	f.mu.Unlock()
	if full {
		n.full = true
		if client {
			n.cluster.StartClient()
		} else {
			n.cluster.StartMember()
		}
		return n
	}
	// Without remoting: give the system the address Remote.Start would,
	// and the Remote object whose BlockList MemberList consults.
	n.system.ProcessRegistry.Address = net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	n.cluster.Remote = remote.NewRemote(n.system, remoteCfg)
	start := p.StartMember
	if client {
		start = p.StartClient
	}
	if err := start(n.cluster); err != nil {
		f.t.Fatalf("start: %v", err)
	}
	return n
}

// startAll starts nodes concurrently (protoactor's StartMember sleeps 1 s).
func (f *fleet) startAll(cfgs ...Config) []*testNode {
	f.t.Helper()
	out := make([]*testNode, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() { out[i] = f.start(cfg) })
	}
	wg.Wait()
	return out
}

func waitSizes(t *testing.T, want int, nodes ...*testNode) {
	t.Helper()
	testutil.WaitUntil(t, 10*time.Second, fmt.Sprintf("%d nodes to see %d members", len(nodes), want), func() bool {
		for _, n := range nodes {
			if n.size() != want {
				return false
			}
		}
		return true
	})
}

// request asks the echo actor for identity and returns the serving
// node's actor system address.
func request(t *testing.T, n *testNode, identity string) string {
	t.Helper()
	res, err := n.cluster.Request(identity, echoKind, wrapperspb.String(identity))
	if err != nil {
		t.Fatalf("request %q: %v", identity, err)
	}
	sv, ok := res.(*wrapperspb.StringValue)
	if !ok {
		t.Fatalf("request %q: got %T %v", identity, res, res)
	}
	addr, _, _ := strings.Cut(sv.Value, "|")
	return addr
}

// checkNoProviderGoroutines fails the test if memberlist or Provider
// goroutines outlive it. (protoactor's own goroutines are not checked: it
// leaks some by design, e.g. its gossip loop after Shutdown(false).)
func checkNoProviderGoroutines(t *testing.T) {
	t.Cleanup(func() {
		var stacks string
		deadline := time.Now().Add(5 * time.Second)
		for {
			buf := make([]byte, 1<<20)
			stacks = string(buf[:runtime.Stack(buf, true)])
			leaked := false
			for _, g := range strings.Split(stacks, "\n\n") {
				if strings.Contains(g, "hashicorp/memberlist") || strings.Contains(g, "joinery/cluster.(*Provider)") {
					leaked = true
					stacks = g
					break
				}
			}
			if !leaked {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("provider goroutine leaked:\n%s", stacks)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// rendezvous is the member protoactor's disthash identity lookup places
// an echo identity on, given members: the oracle the round trips check
// the provider's topology against.
func rendezvous(identity string, members protocluster.Members) string {
	r := protocluster.NewRendezvous()
	r.UpdateMembers(members)
	return r.GetByClusterIdentity(protocluster.NewClusterIdentity(identity, echoKind))
}

func addrs(nodes ...*testNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.addr())
	}
	return out
}

func TestClusterThreeNodes(t *testing.T) {
	f := newFleet(t)
	n1 := f.start(testConfig())
	seed := n1.provider.GossipAddr()
	rest := f.startAll(testConfig(seed), testConfig(seed))
	n2, n3 := rest[0], rest[1]
	nodes := []*testNode{n1, n2, n3}
	waitSizes(t, 3, nodes...)

	// The admin view: every node lists all three, alive, once as itself.
	for _, n := range nodes {
		ms := n.provider.Members()
		if len(ms) != 3 {
			t.Fatalf("Members() = %+v, want 3", ms)
		}
		self := 0
		for _, m := range ms {
			if m.Status != StatusAlive || m.ID == "" || m.GossipAddr == "" || m.Client {
				t.Errorf("bad member %+v", m)
			}
			if fullStack && !slices.Contains(m.Kinds, echoKind) {
				t.Errorf("member %+v lacks kind %q", m, echoKind)
			}
			if m.Self {
				self++
				if m.ID != n.system.ID || m.Address != n.addr() || m.GossipAddr != n.provider.GossipAddr() {
					t.Errorf("self entry %+v does not match node %s/%s", m, n.system.ID, n.addr())
				}
			}
		}
		if self != 1 {
			t.Errorf("%d self entries in %+v", self, ms)
		}
	}

	if !fullStack {
		t.Log("request round trips skipped under -race (see fullStack)")
		return
	}
	served := map[string]int{}
	all := addrs(nodes...)
	topology := n1.provider.topology()
	if len(topology) != len(nodes) {
		t.Fatalf("n1's topology %v, want all %d nodes", topology, len(nodes))
	}
	for i := range 300 {
		id := fmt.Sprintf("user-%d", i)
		got := request(t, n1, id)
		served[got]++
		if want := rendezvous(id, topology); got != want {
			t.Errorf("identity %s served by %s, rendezvous over the provider's topology says %s", id, got, want)
		}
	}
	for _, a := range all {
		if served[a] == 0 {
			t.Errorf("node %s served no identity: %v", a, served)
		}
	}
	t.Logf("served per node: %v", served)
}

func TestClusterNodeLeaves(t *testing.T) {
	f := newFleet(t)
	n1 := f.start(testConfig())
	seed := n1.provider.GossipAddr()
	rest := f.startAll(testConfig(seed), testConfig(seed))
	n2, n3 := rest[0], rest[1]
	waitSizes(t, 3, n1, n2, n3)

	const ids = 60
	before := map[string]string{}
	if fullStack {
		for i := range ids {
			id := fmt.Sprintf("k-%d", i)
			before[id] = request(t, n1, id)
		}
	}

	n3.stop(t, true)
	start := time.Now()
	waitSizes(t, 2, n1, n2)
	t.Logf("survivors saw the leave %v after shutdown returned", time.Since(start))
	statusOf := func(n *testNode, id string) string {
		for _, m := range n.provider.Members() {
			if m.ID == id {
				return m.Status
			}
		}
		return "absent"
	}
	for _, n := range []*testNode{n1, n2} {
		testutil.WaitUntil(t, 5*time.Second, "survivor to report the departed node as left", func() bool {
			return statusOf(n, n3.system.ID) == StatusLeft
		})
	}

	if !fullStack {
		t.Log("request round trips skipped under -race (see fullStack)")
		return
	}
	survivors := n2.provider.topology()
	if len(survivors) != 2 {
		t.Fatalf("n2's topology after the leave: %v, want n1 and n2", survivors)
	}
	moved := 0
	for i := range ids {
		id := fmt.Sprintf("k-%d", i)
		got := request(t, n2, id)
		if want := rendezvous(id, survivors); got != want {
			t.Errorf("identity %s served by %s after leave, rendezvous over the survivors says %s", id, got, want)
		}
		if before[id] != n3.addr() && got != before[id] {
			t.Errorf("identity %s moved from surviving %s to %s", id, before[id], got)
		}
		if before[id] == n3.addr() {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no identity was on the departed node; test proves nothing")
	}
}

func TestClusterSeedStartsLater(t *testing.T) {
	f := newFleet(t)
	port1 := freePort(t)
	seed := net.JoinHostPort("127.0.0.1", fmt.Sprint(port1))
	n2 := f.start(testConfig(seed))
	// Node 2 is up and has already failed to reach its seed.
	testutil.WaitUntil(t, 10*time.Second, "node 2 to fail joining", func() bool { return n2.provider.joinFailures.Load() >= 1 })
	if s := n2.size(); s != 1 {
		t.Fatalf("node 2 sees %d members before its seed is up", s)
	}
	cfg1 := testConfig()
	cfg1.BindPort = port1
	n1 := f.start(cfg1)
	if got := n1.provider.GossipAddr(); got != seed {
		t.Fatalf("node 1 gossip address %s, want %s", got, seed)
	}
	waitSizes(t, 2, n1, n2)
}

func TestClusterEncryptionAndLabel(t *testing.T) {
	f := newFleet(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	secure := func(label string, key []byte, seeds ...string) Config {
		c := testConfig(seeds...)
		c.Label, c.SecretKey = label, key
		return c
	}
	a := f.start(secure("fleet-a", key))
	seed := a.provider.GossipAddr()
	ns := f.startAll(
		secure("fleet-a", key, seed),                                        // same key and label: joins
		secure("fleet-b", key, seed),                                        // other label
		secure("fleet-a", []byte("fedcba9876543210fedcba9876543210"), seed), // other key
		secure("fleet-a", nil, seed),                                        // no encryption
	)
	b, otherLabel, otherKey, plain := ns[0], ns[1], ns[2], ns[3]
	waitSizes(t, 2, a, b)
	for _, n := range []*testNode{otherLabel, otherKey, plain} {
		testutil.WaitUntil(t, 10*time.Second, "outsider to fail joining 3 times", func() bool { return n.provider.joinFailures.Load() >= 3 })
	}
	for _, n := range []*testNode{a, b} {
		if s := n.size(); s != 2 {
			t.Errorf("fleet node sees %d members, want 2", s)
		}
		if ms := n.provider.Members(); len(ms) != 2 {
			t.Errorf("fleet node lists %+v, want 2 members", ms)
		}
	}
	for _, n := range []*testNode{otherLabel, otherKey, plain} {
		if s := n.size(); s != 1 {
			t.Errorf("outsider sees %d members, want 1", s)
		}
	}
}

func TestClusterClient(t *testing.T) {
	f := newFleet(t)
	m1 := f.startMode(testConfig(), false, false)
	seed := m1.provider.GossipAddr()
	m2 := f.startMode(testConfig(seed), false, false)
	cl := f.startMode(testConfig(seed), false, true)
	// The client learns the two members; the members never count it.
	waitSizes(t, 2, m1, m2, cl)
	testutil.WaitUntil(t, 10*time.Second, "members to list the client", func() bool {
		for _, m := range m1.provider.Members() {
			if m.Client && m.ID == cl.system.ID {
				return true
			}
		}
		return false
	})
	if s := m1.size(); s != 2 {
		t.Fatalf("member topology has %d members with a client joined, want 2", s)
	}
}
