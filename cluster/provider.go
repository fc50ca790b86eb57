package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/hashicorp/memberlist"
)

// ErrStarted is returned by StartMember/StartClient on a Provider that was
// already started: a Provider serves one cluster once.
var ErrStarted = errors.New("cluster: provider already started")

// ErrClosed is returned by StartMember/StartClient after Shutdown.
var ErrClosed = errors.New("cluster: provider shut down")

type providerState int

const (
	stateNew providerState = iota
	stateStarting
	stateRunning
	stateClosed
)

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
	// published is closed once publishLoop gave protoactor its first
	// topology (see Published).
	published     chan struct{}
	publishedOnce sync.Once
	stop          chan struct{} // closed when Shutdown begins
	done          chan struct{} // closed when Shutdown has finished
	wg            sync.WaitGroup

	shutdownOnce sync.Once
	shutdownErr  error

	log     atomic.Pointer[slog.Logger] // set at start; Config.Logger or the actor system's
	meta    atomic.Pointer[[]byte]      // encoded nodeMeta served to memberlist
	ownMeta nodeMeta                    // written once in start before memberlist exists

	joinFailures atomic.Int64 // failed join rounds; read by tests
	joined       atomic.Bool  // a Join with the seeds succeeded (or there are none)
	refused      atomic.Pointer[refusal]
	// joinTried is closed when the first round of joining the seeds ended
	// (at start when there are none); see FirstJoin.
	joinTried     chan struct{}
	joinTriedOnce sync.Once
	reconnects    atomic.Int64 // rejoin rounds that reached a departed member; read by tests

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
		published:   make(chan struct{}),
		joinTried:   make(chan struct{}),
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

// Published is closed once the started provider has given protoactor's
// MemberList its first topology (this member, and whom memberlist knows
// then): the cluster can place and reach actors. protoactor's StartMember
// sleeps a second after the provider started, for the topology to settle;
// a caller can run it in a goroutine and go on once this is closed.
func (p *Provider) Published() <-chan struct{} { return p.published }

// FirstJoin is closed once the first attempt to join the seeds has ended,
// joined or not (at start for a node without seeds). After it, Refused
// says whether the fleet refused this node.
func (p *Provider) FirstJoin() <-chan struct{} { return p.joinTried }

// Refused is the *ProtocolError the seeds' fleet refused this node with
// while it joined (a member speaks another protocol version), or nil. A
// refused node stops joining; see Config.OnRefused.
func (p *Provider) Refused() error { return refusedAtJoin(&p.refused) }

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
	} else {
		p.joined.Store(true)
		p.joinTriedOnce.Do(func() { close(p.joinTried) })
	}
	p.wg.Add(2)
	go p.reconnectLoop(ml)
	go p.metaLoop(ml)
	p.mu.Unlock()

	p.signal()
	p.logNow().Info("cluster provider started",
		slog.String("node", name), slog.String("gossip", gossipAddr),
		slog.String("member", c.ActorSystem.ID), slog.Any("seeds", seeds), slog.Bool("client", client), slog.Int("protocol", p.cfg.protocol()))
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
	m := nodeMeta{ID: c.ActorSystem.ID, Host: host, Port: port, Client: client, Started: time.Now().UnixMilli(), Proto: p.cfg.protocol()}
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
	mc.Merge = versionDelegate{p: p}
	mc.Alive = versionDelegate{p: p}
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
