package actors

import (
	"errors"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// Deps are what every key actor of one job shares on a node.
type Deps struct {
	Job string
	CDC *joins.CDCSpec // the changelog join; nil when NewTimed or Multi is set
	// Multi is the multi-way changelog join on one key; nil for others.
	Multi *joins.MultiSpec
	// NewTimed makes the per-key state machine of an event-time join.
	NewTimed func() joins.Timed
	Store    persistence.Store // loads state on activation
	Writer   *Writer           // writes snapshots
	Logger   *slog.Logger
	// PassivateAfter stops a key actor idle for this long, once its state is
	// durable; the next request reactivates it from the store. 0 = never.
	PassivateAfter time.Duration
	// Events, when set, is told about activations and passivations (metrics).
	Events Events
	// Budget, when set, keeps the node's live key actors within a memory
	// budget by passivating the least recently used.
	Budget *Budget
	// Committed, when set, returns the offsets (partition id -> offset)
	// this node's sources have committed, their outputs written; the
	// caller only reads the map. A key hears of commits in its next
	// request only, so one that idles with outbox entries prunes them
	// against Committed when Pruner asks and when it passivates, and
	// writes their deletion: a key touched once does not keep its last
	// input's outputs in the store while it idles.
	Committed func() map[string]int64
	// Pruner, when set (with Committed), asks keys that idle with outbox
	// entries to prune them.
	Pruner *Pruner

	// loads shares activations' loads' round trips (loader.go); NewKind
	// makes it. Nil: each activation loads alone.
	loads *loader
}

// Passivation causes, for EventsWithCause.
const (
	CauseIdle    = "idle"    // PassivateAfter elapsed
	CauseBudget  = "budget"  // the memory budget was exceeded
	CauseRequest = "request" // a Passivate message (admin, drain)
	CauseStopped = "stopped" // the activation stopped otherwise (a failed or fenced write, shutdown)
)

// EventsWithCause is an Events that also wants to know why a key actor
// passivated; it is called just before Passivated.
type EventsWithCause interface {
	PassivatedBecause(job string, cause string)
}

// Events receives key actor lifecycle events. Methods are called from actor
// goroutines, concurrently; they must not block.
type Events interface {
	Activated(job string, key record.Key)
	Passivated(job string, key record.Key)
	// Fenced reports a write refused because a newer activation of the key
	// owns it; the refused activation stops.
	Fenced(job string, key record.Key)
}

// KindName is the cluster kind of job's key actors.
func KindName(job string) string { return "join:" + job }

// NewKind returns the cluster kind whose actors are job's key actors.
func NewKind(d *Deps) *cluster.Kind {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	cfg := coreConfig(d)
	if d.loads == nil {
		d.loads = newLoader(d.Store)
	}
	// The lock-free mailbox: two linked queues of a node per message
	// instead of Unbounded's ring of 10 slots allocated up front (≈ 280 B
	// less per live key; a key actor's mailbox is empty most of the time),
	// wrapped so that requests it still holds when the actor stops are
	// answered as dead letters (mailbox.go).
	opts := []actor.PropsOption{actor.WithDispatcher(keyDispatcher()), actor.WithMailbox(deadLetterMailbox())}
	bare := actor.PropsFromProducer(func() actor.Actor { return &keyActor{deps: d, cfg: cfg, bare: true} }, opts...)
	kp := &kindProducer{deps: d, cfg: cfg, bare: bare}
	kind := cluster.NewKind(KindName(d.Job), actor.PropsFromProducer(kp.produce, opts...))
	registerBare(kind.Props, bare)
	return kind
}

// kindProducer makes the key actors of a kind's Props (cluster.NewKind's,
// with the cluster middleware). It holds the kind's bare Props too, so
// that they live as long as the kind's Props and no longer (bare.go).
type kindProducer struct {
	deps *Deps
	cfg  *keycore.Config
	bare *actor.Props
}

func (p *kindProducer) produce() actor.Actor { return &keyActor{deps: p.deps, cfg: p.cfg} }

// coreConfig is the key core configuration of d's key actors.
func coreConfig(d *Deps) *keycore.Config {
	return &keycore.Config{Machine: keycore.MachineSpec{CDC: d.CDC, Multi: d.Multi, NewTimed: d.NewTimed}, Parts: true}
}

// writeDone tells a key actor that one of its snapshots is durable (or not).
type writeDone struct{ err error }

// keyActor is the protoactor shell around one key's keycore.Core: it owns
// the mailbox, loads and persists (Store, Writer), answers, and passivates.
// The per-key protocol and the join are the core's. Its mailbox is the
// only goroutine that touches the fields, so they need no lock.
type keyActor struct {
	deps    *Deps
	cfg     *keycore.Config
	core    *keycore.Core
	cause   string      // why passivation was requested
	waiting []waiter    // answers that wait for the next write (keycore.Ready.Wait)
	budget  budgetEntry // its entry in the memory budget (Deps.Budget), held here
	bytes   int64       // what the budget accounts this activation
	pruning pruneEntry  // its entry in the Pruner's queue, held here
	// The flags last, together (the struct is one per live key).
	stop     bool // passivation requested: stop once nothing is pending
	poisoned bool // the poison pill is sent
	failed   bool // a write failed: stopping, nothing more is applied (abandon)
	// bare: spawned by the Lookup's activator from the kind's bare Props
	// (bareProps): no cluster middleware, so the actor starts itself on
	// Started (its key from its PID, keyIdentity) and drops its cached
	// PID on Stopped, as the middleware's ClusterInit and Stopped do.
	bare bool
}

// account tells the budget that the key was just used and what it holds
// (size: its encoded state's bytes, and cached: its join's snapshot caches
// — keycore.Write's Size and Cached — when the request wrote one, wrote;
// else the last figure stays).
func (a *keyActor) account(ctx actor.Context, size, cached int, wrote bool) {
	if a.deps.Budget == nil {
		return
	}
	if wrote || a.bytes == 0 {
		a.bytes = int64(ActivationBytes + StateFactor*size + cached)
	}
	a.deps.Budget.touch(&a.budget, ctx.Self(), a.bytes)
}

func (a *keyActor) Receive(ctx actor.Context) {
	if a.failed && a.refuse(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if a.bare {
			a.start(ctx, keyIdentity(ctx))
		}
	case *cluster.ClusterInit:
		a.start(ctx, m.Identity.Identity)
	case *keypb.Apply:
		a.apply(ctx, nil, m, false, nil)
	case *LocalApply:
		a.apply(ctx, m.Req, m.Wire, true, m.Reply)
	case *keypb.Inspect:
		ctx.Respond(a.inspect(ctx))
	case *writeDone:
		a.core.Durable()
		if m.err != nil {
			a.fail(ctx, m.err) // the requests waiting for the next write
			// Memory is now ahead of the store: stop, so the next activation
			// reloads the durable state. A fenced write means another
			// activation owns the key: this one is stale and must stop too.
			if len(persistence.Fenced(m.err)) > 0 {
				a.deps.Logger.Warn("key write fenced: a newer activation owns the key; stopping this one", "job", a.deps.Job, "key", a.core.Key(), "epoch", a.core.Epoch(), "err", m.err)
				if a.deps.Events != nil {
					a.deps.Events.Fenced(a.deps.Job, a.core.Key())
				}
				a.abandon(ctx)
				return
			}
			if errors.Is(m.err, persistence.ErrRollback) {
				// The writer and the node's guard report it once.
				a.deps.Logger.Debug("key state write refused: the state store went back in time; stopping the activation", "job", a.deps.Job, "key", a.core.Key())
				a.abandon(ctx)
				return
			}
			a.deps.Logger.Error("key state write failed; stopping the activation", "job", a.deps.Job, "key", a.core.Key(), "err", m.err)
			a.abandon(ctx)
			return
		}
		a.core.Offload() // the outbox JSON the store now holds leaves the heap
		if a.core.Pending() == 0 && a.core.Dirty() {
			a.flush(ctx)
		}
		a.queuePrune(ctx, false)
		a.maybeStop(ctx)
	case *actor.ReceiveTimeout:
		a.stop, a.cause = true, CauseIdle
		a.maybeStop(ctx)
	case budgetPassivate:
		if !a.deps.Budget.evicted(&a.budget) {
			return // used again since: it is among the most recent now
		}
		if !a.stop {
			a.stop, a.cause = true, CauseBudget
		}
		a.maybeStop(ctx)
	case pruneNow:
		if !a.prune(ctx) {
			a.queuePrune(ctx, true) // nothing committed yet: ask again later
		}
		if m.done != nil {
			m.done.Done()
		}
	case *keypb.Passivate:
		a.stop, a.cause = true, CauseRequest
		a.maybeStop(ctx)
		ctx.Respond(&keypb.Passivate{})
	case *actor.Stopped:
		a.fail(ctx, nil) // stopped (poisoned, fenced) with requests waiting for a write
		if a.bare && a.core != nil {
			kind, key := KindName(a.deps.Job), string(a.core.Key())
			if cl := cluster.GetCluster(ctx.ActorSystem()); cl != nil && cl.PidCache != nil {
				cl.PidCache.RemoveByValue(key, kind, ctx.Self())
			}
			ctx.Send(actor.NewPID(ctx.ActorSystem().Address(), disthash.PartitionActivatorActorName), &keyStopped{kind: kind, key: key, pid: ctx.Self()})
		}
		a.deps.Budget.remove(&a.budget)
		a.deps.Pruner.remove(&a.pruning)
		if a.deps.Events != nil && a.core != nil {
			if ec, ok := a.deps.Events.(EventsWithCause); ok {
				cause := a.cause
				if !a.poisoned || cause == "" {
					cause = CauseStopped
				}
				ec.PassivatedBecause(a.deps.Job, cause)
			}
			a.deps.Events.Passivated(a.deps.Job, a.core.Key())
		}
	}
}

// start makes the key's core and loads its state: the actor's first
// message (ClusterInit, or Started for a bare one).
func (a *keyActor) start(ctx actor.Context, key string) {
	if a.cfg == nil {
		a.cfg = coreConfig(a.deps)
	}
	a.core = keycore.New(a.cfg, record.Key(key))
	if err := a.load(); err != nil {
		a.deps.Logger.Warn("key state load failed; will retry on next request", "job", a.deps.Job, "key", a.core.Key(), "err", err)
	}
	if a.deps.PassivateAfter > 0 {
		ctx.SetReceiveTimeout(a.deps.PassivateAfter)
	}
	if a.deps.Events != nil {
		a.deps.Events.Activated(a.deps.Job, a.core.Key())
	}
	a.account(ctx, 0, 0, true)
}

// abandon stops the activation after a failed write: its memory is ahead
// of the store (or another activation owns the key), so it applies
// nothing more. It poisons rather than stops, as maybeStop does: a stop
// would drop the requests already in the mailbox without a dead letter,
// and their senders would wait out their whole timeout (30 s: the node
// that found a rollback took that long to stop). Until the pill arrives
// refuse answers each of them as if no actor were there, and the senders
// resend them to the next activation.
func (a *keyActor) abandon(ctx actor.Context) {
	a.failed = true
	if !a.poisoned {
		a.poisoned = true
		ctx.Poison(ctx.Self())
	}
}

// refuse answers a request that reaches an abandoned activation, as fail
// answers those that wait for a write that will not come, and reports
// whether the message was one; a late writeDone is dropped (its waiters
// were answered by its callback). Other messages are handled as usual.
func (a *keyActor) refuse(ctx actor.Context) bool {
	switch m := ctx.Message().(type) {
	case *keypb.Apply:
		ctx.Respond(&keypb.Applied{Error: "key activation stopped before its state was written"})
	case *LocalApply:
		if m.Reply == nil {
			ctx.Respond(&keypb.Applied{Error: "key activation stopped before its state was written"})
			return true
		}
		m.Reply.Reply(DeadLetter{})
	case *writeDone:
		a.core.Durable()
	default:
		return false
	}
	return true
}

// maybeStop passivates once nothing is being written. It poisons rather than
// stops: requests already in the mailbox are still applied (a stop would drop
// them and their senders would wait for a timeout), later ones are answered
// with a dead letter and resent to the next activation. A write still pending
// when the pill arrives cannot overwrite the next activation's state: that
// one acquires a newer epoch first, so the old write is fenced and its sender
// resends.
//
// Before it stops, a key with outbox entries prunes those its sources
// have committed (Deps.Committed) and writes that first.
func (a *keyActor) maybeStop(ctx actor.Context) {
	if a.stop && a.core.Pending() == 0 && !a.core.Dirty() && !a.poisoned {
		if a.prune(ctx) {
			return // stops once the prune's write is durable (writeDone)
		}
		a.poisoned = true
		ctx.Poison(ctx.Self())
	}
}

// queuePrune queues the key in the Pruner while it keeps outbox entries
// and takes it out once it has none (backoff: see Pruner.queue).
func (a *keyActor) queuePrune(ctx actor.Context, backoff bool) {
	p := a.deps.Pruner
	if p == nil || a.deps.Committed == nil || a.core == nil {
		return
	}
	if a.core.OutboxLen() == 0 || a.stop || a.poisoned || a.failed {
		p.remove(&a.pruning)
		return
	}
	p.queue(&a.pruning, ctx.Self(), time.Now(), backoff)
}

// prune drops the outbox entries the node's sources have committed and
// submits the Write that deletes them; it reports whether it submitted
// one.
func (a *keyActor) prune(ctx actor.Context) bool {
	if a.deps.Committed == nil || a.core == nil || a.core.OutboxLen() == 0 || a.core.Pending() > 0 || a.failed {
		return false
	}
	w, err := a.core.Prune(a.deps.Committed())
	if err != nil {
		a.deps.Logger.Error("key state encode failed; stopping the activation", "job", a.deps.Job, "key", a.core.Key(), "err", err)
		a.abandon(ctx)
		return false
	}
	if w == nil {
		return false
	}
	a.submit(ctx, w, nil)
	return true
}

func (a *keyActor) inspect(ctx actor.Context) *keypb.KeyState {
	c := a.core
	m := c.Machine()
	ks := &keypb.KeyState{Key: string(c.Key()), Offsets: c.Offsets().Map(), Node: ctx.ActorSystem().Address(), Outbox: int32(c.OutboxLen()), Epoch: c.Epoch()}
	if m.EventTime() {
		ks.Timers = append([]int64(nil), m.Timers()...)
		ks.Watermark = m.Watermark()
		if !m.Empty() {
			ks.Timed = m.Timed().Snapshot()
		}
		return ks
	}
	if mj := m.Multi(); mj != nil {
		// The driving table's rows as left, every other table's as rights.
		for i := range a.deps.Multi.Tables {
			for _, r := range mj.Rows(i) {
				b, _ := encodeRow(r)
				if i == 0 && ks.Left == nil {
					ks.Left = b
					continue
				}
				ks.Rights = append(ks.Rights, b)
			}
		}
		return ks
	}
	// A left side of many rows: its first row as left, the others first
	// among the rights, as the multi-way join shows its driving table.
	for i, l := range m.CDC().Lefts() {
		b, _ := encodeRow(l)
		if i == 0 {
			ks.Left = b
			continue
		}
		ks.Rights = append(ks.Rights, b)
	}
	for _, r := range m.CDC().Rights() {
		b, _ := encodeRow(r)
		ks.Rights = append(ks.Rights, b)
	}
	return ks
}
