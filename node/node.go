package node

import (
	"context"
	"errors"
	"fmt"
	"github.com/joinery/joinery/internal/gctune"
	"github.com/joinery/joinery/internal/hotkeys"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/joinery/joinery/actors"
	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/console"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/embedded"
	"github.com/joinery/joinery/persistence/redisstore"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/transform"
)

// Options are the process-level settings of a node that are not in the job file.
type Options struct {
	// Logger receives the node's logs (and memberlist's and protoactor's). Default slog.Default().
	Logger *slog.Logger
	// Stdout is where stdout and table sinks write. Default os.Stdout.
	Stdout io.Writer
	// Stdin is what a file source with path "-" reads. Default os.Stdin.
	Stdin io.Reader
	// WatermarkSharing configures how the nodes reading an event-time job's sources share watermarks.
	WatermarkSharing WatermarkSharing
	// SourceLagEvery is how often the lag of each Redis stream and Kafka
	// source is asked for (joinery_source_lag_records). Default 15s.
	SourceLagEvery time.Duration
}

// Node is one running Joinery node.
type Node struct {
	// revokeGraceForTest, when set, replaces revokeGrace.
	revokeGraceForTest time.Duration

	plan   *job.Plan      // the compiled job (job.Compile): the node compiles nothing
	spec   *job.Spec      // plan.Spec
	budget *actors.Budget // the live key actors' memory budget
	// committed is what this node's readers committed (partition id ->
	// offset), for key actors that prune their outbox while idle
	// (actors.Deps.Committed).
	committed committedOffsets
	pruner    *actors.Pruner // asks idle keys to prune their committed outbox entries
	// kept is the columns the key state keeps per join side (projection
	// pushdown: kept.go).
	kept keptColumns
	// budgetBytes is the budget's limit (0: none) and budgetFrom where it
	// came from; on the embedded store it bounds the state held too
	// (statebudget.go).
	budgetBytes int64
	budgetFrom  string
	cdc         *joins.CDCSpec
	multi       *joins.MultiSpec // a cdc-multi join; cdc is nil then
	log         *slog.Logger
	opts        Options
	system      *actor.ActorSystem
	cluster     *pcluster.Cluster
	provider    *cluster.Provider
	store       persistence.Store
	guard       *persistence.Guard // commits offsets, detects a store gone back in time (rollback.go)
	rollback    rollbackStop       // closed once the guard found a rollback: Run stops (rollback.go)
	refusal     *fleetRefusal      // closed once the fleet refused this node after its start: Run stops (version.go)
	peers       peerWatch          // fails requests in flight to a peer whose connection broke (peers.go)
	writer      *actors.Writer
	kind        string
	client      *actors.Client
	placement   actors.Placement // where key actors live: keyPlacement (shards.go)
	timeout     time.Duration
	out         *outputs
	stats       *Stats
	metrics     *admin.Metrics
	// senderID identifies this run of the node to key actors
	// (keycore.Request.Sender): kept outputs are re-sent once to a new
	// run, as a restarted node may have lost them, and not again with
	// every request.
	senderID string
	inflight inflightKeys        // every reader's unanswered key requests (read.go)
	keyExprs [2]*transform.Value // event-time sides' key_expr, by side; nil: the key field
	opened   sync.Map            // names of the job's sources that opened (readiness)
	admin    *admin.Server
	console  *console.Console // the admin server's web console (with an admin server only)
	ingest   connectors.Service
	started  time.Time
	hot      *hotkeys.Tracker
	evt      *eventTime         // event-time joins only
	wms      *wmShare           // event-time joins with sources: the fleet's watermarks (wmshare.go)
	timed    func() joins.Timed // event-time joins only
	draining atomic.Bool
	closed   sync.Once
}

// Start compiles spec (job.Compile) and starts a node of the plan
// (StartPlan).
func Start(ctx context.Context, spec *job.Spec, opts Options) (*Node, error) {
	plan, err := job.Compile(spec)
	if err != nil {
		return nil, err
	}
	return StartPlan(ctx, plan, opts)
}

// StartPlan builds and starts a node of a compiled job: store, actor
// system, cluster membership and sinks. Sources start with Run. It only
// wires the plan's pieces: nothing of the job is compiled here.
func StartPlan(ctx context.Context, plan *job.Plan, opts Options) (n *Node, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	spec := plan.Spec
	var evt *eventTime
	if plan.EventTime != nil {
		if evt, err = newEventTime(*plan.EventTime); err != nil {
			return nil, err
		}
	}
	n = &Node{plan: plan, spec: spec, cdc: plan.CDC, multi: plan.Multi, kept: keptOf(plan.CDC, plan.Multi, plan.TimedKept), timed: plan.NewTimed, evt: evt, keyExprs: plan.KeyExprs, timeout: plan.RequestTimeout,
		log: opts.Logger.With("job", spec.Name), opts: opts, started: time.Now(), metrics: admin.NewMetrics(), senderID: fmt.Sprintf("%x", rand.Uint64())}
	n.stats = newStats(spec.Name, n.metrics)
	n.initMetrics()
	n.hot = hotkeys.New(1024, 10*time.Second, time.Now())
	self := n // the results are nil by the time a failed Start's defer runs
	defer func() {
		if err != nil {
			self.Close(context.Background())
		}
	}()
	if n.store, err = openStore(ctx, plan, n.redisError); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if err = n.startGuard(ctx); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if n.out, err = openSinks(ctx, plan, opts.Stdout, n.connEnv()); err != nil {
		return nil, err
	}
	if err = n.startCluster(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err = n.startWmShare(ctx); err != nil {
		return nil, fmt.Errorf("watermark sharing: %w", err)
	}
	if spec.Ingest.Addr != "" {
		if n.ingest, err = startIngest(plan, func(src, reason string) { n.metrics.Rejected.WithLabelValues(spec.Name, src, reason).Inc() }); err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
	}
	if spec.Admin.Addr != "" {
		acfg := adminConfig(plan)
		acfg.Backend, acfg.Metrics, acfg.Logger = backend{n}, n.metrics, n.log.With("component", "admin")
		// The console samples the node's metrics; the admin server mounts it.
		n.console = console.New(n.metrics.Registry(), console.Options{})
		acfg.Console = n.console
		n.admin = admin.NewServer(acfg)
		if err = n.admin.Start(); err != nil {
			return nil, fmt.Errorf("admin: %w", err)
		}
	}
	return n, nil
}

func openStore(ctx context.Context, plan *job.Plan, onRedisError func()) (persistence.Store, error) {
	spec := plan.Spec
	switch spec.State.Store {
	case "redis":
		r := spec.State.Redis
		st, err := redisstore.New(ctx, redisstore.Config{Options: redisopts.Options{Addr: r.Addr, Username: r.Username, Password: r.Password, DB: r.DB, TLS: plan.StoreTLS, OnRedisError: onRedisError},
			Cluster: r.Cluster.Addrs, MinReplicas: r.MinReplicas, ReplicaTimeout: r.ReplicaTimeout})
		if err != nil {
			return nil, err // not a typed nil in the interface: Close checks for nil
		}
		return st, nil
	default:
		st, err := embedded.New(embedded.Options{Path: spec.Resolve(spec.State.Path)})
		if err != nil {
			return nil, err
		}
		return st, nil
	}
}

func (n *Node) startCluster() (err error) {
	cc := n.spec.Cluster
	rhost, rport := n.plan.Remote.Host, n.plan.Remote.Port
	ghost, gport := n.plan.Gossip.Host, n.plan.Gossip.Port
	pcfg := cluster.DefaultConfig()
	pcfg.NodeName = cc.NodeName
	pcfg.BindAddr = ghost
	pcfg.BindPort = gport
	pcfg.Seeds = cc.Seeds
	pcfg.Label = cc.Label
	pcfg.Profile = cc.Profile
	pcfg.Logger = libLogger(n.log, "memberlist")
	pcfg.OnDeclaredDead = func(cluster.DeadNotice) { n.metrics.DeclaredDead.Set(1) }
	n.refusal = newFleetRefusal()
	pcfg.OnRefused = n.refusal.stop
	// Every member gossips its key actor count (joinctl members).
	pcfg.KeysActive = func() int64 { return n.stats.ActiveKeys() }
	if cc.Advertise != "" {
		pcfg.AdvertiseAddr = cc.Advertise
	}
	pcfg.SecretKey, pcfg.ExtraKeys = n.plan.GossipKey, n.plan.GossipExtra
	pcfg.Insecure = cc.Insecure
	// Remoting in the clear off loopback is refused before anything listens.
	if err = cluster.CheckRemoteExposure(rhost, cc.TLS.On(), cc.Insecure); err != nil {
		return err
	}
	if n.provider, err = cluster.New(pcfg); err != nil {
		return err
	}
	plog := slog.New(connLoss{libLogger(n.log, "protoactor").Handler(), n.draining.Load})
	n.system = actor.NewActorSystemWithConfig(actor.Configure(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return plog }),
	))
	actors.WatchDeadLetters(n.system)
	var ropts []remote.ConfigOption
	if cc.Advertise != "" && rport != 0 {
		ropts = append(ropts, remote.WithAdvertisedHost(net.JoinHostPort(cc.Advertise, strconv.Itoa(rport))))
	}
	if err := n.startBudget(); err != nil {
		return err
	}
	if t := cc.TLS; t.On() {
		topts, err := cluster.RemoteOptions(cluster.RemoteTLS{CAFile: n.spec.Resolve(t.CAFile), CertFile: n.spec.Resolve(t.CertFile),
			KeyFile: n.spec.Resolve(t.KeyFile), ServerName: t.ServerName, Logger: n.log.With("component", "remoting-tls")})
		if err != nil {
			return err
		}
		ropts = append(ropts, topts...)
	}
	// The key actors' write-behind batcher: their saves reach the store
	// through it (through the guard, metered).
	n.writer = actors.NewWriter(meteredSaves{n.keyStore(), n.metrics}, actors.WriterOptions{MaxBatch: n.spec.State.FlushBatch, Logger: n.log})
	n.pruner = actors.NewPruner(n.system.Root, 0)
	kind := actors.NewKind(&actors.Deps{Job: n.spec.Name, CDC: n.cdc, Multi: n.multi, NewTimed: n.timed, Store: n.keyStore(), Writer: n.writer, Logger: n.log,
		PassivateAfter: n.spec.State.PassivateAfter, Events: n.stats, Budget: n.budget, Committed: n.committed.get, Pruner: n.pruner})
	n.kind = actors.KindName(n.spec.Name)
	if n.placement, err = n.keyPlacement(); err != nil { // shards.go
		return err
	}
	cfg := pcluster.Configure("joinery-"+n.spec.Name, n.provider, actors.NewLookup(n.placement),
		remote.Configure(rhost, rport, ropts...),
		pcluster.WithKinds(kind), pcluster.WithRequestTimeout(n.timeout))
	n.cluster = pcluster.New(n.system, cfg)
	// protoactor's StartMember panics on failure (turned into an error
	// here), and sleeps a second once the provider started: the node goes
	// on as soon as the provider published its first topology, and the
	// sleep ends on its own (a second off every start; docs/performance/2026-12-05-fleet.md,
	// "Cold start").
	failed := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				failed <- fmt.Errorf("start member: %v", r)
			}
		}()
		n.cluster.StartMember()
	}()
	select {
	case <-n.provider.Published():
	case err := <-failed:
		return err
	}
	// A fleet of another protocol version refuses the node at its first
	// join (cluster.ProtocolError): the start fails with it. Seeds not up
	// yet are retried in the background; a refusal then stops Run.
	select {
	case <-n.provider.FirstJoin():
	case <-time.After(firstJoinWait):
	}
	if err := n.provider.Refused(); err != nil {
		return err
	}
	n.watchPeers() // peers.go
	n.client = actors.NewClient(n.cluster, n.kind, actors.ClientOptions{Timeout: n.timeout, Lost: n.peers.watch, Suspect: n.provider.IsSuspect,
		Placement: n.placement})
	// Peers send this node's keys their requests in one message per batch;
	// as the keys' owner it writes their outputs to the shared sinks.
	writeShared := func(ctx context.Context, outs []record.Output) (bool, error) {
		return n.out.writeShared(ctx, outs, n.retry)
	}
	if _, err := actors.SpawnBatch(n.system, actors.BatchOptions{Write: writeShared}); err != nil {
		return err
	}
	return nil
}

// firstJoinWait bounds how long a start waits for its first join of the
// seeds to end (a refused join fails the start): a join takes
// milliseconds; a seed that does not answer is left to the retries.
const firstJoinWait = 5 * time.Second

// startBudget makes the memory budget of the node's live key actors:
// state.memory_budget, or 35% of the soft memory limit (internal/gctune).
func (n *Node) startBudget() error {
	override := n.plan.MemoryBudget
	limit, from := int64(0), "off"
	if override >= 0 {
		limit, from = gctune.MemoryBudget(override)
	}
	n.budget = actors.NewBudget(limit, n.system.Root)
	n.budgetBytes, n.budgetFrom = limit, from
	if from == "job" {
		n.budgetFrom = "state.memory_budget"
	}
	n.stats.budget = n.budget
	n.metrics.KeysBudgetBytes.WithLabelValues(n.spec.Name).Set(float64(limit))
	n.log.Info("key memory budget", "bytes", limit, "from", from, "per_key_estimate", actors.ActivationBytes)
	return nil
}

// Budget is the memory budget of the node's live key actors.
func (n *Node) Budget() actors.BudgetStats { return n.budget.Stats() }

// AdminAddr is the bound address of the admin HTTP server ("" without one).
func (n *Node) AdminAddr() string {
	if n.admin == nil {
		return ""
	}
	return n.admin.Addr()
}

// IngestAddr is the bound address of the HTTP ingest endpoint ("" without one).
func (n *Node) IngestAddr() string {
	if n.ingest == nil {
		return ""
	}
	return n.ingest.Addr()
}

// Metrics returns the node's Prometheus metrics.
func (n *Node) Metrics() *admin.Metrics { return n.metrics }

// GossipAddr is the address other nodes use as a seed to join this one.
func (n *Node) GossipAddr() string { return n.provider.GossipAddr() }

// Address is the node's actor remoting address.
func (n *Node) Address() string { return n.system.Address() }

// Members returns the cluster members this node sees.
func (n *Node) Members() []cluster.MemberInfo { return n.provider.Members() }

// Stats returns the node's counters.
func (n *Node) Stats() *Stats { return n.stats }

// Table returns the joined table materialized from this node's outputs (the
// result of the changes its sources read, across restarts only if the sink
// state was kept).
func (n *Node) Table() []joins.TableRow { return n.out.tableRows() }

// Columns are the output columns in projection order (nil without a projection).
func (n *Node) Columns() []string {
	return n.plan.Columns
}

// pruneOnCloseTimeout bounds how long Close waits for the live keys to
// prune their committed outbox entries.
const pruneOnCloseTimeout = 5 * time.Second

// Close shuts the node down: flushes pending state writes, leaves the cluster
// gracefully, closes sinks and the store. It is idempotent.
func (n *Node) Close(ctx context.Context) error {
	var errs []error
	n.closed.Do(func() {
		n.draining.Store(true) // readiness off first
		if n.ingest != nil {
			errs = append(errs, n.ingest.Shutdown(ctx)) // stop intake
		}
		n.stopWmShare(ctx)
		if n.budget != nil && n.writer != nil && n.rollback.found() == nil { // a store gone back in time refuses the writes
			// Keys idle since their last input prune the outputs their
			// sources have committed since, so the store keeps no outbox
			// entry that can no longer be re-sent (actors.Budget.Prune).
			pctx, cancel := context.WithTimeout(ctx, pruneOnCloseTimeout)
			if err := n.budget.Prune(pctx); err != nil {
				n.log.Warn("stopping: not every key pruned its committed outputs in time; they stay in the store until the key is next used", "timeout", pruneOnCloseTimeout, "err", err)
			}
			cancel()
		}
		n.pruner.Close()
		if n.cluster != nil {
			n.cluster.Shutdown(true)
		}
		if n.writer != nil {
			n.writer.Close(ctx)
		}
		if n.out != nil {
			errs = append(errs, n.out.close())
		}
		if n.store != nil {
			errs = append(errs, n.store.Close())
		}
		if n.admin != nil {
			errs = append(errs, n.admin.Shutdown(ctx))
		}
		if n.console != nil {
			n.console.Close()
		}
	})
	return errors.Join(errs...)
}

// Inspect asks the actor of key, wherever in the cluster it lives, for its
// live state. It activates the key if it is not active.
func (n *Node) Inspect(key record.Key) (*keypb.KeyState, error) {
	res, err := n.client.Request(string(key), &keypb.Inspect{}, n.timeout)
	if err != nil {
		return nil, err
	}
	ks, ok := res.(*keypb.KeyState)
	if !ok {
		return nil, fmt.Errorf("node: unexpected answer %T", res)
	}
	return ks, nil
}

// keyMemory is this node's key memory figures for the admin API.
func (n *Node) keyMemory() *admin.KeyMemory {
	b := n.budget.Stats()
	return &admin.KeyMemory{BudgetBytes: b.Limit, AccountedBytes: b.Bytes,
		Activations: n.stats.Activations.Load(), Passivations: n.stats.PassivationsByCause()}
}

// CheckExposure runs, without listening, the checks Start makes before its
// cluster listens: gossip without a secret key or remoting without mutual
// TLS on an address that is not loopback, unless cluster.insecure
// (*cluster.ExposureError). `joinery check` runs it, so check refuses what
// run would.
func CheckExposure(plan *job.Plan) error {
	cc := plan.Spec.Cluster
	rhost, ghost := plan.Remote.Host, plan.Gossip.Host
	var errs []error
	if len(plan.GossipKey) == 0 && !cc.Insecure && !cluster.IsLoopback(ghost) {
		errs = append(errs, &cluster.ExposureError{What: "gossip", Addr: ghost,
			Need: "a secret_key (gossip encryption), or insecure: true to run in the clear"})
	}
	errs = append(errs, cluster.CheckRemoteExposure(rhost, cc.TLS.On(), cc.Insecure))
	return errors.Join(errs...)
}
