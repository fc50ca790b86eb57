package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/hashicorp/memberlist"

	"github.com/joinery/joinery/internal/backoff"
)

// ErrStarted is returned by StartMember/StartClient on a Provider that was
// already started: a Provider serves one cluster once.
var ErrStarted = errors.New("cluster: provider already started")

// ErrClosed is returned by StartMember/StartClient after Shutdown.
var ErrClosed = errors.New("cluster: provider shut down")

// Member statuses reported by Provider.Members.
const (
	StatusAlive   = "alive"   // a live member (memberlist alive or suspect)
	StatusLeaving = "leaving" // shutting down gracefully; no longer placed on
	StatusLeft    = "left"    // left gracefully; kept for Config.DepartedRetention
	StatusDead    = "dead"    // failed; kept for Config.DepartedRetention
)

// MemberInfo describes one node as this node sees it, for the admin CLI.
type MemberInfo struct {
	// ID is the protoactor member ID (the actor system ID); empty if the
	// node's meta could not be decoded.
	ID string
	// Name is the memberlist node name.
	Name string
	// Address is the protoactor remote address, "host:port".
	Address string
	// GossipAddr is the memberlist address, "host:port".
	GossipAddr string
	// Kinds are the cluster kinds the node hosts.
	Kinds []string
	// Status is StatusAlive, StatusLeaving, StatusLeft or StatusDead.
	Status string
	// Client is true for nodes started with StartClient (no kinds; not
	// part of the protoactor topology).
	Client bool
	// Self is true for this node.
	Self bool
	// KeysActive is how many key actors the node has activated, as it
	// last gossiped (within Config.StatsInterval plus gossip time); -1
	// when it does not say (no Config.KeysActive, an older node).
	KeysActive int64
	// Started is when the node started (its Provider); zero when unknown.
	Started time.Time
}

type providerState int

const (
	stateNew providerState = iota
	stateStarting
	stateRunning
	stateClosed
)

// nodeView is the provider's copy of one memberlist node, taken inside
// memberlist's event callbacks (where reading the *memberlist.Node is safe).
type nodeView struct {
	name       string
	gossipAddr string
	meta       nodeMeta
	metaErr    error
	status     string
	departed   time.Time // when status became left/dead
}

// DeadNotice says that this node must restart to rejoin placement: its
// view of the fleet and its live peers' views conflict for good. A long
// pause (GC, VM stall, SIGSTOP) or a partition made peers fail it, or made
// it fail them. memberlist lets a failed node refute and lists it alive
// again, but protoactor on every node that saw a member die has blocked that
// member's ID for good and never places a key on it again. Only a restart (a
// new member ID, a fresh blocklist) ends the conflict; until then the stale
// key activations of a node its peers blocked are harmless, because their
// state writes are fenced.
//
// Which nodes restart is decided by restartSet, the same way on every node
// from the dead lists the live nodes gossip: as few as end every conflict,
// preferring the nodes that were declared dead. So after a partition heals
// only the cut-off side reports it; the majority, which the cut-off side may
// also have declared dead, does not.
type DeadNotice struct {
	By      []string  // memberlist names of the live peers that declared this node dead
	Blocked []string  // memberlist names of live peers this node declared dead (and blocks)
	At      time.Time // when this node learned it
}

func (d DeadNotice) Error() string {
	var what string
	switch {
	case len(d.By) > 0:
		what = "declared dead by " + strings.Join(d.By, ", ")
	default:
		what = "this node declared its live peers " + strings.Join(d.Blocked, ", ") + " dead"
	}
	return fmt.Sprintf("%s (learned %s): peers no longer place keys on this node, or it no longer places keys on them; restart it to rejoin placement",
		what, d.At.UTC().Format(time.RFC3339))
}

// DeclaredDead returns the notice that this node must restart because its
// view and its live peers' views conflict (see DeadNotice), or nil. Once
// set it stays set until the process restarts.
func (p *Provider) DeclaredDead() *DeadNotice { return p.declaredDead.Load() }

// restartSet picks the live nodes that must restart so that no live node
// blocks another. nodes are the live nodes' names; declared maps a node to
// the live nodes it declared dead (from its gossiped dead list). A restart
// ends every conflict the node is in (it gets a new member ID and an empty
// blocklist), so the set is a cover of the "declared dead" edges, built
// greedily: the node in the most remaining conflicts first; among those,
// the one declared dead by the most; then the highest name (so on an even
// split the side holding the lowest name stays). A partition's cut-off side
// is in the most conflicts and goes; the majority stays, whichever way the
// declarations went. Every node runs this on the same gossip and so reaches
// the same set.
func restartSet(nodes []string, declared map[string][]string) []string {
	type edge struct{ from, to string }
	edges := map[edge]bool{}
	for from, tos := range declared {
		for _, to := range tos {
			if from != to && slices.Contains(nodes, from) && slices.Contains(nodes, to) {
				edges[edge{from, to}] = true
			}
		}
	}
	var out []string
	for len(edges) > 0 {
		deg, in := map[string]int{}, map[string]int{}
		for e := range edges {
			deg[e.from]++
			deg[e.to]++
			in[e.to]++
		}
		best := ""
		for n := range deg {
			if best == "" || deg[n] > deg[best] ||
				deg[n] == deg[best] && (in[n] > in[best] || in[n] == in[best] && n > best) {
				best = n
			}
		}
		out = append(out, best)
		for e := range edges {
			if e.from == best || e.to == best {
				delete(edges, e)
			}
		}
	}
	slices.Sort(out)
	return out
}

// trustDeclarations keeps a "declared dead" edge into a node only when a
// strict majority of that node's live peers declared it dead. A minority
// declaration — one rogue or confused member gossiping a dead list, a peer
// that alone lost sight of the node — does not make the named node
// restart: the edge is turned round, so the declarer is the one restarted
// (its restart ends the conflict as well: it gets a fresh blocklist). A
// real partition's cut-off side is declared dead by the whole majority,
// and what it declared of the majority is a minority's word; so the
// outcome there is the one restartSet alone gives. Every node applies this
// to the same gossip and so reaches the same graph.
//
// On an encrypted fleet only holders of the gossip key are members at all
// (memberlist drops every packet it cannot decrypt, GossipVerifyIncoming),
// so every dead list counted here came through the encrypted gossip; on a
// plain fleet (loopback, or insecure: true) this rule is what keeps one
// member that lies from restarting others.
func trustDeclarations(nodes []string, declared map[string][]string) map[string][]string {
	by := map[string]map[string]bool{} // target -> its live declarers
	for from, tos := range declared {
		for _, to := range tos {
			if from == to || !slices.Contains(nodes, from) || !slices.Contains(nodes, to) {
				continue
			}
			if by[to] == nil {
				by[to] = map[string]bool{}
			}
			by[to][from] = true
		}
	}
	peers := len(nodes) - 1
	out := map[string][]string{}
	for to, froms := range by {
		for from := range froms {
			if 2*len(froms) > peers {
				out[from] = append(out[from], to)
			} else {
				out[to] = append(out[to], from)
			}
		}
	}
	for n := range out {
		slices.Sort(out[n])
		out[n] = slices.Compact(out[n])
	}
	return out
}

// checkDeclaredDeadLocked applies restartSet to the current view, after
// trustDeclarations, and when this node is in it starts confirmRestart: the
// notice is set only if the verdict still holds once the views are synced.
func (p *Provider) checkDeclaredDeadLocked() {
	if p.declaredDead.Load() != nil || p.ownMeta.ID == "" || p.mu.confirming || p.mu.state != stateRunning {
		return
	}
	v := p.restartVerdictLocked()
	if !v.restart {
		return
	}
	addrs := p.liveGossipAddrsLocked()
	wait := p.cfg.RestartConfirm
	if !v.majority {
		wait = p.cfg.MinorityConfirm
	}
	p.mu.confirming = true
	p.wg.Add(1) // under p.mu with the state running: see start
	go p.confirmRestart(p.mu.ml, addrs, wait, v.majority)
}

// confirmRestart settles a restart verdict before it becomes the
// DeadNotice, which is for good. A verdict is taken on one node's view at
// one moment, and while a partition heals that view is in flux: a peer's
// meta update (its new dead list) is a UDP broadcast a loaded node may have
// dropped, the healed side's gossip arrives in pieces, and the cut-off
// side's own late declarations (its dead list, memberlist's dead messages)
// reach the majority. On such a view a majority node can find itself in
// restartSet, restart for nothing and fail its /healthz. So it first pulls
// every live peer's full state (memberlist's push/pull, over TCP, which
// Join does with each address), waits, and decides again; only a verdict
// that still holds sets the notice. Later membership events check again.
//
// How long it waits depends on the evidence. A node that a strict majority
// of its live peers declared dead (the cut-off side of a partition, a
// paused node) has positive evidence, which a stale view can only lack:
// it waits Config.RestartConfirm. A node in restartSet without that — only
// a minority declared it dead, or it alone declared live peers dead — may
// be looking at a view in flux, so the verdict must hold for
// Config.MinorityConfirm, long enough for gossip to converge, and still be
// minority-only then: a minority's declarations never make a majority node
// unhealthy quickly, and only a conflict that stays does so at all.
func (p *Provider) confirmRestart(ml *memberlist.Memberlist, addrs []string, wait time.Duration, majority bool) {
	defer p.wg.Done()
	sync := func() {
		if ml != nil && len(addrs) > 0 {
			_, _ = ml.Join(addrs) // a push/pull with each; an unreachable peer is not an error here
		}
	}
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-p.stop:
			return false
		case <-t.C:
			return true
		}
	}
	sync()
	if !majority {
		// The verdict must hold for wait (MinorityConfirm), looked at
		// every RestartConfirm: one that goes ends the wait, one that
		// gains a strict majority takes the majority's path (the cut-off
		// node's own view is in flux too while the partition heals).
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
			if !sleep(p.cfg.RestartConfirm) {
				return
			}
			p.mu.Lock()
			v := p.restartVerdictLocked()
			if !v.restart {
				p.mu.confirming = false
				p.mu.Unlock()
				p.logNow().Info("a restart verdict no majority stood behind went while it was confirmed; staying in placement")
				return
			}
			p.mu.Unlock()
			if v.majority {
				majority = true
				break
			}
		}
		// Sync once more, then give the broadcasts in flight
		// RestartConfirm, as a majority verdict.
		p.mu.Lock()
		addrs = p.liveGossipAddrsLocked()
		p.mu.Unlock()
		sync()
	}
	if !sleep(p.cfg.RestartConfirm) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.confirming = false
	if p.declaredDead.Load() != nil || p.mu.state != stateRunning {
		return
	}
	v := p.restartVerdictLocked()
	if !v.restart || v.majority != majority && !v.majority {
		// The verdict went, or it was a majority's and now rests on a
		// minority only: that one has to hold for MinorityConfirm first.
		p.logNow().Info("a restart verdict did not hold once the views were synced; staying in placement",
			slog.Duration("confirm", wait), slog.Bool("declared_by_majority", v.majority))
		if v.restart {
			p.checkDeclaredDeadLocked()
		}
		return
	}
	d := &DeadNotice{By: v.by, Blocked: v.blocked, At: time.Now()}
	if p.declaredDead.CompareAndSwap(nil, d) {
		select { // gossip meta.Restarting
		case p.metaChanged <- struct{}{}:
		default:
		}
		if p.cfg.OnDeclaredDead != nil {
			p.cfg.OnDeclaredDead(*d)
		}
		p.logNow().Error("this node must restart: it was declared dead by its live peers, or declared them dead, and protoactor blocks those member IDs for good (its /healthz fails from now on)",
			slog.Any("declared_dead_by", d.By), slog.Any("declared_dead_here", d.Blocked), slog.Bool("declared_by_majority", v.majority),
			slog.Any("live", v.nodes), slog.Any("dead_lists", v.declared))
	}
}

// liveGossipAddrsLocked lists the gossip addresses of the live peers.
func (p *Provider) liveGossipAddrsLocked() []string {
	var addrs []string
	for _, n := range p.mu.nodes {
		if n.status == StatusAlive && n.name != p.mu.self && n.gossipAddr != "" {
			addrs = append(addrs, n.gossipAddr)
		}
	}
	return addrs
}

// restartVerdict is restartVerdictLocked's answer: whether this node is in
// restartSet, the live peers that declared it dead (by) and those it
// declared dead (blocked), and whether by is a strict majority of its live
// peers (see confirmRestart).
type restartVerdict struct {
	restart, majority bool
	by, blocked       []string
	nodes             []string            // the live nodes, this one first, for the log
	declared          map[string][]string // their dead lists by name, for the log
}

// restartVerdictLocked says whether this node is in restartSet on the
// current view (after trustDeclarations), with the live peers that
// declared it dead and those it declared dead.
func (p *Provider) restartVerdictLocked() restartVerdict {
	names := map[string]string{p.ownMeta.ID: p.mu.self} // member ID -> name, live nodes
	var live, left []*nodeView
	for _, n := range p.mu.nodes {
		if n.metaErr != nil || n.meta.Client || n.meta.ID == p.ownMeta.ID {
			continue
		}
		switch {
		case n.status == StatusLeft:
			left = append(left, n)
		case n.status != StatusAlive || n.meta.Restarting:
			// a restarting node is on its way out: its conflicts end with its restart
		default:
			names[n.meta.ID] = n.name
			live = append(live, n)
		}
	}
	nodes := []string{p.mu.self} // the live nodes, which can restart
	declared := map[string][]string{}
	var v restartVerdict
	declare := func(n *nodeView) {
		for _, id := range n.meta.Dead {
			if name, ok := names[id]; ok {
				declared[n.name] = append(declared[n.name], name)
				if name == p.mu.self {
					v.by = append(v.by, n.name)
				}
			}
		}
	}
	for _, n := range live {
		nodes = append(nodes, n.name)
		declare(n)
		if _, ok := p.mu.deadIDs[n.meta.ID]; ok {
			declared[p.mu.self] = append(declared[p.mu.self], n.name)
			v.blocked = append(v.blocked, n.name)
		}
	}
	// A node that left gracefully (within DepartedRetention) still votes:
	// its dead list is what it saw while it ran. Without its word, a fleet
	// whose ingesting node finished after a partition (3 against 2 of 5)
	// looks like an even split on the healed view. It blocks nobody any
	// more, so it is not a node of restartSet.
	voters := slices.Clone(nodes)
	for _, n := range left {
		voters = append(voters, n.name)
		declare(n)
	}
	if len(v.by) == 0 && len(v.blocked) == 0 || !slices.Contains(restartSet(nodes, trustDeclarations(voters, declared)), p.mu.self) {
		return restartVerdict{}
	}
	slices.Sort(v.by)
	slices.Sort(v.blocked)
	v.nodes, v.declared = voters, declared
	v.restart = true
	v.majority = 2*len(v.by) > len(voters)-1
	return v
}

// Provider is a protoactor cluster.ClusterProvider backed by
// hashicorp/memberlist gossip. Create it with New, hand it to
// cluster.Configure, and let the protoactor Cluster call StartMember (or
// StartClient) and Shutdown. A Provider is single-use.
//
// All methods are safe for concurrent use.
//
// Concurrency: memberlist calls the event delegate with its node lock held;
// the delegate only copies the node into mu.nodes and signals the publish
// goroutine (non-blocking, coalesced). The publish goroutine owns calls to
// MemberList.UpdateClusterTopology. Lock order: memberlist's node lock, then
// p.mu; never call into memberlist while holding p.mu.
type Provider struct {
	cfg     Config              // defaulted deep copy; never changes after New
	keyring *memberlist.Keyring // nil: gossip in the clear; memberlist locks it itself

	changed chan struct{} // cap 1: coalesced "membership changed" signal
	stop    chan struct{} // closed when Shutdown begins
	done    chan struct{} // closed when Shutdown has finished
	wg      sync.WaitGroup

	shutdownOnce sync.Once
	shutdownErr  error

	log     atomic.Pointer[slog.Logger] // set at start; Config.Logger or the actor system's
	meta    atomic.Pointer[[]byte]      // encoded nodeMeta served to memberlist
	ownMeta nodeMeta                    // written once in start before memberlist exists

	joinFailures atomic.Int64 // failed join rounds; read by tests
	reconnects   atomic.Int64 // rejoin rounds that reached a departed member; read by tests

	declaredDead atomic.Pointer[DeadNotice] // set once: see DeadNotice
	metaChanged  chan struct{}              // cap 1: the dead list changed; metaLoop regossips the meta
	metaMu       sync.Mutex                 // serialises building and storing meta
	leaving      bool                       // under metaMu: a graceful Shutdown began
	keysGossiped int64                      // under metaMu: the key actor count in the meta (Config.KeysActive)
	publishing   atomic.Bool                // true while UpdateClusterTopology runs; read by tests

	mu struct {
		sync.Mutex
		state      providerState
		ml         *memberlist.Memberlist
		self       string // own memberlist node name
		gossipAddr string
		nodes      map[string]*nodeView // by memberlist node name
		// deadIDs are the member IDs of nodes seen declared dead, with
		// when: excluded from topology for good (protoactor blocks them
		// too), gossiped in the meta within DepartedRetention.
		deadIDs map[string]time.Time
		// suspects are protoactor addresses ("host:port") whose remoting
		// connection broke, with until when they stay out of placement
		// (Suspect).
		suspects map[string]time.Time
		// confirming is true while confirmRestart runs.
		confirming bool
	}
}

var _ protocluster.ClusterProvider = (*Provider)(nil)

// Suspect takes the member at the protoactor address addr ("host:port") out
// of placement for d, ahead of memberlist's failure detection: the caller
// saw this node's remoting connection to it break (the peer's socket
// closed, as a kill -9 does at once), so keys it owned are placed on the
// other members now rather than after memberlist's suspicion timeout.
// memberlist stays the arbiter: after d the member is placed on again if it
// is still alive, and a member silent but connected (a partition) is
// handled by memberlist alone. A wrongly suspected member is harmless: a
// key activated elsewhere takes a newer owner epoch, which fences the old
// activation's writes. Unsuspect ends a suspicion early (the connection is
// back). The own address is never suspected.
func (p *Provider) Suspect(addr string, d time.Duration) {
	p.mu.Lock()
	if p.mu.suspects == nil {
		p.mu.suspects = map[string]time.Time{}
	}
	self := p.selfAddrLocked()
	if addr == "" || addr == self {
		p.mu.Unlock()
		return
	}
	until := time.Now().Add(d)
	prev, had := p.mu.suspects[addr]
	p.mu.suspects[addr] = until
	p.mu.Unlock()
	time.AfterFunc(d, p.signal) // place on it again once the suspicion ends
	if !had || time.Now().After(prev) {
		p.signal()
	}
}

// Unsuspect ends a suspicion of addr (see Suspect).
func (p *Provider) Unsuspect(addr string) {
	p.mu.Lock()
	_, had := p.mu.suspects[addr]
	delete(p.mu.suspects, addr)
	p.mu.Unlock()
	if had {
		p.signal()
	}
}

// IsSuspect reports whether addr is suspected now (see Suspect).
func (p *Provider) IsSuspect(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	until, ok := p.mu.suspects[addr]
	return ok && time.Now().Before(until)
}

// Suspects are the addresses currently suspected, sorted.
func (p *Provider) Suspects() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	var out []string
	for a, until := range p.mu.suspects {
		if now.Before(until) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// selfAddrLocked is this node's own protoactor address, "" before start.
func (p *Provider) selfAddrLocked() string {
	if n := p.mu.nodes[p.mu.self]; n != nil && n.metaErr == nil {
		return n.meta.Host + ":" + strconv.Itoa(n.meta.Port) // as protoactor's Member.Address
	}
	return ""
}

// New validates cfg and returns an unstarted Provider. It does no I/O. cfg
// is copied; the caller keeps ownership of it.
func New(cfg Config) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kr, err := newKeyring(cfg.SecretKey, cfg.ExtraKeys)
	if err != nil {
		return nil, err
	}
	p := &Provider{
		keyring:     kr,
		cfg:         cfg.withDefaults(),
		changed:     make(chan struct{}, 1),
		metaChanged: make(chan struct{}, 1),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
	}
	p.mu.nodes = make(map[string]*nodeView)
	p.mu.deadIDs = make(map[string]time.Time)
	p.keysGossiped = -1 // unknown until KeysActive is first asked
	return p, nil
}

// StartMember implements cluster.ClusterProvider. It starts memberlist
// advertising this actor system's ID, remote address and cluster kinds,
// and starts joining Config.Seeds in the background (an unreachable seed
// does not fail startup). It returns once memberlist is listening; the
// first topology (this node alone, or more once joined) is published
// asynchronously.
func (p *Provider) StartMember(c *protocluster.Cluster) error {
	return p.start(c, false)
}

// StartClient implements cluster.ClusterProvider. A client joins the gossip
// to learn the topology but advertises itself as a client, so members do
// not place actors on it.
func (p *Provider) StartClient(c *protocluster.Cluster) error {
	return p.start(c, true)
}

func (p *Provider) start(c *protocluster.Cluster, client bool) error {
	p.mu.Lock()
	switch p.mu.state {
	case stateNew:
		p.mu.state = stateStarting
	case stateClosed:
		p.mu.Unlock()
		return ErrClosed
	default:
		p.mu.Unlock()
		return ErrStarted
	}
	p.mu.Unlock()
	p.log.Store(p.logger(c))

	ml, err := p.createMemberlist(c, client)
	if err != nil {
		p.mu.Lock()
		p.mu.state = stateClosed
		p.mu.Unlock()
		return err
	}
	local := ml.LocalNode() // takes memberlist's lock: call before p.mu
	gossipAddr := local.Address()
	name := local.Name

	p.mu.Lock()
	if p.mu.state == stateClosed { // Shutdown raced with start
		p.mu.Unlock()
		_ = ml.Shutdown()
		return ErrClosed
	}
	p.mu.state = stateRunning
	p.mu.ml = ml
	p.mu.self = name
	p.mu.gossipAddr = gossipAddr
	seeds := p.seedsExcludingSelfLocked()
	// wg.Add under p.mu, so a concurrent Shutdown (which flips the state
	// under p.mu first) can never Wait before these Adds.
	p.wg.Add(1)
	go p.publishLoop(c)
	if len(seeds) > 0 {
		p.wg.Add(1)
		go p.joinLoop(ml, seeds)
	}
	p.wg.Add(2)
	go p.reconnectLoop(ml)
	go p.metaLoop(ml)
	p.mu.Unlock()

	p.signal()
	p.logNow().Info("cluster provider started",
		slog.String("node", name), slog.String("gossip", gossipAddr),
		slog.String("member", c.ActorSystem.ID), slog.Any("seeds", seeds), slog.Bool("client", client))
	return nil
}

func (p *Provider) logger(c *protocluster.Cluster) *slog.Logger {
	if p.cfg.Logger != nil {
		return p.cfg.Logger
	}
	return c.Logger()
}

func (p *Provider) createMemberlist(c *protocluster.Cluster, client bool) (*memberlist.Memberlist, error) {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return nil, fmt.Errorf("cluster: actor system address: %w", err)
	}
	m := nodeMeta{ID: c.ActorSystem.ID, Host: host, Port: port, Client: client, Started: time.Now().UnixMilli()}
	if !client {
		m.Kinds = c.GetClusterKinds()
		slices.Sort(m.Kinds)
	}
	meta, err := encodeMeta(m)
	if err != nil {
		return nil, err
	}
	p.ownMeta = m
	p.meta.Store(&meta)
	name := p.cfg.NodeName
	if name == "" {
		name = defaultNodeName(c.ActorSystem.ID)
	}
	mc := p.cfg.memberlistConfig(name)
	mc.Keyring = p.keyring
	mc.Delegate = metaDelegate{p: p}
	mc.Events = eventDelegate{p: p}
	mc.Logger = newMemberlistLogger(p.logNow())
	if p.cfg.tune != nil {
		if err := p.cfg.tune(mc); err != nil {
			return nil, err
		}
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("cluster: start memberlist on %s: %w",
			net.JoinHostPort(p.cfg.BindAddr, strconv.Itoa(p.cfg.BindPort)), err)
	}
	return ml, nil
}

// seedsExcludingSelfLocked drops this node's own gossip address from the
// seeds (joining oneself "succeeds" and would end the retry loop).
func (p *Provider) seedsExcludingSelfLocked() []string {
	self := map[string]bool{p.mu.gossipAddr: true}
	if _, port, err := net.SplitHostPort(p.mu.gossipAddr); err == nil {
		self[net.JoinHostPort(p.cfg.BindAddr, port)] = true
	}
	var seeds []string
	for _, s := range p.cfg.Seeds {
		if h, port, err := net.SplitHostPort(s); err == nil && self[net.JoinHostPort(h, port)] {
			continue
		}
		seeds = append(seeds, s)
	}
	return seeds
}

// signal tells the publish goroutine the membership changed. Never blocks.
func (p *Provider) signal() {
	select {
	case p.changed <- struct{}{}:
	default: // a signal is already pending; it will see this change too
	}
}

// publishLoop owns the calls to MemberList.UpdateClusterTopology.
func (p *Provider) publishLoop(c *protocluster.Cluster) {
	defer p.wg.Done()
	filtered := false // the last placement published left suspects out
	for {
		select {
		case <-p.stop:
			return
		case <-p.changed:
			p.publishing.Store(true)
			members := p.topology()
			// Suspects stay in the members protoactor is given: a member it
			// sees leave is blocked for good (see DeadNotice), and a
			// suspicion may be wrong. They leave placement instead.
			c.MemberList.UpdateClusterTopology(members)
			filtered = p.publishPlacement(c, members, filtered)
			p.publishing.Store(false)
		}
	}
}

// publishPlacement takes the suspected members (Suspect) out of placement
// without telling protoactor's MemberList they left: it publishes a
// ClusterTopology event of the members minus the suspects, with the
// suspects as Left, which the identity lookup (placement), the activator
// (it stops local actors whose owner changed) and the PID cache (it drops
// the suspects' PIDs) follow. When the last suspicion ends, it publishes the
// members again. filtered says whether the last event it published left
// suspects out; it returns the new value.
func (p *Provider) publishPlacement(c *protocluster.Cluster, members protocluster.Members, filtered bool) bool {
	now := time.Now()
	p.mu.Lock()
	suspect := map[string]bool{}
	for a, until := range p.mu.suspects {
		if now.Before(until) {
			suspect[a] = true
		} else {
			delete(p.mu.suspects, a)
		}
	}
	p.mu.Unlock()
	blocked := c.GetBlockedMembers()
	var active, left protocluster.Members
	for _, m := range members {
		switch {
		case blocked.Contains(m.Id):
		case suspect[m.Address()]:
			left = append(left, m)
		default:
			active = append(active, m)
		}
	}
	if len(left) == 0 && !filtered {
		return false // nothing suspected before or now: MemberList published it
	}
	c.ActorSystem.EventStream.Publish(&protocluster.ClusterTopology{
		TopologyHash: protocluster.NewMemberSet(active).TopologyHash(),
		Members:      active,
		Left:         left,
	})
	return len(left) > 0
}

// topology returns the protoactor members: alive, decodable, non-client.
func (p *Provider) topology() protocluster.Members {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pruneDepartedLocked(time.Now())
	members := make(protocluster.Members, 0, len(p.mu.nodes))
	for _, n := range p.mu.nodes {
		if n.status != StatusAlive || n.metaErr != nil || n.meta.Client {
			continue
		}
		if _, dead := p.mu.deadIDs[n.meta.ID]; dead {
			continue // blocked by protoactor for good: see DeadNotice
		}
		members = append(members, &protocluster.Member{
			Id:    n.meta.ID,
			Host:  n.meta.Host,
			Port:  int32(n.meta.Port),
			Kinds: slices.Clone(n.meta.Kinds),
		})
	}
	slices.SortFunc(members, func(a, b *protocluster.Member) int {
		if a.Id < b.Id {
			return -1
		}
		if a.Id > b.Id {
			return 1
		}
		return 0
	})
	return members
}

func (p *Provider) pruneDepartedLocked(now time.Time) {
	for name, n := range p.mu.nodes {
		if !n.departed.IsZero() && now.Sub(n.departed) > p.cfg.DepartedRetention {
			delete(p.mu.nodes, name)
		}
	}
}

// joinLoop joins the seeds, retrying with exponential backoff until one
// answers or the provider shuts down. A round may block for up to
// memberlist's TCPTimeout per unreachable seed.
func (p *Provider) joinLoop(ml *memberlist.Memberlist, seeds []string) {
	defer p.wg.Done()
	bo := backoff.Backoff{Initial: p.cfg.JoinRetryMin, Max: p.cfg.JoinRetryMax}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-p.stop:
			return
		case <-timer.C:
		}
		n, err := ml.Join(seeds)
		if n > 0 {
			p.logNow().Info("joined cluster", slog.Int("contacted", n), slog.Int("attempt", attempt))
			return
		}
		p.joinFailures.Add(1)
		p.logNow().Warn("joining seeds failed; will retry",
			slog.Any("seeds", seeds), slog.Int("attempt", attempt), slog.Duration("retry_in", bo.Delay()), slog.Any("error", err))
		timer.Reset(bo.Next())
	}
}

// storeMetaLocked encodes the meta memberlist serves: this node's own,
// the leaving flag and the dead list (newest first, within retention).
// Caller holds metaMu.
func (p *Provider) storeMetaLocked() error {
	m := p.ownMeta
	m.Leaving = p.leaving
	if p.cfg.KeysActive != nil {
		k := p.keysGossiped
		m.Keys = &k
	}
	m.Restarting = p.declaredDead.Load() != nil
	type dead struct {
		id string
		at time.Time
	}
	var ds []dead
	now := time.Now()
	p.mu.Lock()
	for id, at := range p.mu.deadIDs {
		if now.Sub(at) <= p.cfg.DepartedRetention {
			ds = append(ds, dead{id, at})
		}
	}
	p.mu.Unlock()
	slices.SortFunc(ds, func(a, b dead) int { return b.at.Compare(a.at) })
	for _, d := range ds {
		m.Dead = append(m.Dead, d.id)
	}
	b, err := encodeMeta(m)
	if err != nil {
		return err
	}
	p.meta.Store(&b)
	return nil
}

// metaLoop regossips this node's meta whenever its dead list changes, once
// per DepartedRetention so expired entries drop out, and when its key actor
// count (Config.KeysActive, asked every StatsInterval) changed.
func (p *Provider) metaLoop(ml *memberlist.Memberlist) {
	defer p.wg.Done()
	ticker := time.NewTicker(p.cfg.DepartedRetention)
	defer ticker.Stop()
	stats := time.NewTicker(p.cfg.StatsInterval)
	defer stats.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.metaChanged:
		case <-ticker.C:
		case <-stats.C:
			if p.cfg.KeysActive == nil {
				continue
			}
			k := p.cfg.KeysActive()
			p.metaMu.Lock()
			same := k == p.keysGossiped
			p.keysGossiped = k
			p.metaMu.Unlock()
			if same {
				continue
			}
		}
		p.metaMu.Lock()
		err := p.storeMetaLocked()
		p.metaMu.Unlock()
		if err != nil {
			p.logNow().Warn("updating node meta", slog.Any("error", err))
			continue
		}
		// Waits for the broadcast to go out at most a second; peers that
		// miss it get the meta with the next push/pull sync.
		if err := ml.UpdateNode(time.Second); err != nil {
			p.logNow().Debug("gossiping node meta", slog.Any("error", err))
		}
	}
}

// reconnectLoop rejoins, every Config.ReconnectInterval, the gossip
// addresses of members this node saw die. memberlist itself never contacts
// a dead node again (it probes and syncs with live ones only), so a node
// cut off by a partition, or paused past failure detection, would otherwise
// stay split from the fleet after the fault ends. A rejoin that reaches the
// node merges both views; a dead node stays unreachable and costs one
// failed dial per round until DepartedRetention forgets it.
func (p *Provider) reconnectLoop(ml *memberlist.Memberlist) {
	defer p.wg.Done()
	ticker := time.NewTicker(p.cfg.ReconnectInterval)
	defer ticker.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-ticker.C:
		}
		var addrs []string
		p.mu.Lock()
		p.checkDeclaredDeadLocked() // also without a membership event: a verdict dropped on a view in flux is looked at again
		p.pruneDepartedLocked(time.Now())
		for _, n := range p.mu.nodes {
			if n.status == StatusDead && n.gossipAddr != "" {
				addrs = append(addrs, n.gossipAddr)
			}
		}
		p.mu.Unlock()
		if len(addrs) == 0 {
			continue
		}
		if n, _ := ml.Join(addrs); n > 0 {
			p.reconnects.Add(1)
			p.logNow().Warn("reached members that were declared dead; merging views", slog.Any("addresses", addrs), slog.Int("reached", n))
		}
		// While members are dead in this view, also pull every live
		// peer's full state: a member this node declared dead refutes
		// when a peer reaches it, but its refutation (a higher
		// incarnation) reaches this node only by gossip or a push/pull —
		// and memberlist gossips to the dead for GossipToTheDeadTime only
		// and pushes/pulls with one random peer every PushPullInterval.
		// Seen after two of five were cut off: a cut-off node that had
		// declared a majority node dead kept it dead for over 45 s, so it
		// never saw that node's dead list and never learned that it must
		// restart.
		p.mu.Lock()
		live := p.liveGossipAddrsLocked()
		p.mu.Unlock()
		if len(live) > 0 {
			_, _ = ml.Join(live)
		}
	}
}

// logNow returns the logger resolved at start (a discarding one before).
func (p *Provider) logNow() *slog.Logger {
	if l := p.log.Load(); l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// Shutdown implements cluster.ClusterProvider. When graceful, it first
// broadcasts a leave (waiting at most Config.LeaveTimeout) so peers drop
// this node at once instead of after failure detection. It then shuts
// memberlist down and waits for the provider's goroutines to exit.
// Shutdown is idempotent: later and concurrent calls wait for the first
// to finish and return its result. A Provider never started just closes.
func (p *Provider) Shutdown(graceful bool) error {
	p.shutdownOnce.Do(func() {
		p.shutdownErr = p.shutdown(graceful)
		close(p.done)
	})
	<-p.done
	return p.shutdownErr
}

func (p *Provider) shutdown(graceful bool) error {
	p.mu.Lock()
	p.mu.state = stateClosed
	ml := p.mu.ml
	p.mu.Unlock()
	close(p.stop)
	var errs []error
	if ml != nil {
		if graceful {
			p.leave(ml)
		}
		if err := ml.Shutdown(); err != nil {
			errs = append(errs, fmt.Errorf("cluster: memberlist shutdown: %w", err))
		}
	}
	p.wg.Wait()
	return errors.Join(errs...)
}

// leave announces that this node is leaving (peers drop it from placement
// and will report it as left, not dead), then leaves. Each step waits at
// most Config.LeaveTimeout for its broadcast; a timeout, e.g. because all
// peers are leaving too, is logged, not returned: shutdown goes on.
func (p *Provider) leave(ml *memberlist.Memberlist) {
	p.metaMu.Lock()
	p.leaving = true
	err := p.storeMetaLocked()
	p.metaMu.Unlock()
	if err == nil {
		if err := ml.UpdateNode(p.cfg.LeaveTimeout); err != nil {
			p.logNow().Warn("announcing leave", slog.Any("error", err))
		}
	}
	if err := ml.Leave(p.cfg.LeaveTimeout); err != nil {
		p.logNow().Warn("leaving cluster", slog.Any("error", err))
	}
}

// GossipAddr returns the memberlist address ("host:port") this node
// advertises: the one to give other nodes as a seed. Empty before start.
func (p *Provider) GossipAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.gossipAddr
}

// Members returns this node's current view of the fleet, sorted by node
// name: live members and clients, plus nodes that left or died within
// Config.DepartedRetention. The slice and its contents are the caller's.
func (p *Provider) Members() []MemberInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pruneDepartedLocked(time.Now())
	out := make([]MemberInfo, 0, len(p.mu.nodes))
	for _, n := range p.mu.nodes {
		out = append(out, n.infoLocked(p.mu.self))
	}
	slices.SortFunc(out, func(a, b MemberInfo) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

func (n *nodeView) infoLocked(self string) MemberInfo {
	mi := MemberInfo{
		Name:       n.name,
		GossipAddr: n.gossipAddr,
		Status:     n.status,
		Self:       n.name == self,
	}
	mi.KeysActive = -1
	if n.metaErr == nil {
		if n.meta.Keys != nil {
			mi.KeysActive = *n.meta.Keys
		}
		if n.meta.Started > 0 {
			mi.Started = time.UnixMilli(n.meta.Started)
		}
		mi.ID = n.meta.ID
		mi.Address = net.JoinHostPort(n.meta.Host, strconv.Itoa(n.meta.Port))
		mi.Kinds = slices.Clone(n.meta.Kinds)
		mi.Client = n.meta.Client
	}
	return mi
}

// OwnerOf reports the live member that protoactor's disthash identity
// lookup places (kind, identity) on, given this node's current view: the
// rendezvous winner among live members hosting kind. ok is false when no
// live member hosts kind. It agrees with protoactor exactly (same code,
// same member IDs and addresses) once protoactor has seen the same
// topology; protoactor additionally excludes members it has blocked.
func (p *Provider) OwnerOf(kind, identity string) (owner MemberInfo, ok bool) {
	members := p.topology()
	addr := ownerOf(kind, identity, members)
	if addr == "" {
		return MemberInfo{}, false
	}
	for _, mi := range p.Members() {
		if mi.Status == StatusAlive && mi.Address == addr && !mi.Client {
			return mi, true
		}
	}
	return MemberInfo{}, false
}

// recordNode copies n into the provider's view. Called by memberlist with
// its node lock held, so reading n is safe here and only here. n.State is
// not read: memberlist never updates it (nodeState shadows the field).
func (p *Provider) recordNode(n *memberlist.Node, departed bool) {
	v := &nodeView{name: n.Name, gossipAddr: n.Address(), status: StatusAlive}
	v.meta, v.metaErr = decodeMeta(n.Meta)
	switch {
	case departed && v.meta.Leaving:
		v.status = StatusLeft
	case departed:
		v.status = StatusDead
	case v.meta.Leaving:
		v.status = StatusLeaving
	}
	if departed {
		v.departed = time.Now()
	}
	newDead := false
	p.mu.Lock()
	p.mu.nodes[n.Name] = v
	if v.status == StatusDead && v.metaErr == nil && !v.meta.Client && v.meta.ID != p.ownMeta.ID {
		if _, seen := p.mu.deadIDs[v.meta.ID]; !seen {
			p.mu.deadIDs[v.meta.ID] = v.departed
			newDead = true
		}
	}
	p.checkDeclaredDeadLocked()
	p.mu.Unlock()
	if newDead {
		p.logNow().Warn("a peer was declared dead: protoactor blocks its member ID for good", slog.String("node", v.name), slog.String("member", v.meta.ID))
		select {
		case p.metaChanged <- struct{}{}:
		default:
		}
	}
	if v.metaErr != nil && !departed {
		p.logNow().Warn("ignoring node with unreadable meta", slog.String("node", n.Name), slog.Any("error", v.metaErr))
	}
	p.signal()
}
