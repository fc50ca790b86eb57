package actors

import (
	"context"
	"errors"
	"log/slog"
	"maps"
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
	Job    string
	Spec   *joins.CDCSpec
	Store  persistence.Store // loads state on activation
	Writer *Writer           // writes snapshots
	Logger *slog.Logger
}

// KindName is the cluster kind of job's key actors.
func KindName(job string) string { return "join:" + job }

// NewKind returns the cluster kind whose actors are job's key actors.
func NewKind(d *Deps) *cluster.Kind {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	props := actor.PropsFromProducer(func() actor.Actor { return &keyActor{deps: d} })
	return cluster.NewKind(KindName(d.Job), props)
}

// keyActor holds one join key's state. Its mailbox is the only goroutine that
// touches the fields, so they need no lock.
type keyActor struct {
	deps    *Deps
	key     record.Key
	join    *joins.CDC
	offsets map[string]int64 // partition id -> highest applied offset
	loaded  bool
	node    string
}

func (a *keyActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *cluster.ClusterInit:
		a.key = record.Key(m.Identity.Identity)
		a.node = ctx.ActorSystem().Address()
		a.join = joins.NewCDC(a.deps.Spec)
		a.offsets = map[string]int64{}
		if err := a.load(); err != nil {
			a.deps.Logger.Warn("key state load failed; will retry on next request", "job", a.deps.Job, "key", a.key, "err", err)
		}
	case *keypb.Apply:
		a.apply(ctx, m)
	case *keypb.Inspect:
		ctx.Respond(a.inspect())
	}
}

func (a *keyActor) load() error {
	if a.loaded {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	snap, err := a.deps.Store.Load(ctx, a.deps.Job, a.key)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
	case err != nil:
		return err
	default:
		if err := a.join.Restore(snap.State); err != nil {
			return err
		}
		a.offsets = maps.Clone(snap.Offsets)
		if a.offsets == nil {
			a.offsets = map[string]int64{}
		}
	}
	a.loaded = true
	return nil
}

func (a *keyActor) apply(ctx actor.Context, m *keypb.Apply) {
	if err := a.load(); err != nil {
		ctx.Respond(&keypb.Applied{Error: "load state: " + err.Error()})
		return
	}
	for part, off := range m.Prev {
		if a.offsets[part] < off {
			ctx.Respond(&keypb.Applied{Gap: true, Error: "gap: an earlier request for this key was not applied"})
			return
		}
	}
	reply := &keypb.Applied{}
	var outs []record.Output
	changed := false
	for _, pe := range m.Events {
		e, err := DecodeEvent(a.key, pe)
		if err != nil {
			ctx.Respond(&keypb.Applied{Error: err.Error()})
			return
		}
		part := e.Pos.PartitionID()
		if last, ok := a.offsets[part]; ok && e.Pos.Offset <= last {
			reply.Skipped++
			continue
		}
		outs = a.join.OnEvent(e, outs)
		a.offsets[part] = e.Pos.Offset
		changed = true
	}
	for _, o := range outs {
		po, err := EncodeOutput(o)
		if err != nil {
			ctx.Respond(&keypb.Applied{Error: err.Error()})
			return
		}
		reply.Outputs = append(reply.Outputs, po)
	}
	if !changed {
		ctx.Respond(reply)
		return
	}
	snap := persistence.Snapshot{Job: a.deps.Job, Key: a.key, Offsets: maps.Clone(a.offsets)}
	if !a.join.Empty() {
		snap.State = a.join.Snapshot()
	}
	// One input reaches one key at most once (a moved row goes to two
	// different keys), so "offset <= applied" above means "already applied".
	sender, self, root := ctx.Sender(), ctx.Self(), ctx.ActorSystem().Root
	a.deps.Writer.Submit(snap, func(err error) {
		if err != nil {
			// Memory is now ahead of the store: stop, so the next activation
			// reloads the durable state.
			reply = &keypb.Applied{Error: "write state: " + err.Error()}
			root.Stop(self)
		}
		if sender != nil {
			root.Send(sender, reply)
		}
	})
}

func (a *keyActor) inspect() *keypb.KeyState {
	ks := &keypb.KeyState{Key: string(a.key), Offsets: maps.Clone(a.offsets), Node: a.node}
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
