package actors

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// Deps are what every key actor of one job shares on a node.
type Deps struct {
	Job  string
	Spec *joins.CDCSpec // the changelog join; nil when NewTimed is set
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
	props := actor.PropsFromProducer(func() actor.Actor { return &keyActor{deps: d} }, actor.WithDispatcher(keyDispatcher()))
	return cluster.NewKind(KindName(d.Job), props)
}

// writeDone tells a key actor that one of its snapshots is durable (or not).
type writeDone struct{ err error }

// keyActor holds one join key's state. Its mailbox is the only goroutine that
// touches the fields, so they need no lock.
type keyActor struct {
	deps     *Deps
	key      record.Key
	join     *joins.CDC  // the changelog join, or nil
	timed    joins.Timed // an event-time join, or nil
	timers   []int64     // pending event-time timers, ascending, unique
	wm       int64       // the watermark this key has advanced to
	fx       joins.Effects
	offsets  map[string]int64  // partition id -> highest applied offset
	src      map[string]string // changelog join: "side/pk" -> last applied source position
	outbox   []outboxEntry
	seq      uint64 // the Seq of the key's last output
	loaded   bool
	epoch    int64 // owner epoch from Store.Acquire; 0 until acquired
	node     string
	pending  int  // snapshots handed to the Writer and not yet durable
	stop     bool // passivation requested: stop once pending is 0
	poisoned bool // the poison pill is sent
}

func (a *keyActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *cluster.ClusterInit:
		a.key = record.Key(m.Identity.Identity)
		a.node = ctx.ActorSystem().Address()
		a.fresh()
		if err := a.load(); err != nil {
			a.deps.Logger.Warn("key state load failed; will retry on next request", "job", a.deps.Job, "key", a.key, "err", err)
		}
		if a.deps.PassivateAfter > 0 {
			ctx.SetReceiveTimeout(a.deps.PassivateAfter)
		}
		if a.deps.Events != nil {
			a.deps.Events.Activated(a.deps.Job, a.key)
		}
	case *keypb.Apply:
		a.apply(ctx, m, nil, nil)
	case *LocalApply:
		a.apply(ctx, m.Apply, m.Rows, m.Reply)
	case *keypb.Inspect:
		ctx.Respond(a.inspect())
	case *writeDone:
		a.pending--
		if m.err != nil {
			// Memory is now ahead of the store: stop, so the next activation
			// reloads the durable state. A fenced write means another
			// activation owns the key: this one is stale and must stop too.
			if len(persistence.Fenced(m.err)) > 0 {
				a.deps.Logger.Warn("key write fenced: a newer activation owns the key; stopping this one", "job", a.deps.Job, "key", a.key, "epoch", a.epoch, "err", m.err)
				if a.deps.Events != nil {
					a.deps.Events.Fenced(a.deps.Job, a.key)
				}
				ctx.Stop(ctx.Self())
				return
			}
			a.deps.Logger.Error("key state write failed; stopping the activation", "job", a.deps.Job, "key", a.key, "err", m.err)
			ctx.Stop(ctx.Self())
			return
		}
		a.maybeStop(ctx)
	case *actor.ReceiveTimeout:
		a.stop = true
		a.maybeStop(ctx)
	case *keypb.Passivate:
		a.stop = true
		a.maybeStop(ctx)
		ctx.Respond(&keypb.Passivate{})
	case *actor.Stopped:
		if a.deps.Events != nil && (a.join != nil || a.timed != nil) {
			a.deps.Events.Passivated(a.deps.Job, a.key)
		}
	}
}

// maybeStop passivates once nothing is being written. It poisons rather than
// stops: requests already in the mailbox are still applied (a stop would drop
// them and their senders would wait for a timeout), later ones are answered
// with a dead letter and resent to the next activation. A write still pending
// when the pill arrives cannot overwrite the next activation's state: that
// one acquires a newer epoch first, so the old write is fenced and its sender
// resends.
func (a *keyActor) maybeStop(ctx actor.Context) {
	if a.stop && a.pending == 0 && !a.poisoned {
		a.poisoned = true
		ctx.Poison(ctx.Self())
	}
}

// stamp gives new outputs the key's next sequence numbers (record.Output.
// Seq): one above the last, and never below the wall clock in milliseconds
// shifted left 12 bits, so a key whose state was dropped when it emptied
// still numbers above its earlier outputs when it comes back.
func (a *keyActor) stamp(outs []record.Output) {
	floor := uint64(time.Now().UnixMilli()) << 12
	for i := range outs {
		a.seq = max(a.seq+1, floor)
		outs[i].Seq = a.seq
	}
}

// fresh empties the activation's state and forgets its epoch: the next
// load takes the key (a new owner epoch) and reads its durable state.
func (a *keyActor) fresh() {
	a.join, a.timed = nil, nil
	if a.deps.NewTimed != nil {
		a.timed = a.deps.NewTimed()
		a.wm = math.MinInt64
	} else {
		a.join = joins.NewCDC(a.deps.Spec)
	}
	a.offsets = map[string]int64{}
	a.timers, a.outbox, a.src, a.seq = nil, nil, nil, 0
	a.loaded, a.epoch = false, 0
}

// gap reports whether an earlier request (prev: the partition offsets of
// the sender's earlier unanswered requests) is missing from the state.
func (a *keyActor) gap(prev map[string]int64) bool {
	for part, off := range prev {
		if a.offsets[part] < off {
			return true
		}
	}
	return false
}

func (a *keyActor) load() error {
	if a.loaded {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if a.epoch == 0 {
		// Become the owner before reading: a stale activation's later write
		// is then refused, so what this one loads stays what it will extend.
		epoch, err := a.deps.Store.Acquire(ctx, a.deps.Job, a.key)
		if err != nil {
			return err
		}
		a.epoch = epoch
	}
	snap, err := a.deps.Store.Load(ctx, a.deps.Job, a.key)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
	case err != nil:
		return err
	default:
		st, err := decodeState(snap.State)
		if err != nil {
			return err
		}
		if len(st.Join) > 0 {
			if err := a.machineRestore(st.Join); err != nil {
				return err
			}
		}
		a.timers = st.Timers
		if st.Wm != nil {
			a.wm = *st.Wm
		}
		a.outbox = st.Outbox
		a.src = st.Src
		a.seq = st.Seq
		a.offsets = maps.Clone(snap.Offsets)
		if a.offsets == nil {
			a.offsets = map[string]int64{}
		}
	}
	a.loaded = true
	return nil
}

// apply applies a request. rows, when not nil (a LocalApply from this
// process), holds the events' decoded rows, and the answer is a
// LocalApplied with decoded outputs: nothing is encoded to JSON and back.
// The answer goes to replyTo when it is set, else to the sender.
func (a *keyActor) apply(ctx actor.Context, m *keypb.Apply, rows []EventRows, replyTo chan<- any) {
	respond := func(x any) {
		if replyTo == nil {
			ctx.Respond(x)
			return
		}
		select {
		case replyTo <- x:
		default: // one answer per request: never block the actor
		}
	}
	a.stop = false // a request cancels a pending passivation
	if a.deps.PassivateAfter > 0 {
		// protoactor cancels the receive timeout once it fires: arm it again
		// (a no-op while it is armed).
		ctx.SetReceiveTimeout(a.deps.PassivateAfter)
	}
	if err := a.load(); err != nil {
		respond(&keypb.Applied{Error: "load state: " + err.Error()})
		return
	}
	if a.gap(m.Prev) && a.pending == 0 {
		// This activation may be stale: a topology change can activate a
		// key twice, and one that has not written since the other took
		// the key is never fenced out — it would refuse every request
		// that builds on the other's writes, for ever. Take the key again
		// and reload its durable state: if the earlier request was applied
		// anywhere, it is there now.
		a.deps.Logger.Debug("gap: reloading the key's durable state", "job", a.deps.Job, "key", a.key, "epoch", a.epoch)
		a.fresh()
		if err := a.load(); err != nil {
			respond(&keypb.Applied{Error: "load state: " + err.Error()})
			return
		}
	}
	if a.gap(m.Prev) {
		respond(&keypb.Applied{Gap: true, Error: "gap: an earlier request for this key was not applied"})
		return
	}
	changed := a.prune(m.Committed)
	reply := &keypb.Applied{}
	var outs []record.Output
	for i, pe := range m.Events {
		part := record.Position{Source: pe.Source, Partition: pe.Partition}.PartitionID()
		// One input reaches one key at most once (a moved row goes to two
		// different keys), so "offset <= applied" means "already applied":
		// skip it, and send its outputs again if they may not have reached
		// the sinks yet.
		if last, ok := a.offsets[part]; ok && pe.Offset <= last {
			reply.Skipped++
			outs = append(outs, a.kept(part, pe.Offset)...)
			continue
		}
		n := len(outs)
		var err error
		if a.timed != nil {
			var row record.Row
			if rows != nil {
				row = rows[i].After
			} else if row, err = DecodeRow(pe.After); err != nil {
				respond(&keypb.Applied{Error: err.Error()})
				return
			}
			outs = a.applyTimed(pe, row, outs, reply)
		} else {
			var e record.Event
			if rows != nil {
				e, err = eventOf(a.key, pe, rows[i])
			} else {
				e, err = DecodeEvent(a.key, pe)
			}
			if err == nil {
				if a.duplicate(e, pe.SrcPos) {
					reply.Duplicates++
				} else {
					outs = a.join.OnEvent(e, outs)
				}
			}
		}
		if err != nil {
			respond(&keypb.Applied{Error: err.Error()})
			return
		}
		if len(outs) > n {
			a.stamp(outs[n:])
			a.outbox = append(a.outbox, outboxEntry{Part: part, Offset: pe.Offset, Outputs: outs[n:len(outs):len(outs)]})
		}
		a.offsets[part] = pe.Offset
		changed = true
	}
	if m.Fire && a.timed != nil {
		// Outputs of earlier firings that are kept (not yet committed) and
		// that this sender's session has not been sent: a restarted sender
		// may have lost them. A resent request gets them all again.
		outs = a.resendFired(min(m.Watermark, a.wm), m.Session, m.Resend, outs)
		if m.Watermark > a.wm {
			n := len(outs)
			outs = a.advance(m.Watermark, outs, reply)
			if len(outs) > n {
				a.stamp(outs[n:])
				a.outbox = append(a.outbox, outboxEntry{Part: firePart, Offset: m.Watermark, Outputs: outs[n:len(outs):len(outs)], sentTo: m.Session})
			}
			changed = true
		}
	}
	var answer any = reply
	if rows != nil {
		answer = &LocalApplied{Applied: reply, Outputs: outs}
	} else {
		for _, o := range outs {
			po, err := EncodeOutput(o)
			if err != nil {
				respond(&keypb.Applied{Error: err.Error()})
				return
			}
			reply.Outputs = append(reply.Outputs, po)
		}
	}
	if !changed && a.pending == 0 {
		// Nothing new, and everything applied so far is durable: a re-sent
		// request's skipped events are covered by the writes already done.
		// With writes still pending, the answer waits for a write of the
		// state as it is (it carries the skipped events, and is refused if
		// a newer activation took the key): an answer must never come
		// before what it covers is durable.
		respond(answer)
		return
	}
	snap := persistence.Snapshot{Job: a.deps.Job, Key: a.key, Epoch: a.epoch, Offsets: maps.Clone(a.offsets)}
	// A key whose join state emptied still writes a (small) state, so its
	// applied offsets survive passivation and failover: a request's Prev
	// names offsets that an emptied key must still know it applied, or it
	// would refuse the request as a gap for ever after reloading.
	if !a.machineEmpty() || len(a.outbox) > 0 || len(a.timers) > 0 || len(a.src) > 0 || len(a.offsets) > 0 {
		st := keyState{Outbox: a.outbox, Timers: a.timers, Src: a.src, Seq: a.seq}
		if !a.machineEmpty() {
			st.Join = a.machineSnapshot()
		}
		if a.timed != nil {
			wm := a.wm
			st.Wm = &wm
		}
		b, err := encodeState(st)
		if err != nil {
			respond(&keypb.Applied{Error: "encode state: " + err.Error()})
			return
		}
		snap.State = b
	}
	if t, ok := a.nextTimer(); ok {
		// The store's timer index wakes this key when the watermark reaches
		// its next timer, even if it is passivated by then.
		snap.HasTimer, snap.NextTimer = true, max(persistence.MinTimer, min(t, persistence.MaxTimer))
	}
	a.pending++
	sender, self, root := ctx.Sender(), ctx.Self(), ctx.ActorSystem().Root
	a.deps.Writer.Submit(snap, func(err error) {
		if err != nil {
			answer = &keypb.Applied{Error: "write state: " + err.Error()}
		}
		switch {
		case replyTo != nil:
			select {
			case replyTo <- answer:
			default:
			}
		case sender != nil:
			root.Send(sender, answer)
		}
		root.Send(self, &writeDone{err: err})
	})
}

// duplicate reports whether e, a changelog-join change at source position
// pos, is not newer than the last change applied to the same row (a
// Debezium at-least-once replay arriving at a new offset), and otherwise
// records pos as the row's last. Changes without a position, or whose row
// has no usable primary key, are never duplicates.
func (a *keyActor) duplicate(e record.Event, pos string) bool {
	if pos == "" {
		return false
	}
	row, pkCol := e.After, a.deps.Spec.Left.PK
	if e.Op == record.OpDelete {
		row = e.Before
	}
	if e.Side == record.Right {
		pkCol = a.deps.Spec.Right.PK
	}
	pk, ok := record.KeyOf(row[pkCol])
	if !ok {
		return false
	}
	id := e.Side.String() + "/" + string(pk)
	if last, ok := a.src[id]; ok && pos <= last {
		return true
	}
	if a.src == nil {
		a.src = map[string]string{}
	}
	a.src[id] = pos
	return false
}

// prune drops outbox entries the sender has committed. It reports whether it
// dropped any.
func (a *keyActor) prune(committed map[string]int64) bool {
	if len(committed) == 0 || len(a.outbox) == 0 {
		return false
	}
	kept := a.outbox[:0]
	for _, e := range a.outbox {
		if c, ok := committed[e.Part]; ok && e.Offset <= c {
			continue
		}
		kept = append(kept, e)
	}
	dropped := len(kept) != len(a.outbox)
	clear(a.outbox[len(kept):])
	a.outbox = kept
	return dropped
}

// resendFired appends the kept outputs of firings at or below wm that were
// not sent to session yet (all of them when resend), and records them sent.
func (a *keyActor) resendFired(wm int64, session string, resend bool, outs []record.Output) []record.Output {
	for i := range a.outbox {
		e := &a.outbox[i]
		if e.Part != firePart || e.Offset > wm || (!resend && e.sentTo == session) {
			continue
		}
		outs = append(outs, e.Outputs...)
		e.sentTo = session
	}
	return outs
}

// kept returns the outputs the outbox holds for an input.
func (a *keyActor) kept(part string, offset int64) []record.Output {
	for _, e := range a.outbox {
		if e.Part == part && e.Offset == offset {
			return e.Outputs
		}
	}
	return nil
}

func (a *keyActor) inspect() *keypb.KeyState {
	ks := &keypb.KeyState{Key: string(a.key), Offsets: maps.Clone(a.offsets), Node: a.node, Outbox: int32(len(a.outbox)), Epoch: a.epoch}
	if a.timed != nil {
		ks.Timers = append([]int64(nil), a.timers...)
		ks.Watermark = a.wm
		if !a.timed.Empty() {
			ks.Timed = a.timed.Snapshot()
		}
		return ks
	}
	if a.join == nil {
		return ks
	}
	if l := a.join.Left(); l != nil {
		ks.Left, _ = encodeRow(l)
	}
	for _, r := range a.join.Rights() {
		b, _ := encodeRow(r)
		ks.Rights = append(ks.Rights, b)
	}
	return ks
}
