package actors

import (
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
)

// Placement decides where key actors live: given the live members of a
// topology, it returns the function that names the owner (a member's
// remote address, "" when none hosts kind) of a key actor of kind. The
// Client, the Lookup's activator and the admin's key location all ask the
// same Placement, so they agree whenever they saw the same topology.
type Placement func(kind string, members cluster.Members) func(key string) string

// RendezvousPlacement is protoactor's own placement, what its disthash
// identity lookup does: the rendezvous (highest-random-weight) winner among
// the members hosting kind. The default.
func RendezvousPlacement(kind string, members cluster.Members) func(key string) string {
	r := cluster.NewRendezvous()
	r.UpdateMembers(members)
	return func(key string) string { return r.GetByClusterIdentity(cluster.NewClusterIdentity(key, kind)) }
}

// Lookup is a protoactor identity lookup that places key actors by a
// Placement: disthash's protocol (an activator actor per member, named as
// disthash's, that spawns the actors asked of it and stops those a new
// topology places elsewhere), with the placement swapped. disthash
// hard-wires rendezvous per key; key groups that follow the source
// partitions (streamshard.KeyGroup) need their own, and an activator that
// stopped every actor rendezvous would place elsewhere would undo them at
// each membership change.
type Lookup struct {
	place     Placement
	c         *cluster.Cluster
	activator *actor.PID
	sub       *eventstream.Subscription
	owners    atomic.Pointer[map[string]func(string) string] // kind -> placement of the latest topology
}

var _ cluster.IdentityLookup = (*Lookup)(nil)

// NewLookup returns a Lookup placing by place (nil: RendezvousPlacement).
func NewLookup(place Placement) *Lookup {
	if place == nil {
		place = RendezvousPlacement
	}
	return &Lookup{place: place}
}

// Setup starts the activator and follows the topology (cluster.IdentityLookup).
func (l *Lookup) Setup(c *cluster.Cluster, kinds []string, isClient bool) {
	l.c = c
	l.update(c.MemberList.Members().Members())
	a := &activator{l: l, actors: map[actorKey]*actor.PID{}}
	l.activator, _ = c.ActorSystem.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return a }), disthash.PartitionActivatorActorName)
	l.sub = c.ActorSystem.EventStream.Subscribe(func(ev any) {
		if t, ok := ev.(*cluster.ClusterTopology); ok {
			l.update(t.Members)
			c.ActorSystem.Root.Send(l.activator, t)
		}
	})
}

func (l *Lookup) update(members cluster.Members) {
	owners := map[string]func(string) string{}
	for _, k := range l.c.GetClusterKinds() {
		owners[k] = l.place(k, members)
	}
	l.owners.Store(&owners)
}

// owner names the member that owns (kind, key) in the latest topology.
func (l *Lookup) owner(kind, key string) string {
	if m := l.owners.Load(); m != nil {
		if f := (*m)[kind]; f != nil {
			return f(key)
		}
	}
	return ""
}

// Get asks the owner's activator for the actor (cluster.IdentityLookup;
// actors.Client resolves keys itself, with a bounded wait).
func (l *Lookup) Get(ci *cluster.ClusterIdentity) *actor.PID {
	owner := l.owner(ci.Kind, ci.Identity)
	if owner == "" {
		return nil
	}
	res, err := l.c.ActorSystem.Root.RequestFuture(actor.NewPID(owner, disthash.PartitionActivatorActorName),
		&cluster.ActivationRequest{ClusterIdentity: ci}, 5*time.Second).Result()
	if err != nil {
		return nil
	}
	if r, ok := res.(*cluster.ActivationResponse); ok && !r.Failed {
		return r.Pid
	}
	return nil
}

// RemovePid tells the members that pid stopped (cluster.IdentityLookup).
func (l *Lookup) RemovePid(ci *cluster.ClusterIdentity, pid *actor.PID) {
	l.c.MemberList.BroadcastEvent(&cluster.ActivationTerminated{Pid: pid, ClusterIdentity: ci}, true)
}

// Shutdown stops following the topology and stops the activator, which
// stops its actors (cluster.IdentityLookup).
func (l *Lookup) Shutdown() {
	l.c.ActorSystem.EventStream.Unsubscribe(l.sub)
	if err := l.c.ActorSystem.Root.PoisonFuture(l.activator).Wait(); err != nil {
		l.c.Logger().Warn("stopping the key activator", slog.Any("error", err))
	}
}

// actorKey names one actor the activator spawned: its kind and identity
// (the strings of the request's ClusterIdentity, not the message itself,
// and no ClusterIdentity.AsKey string: ≈ 170 B less per live key).
type actorKey struct{ kind, identity string }

// activator spawns the key actors asked of this member and stops those a
// new topology places elsewhere (disthash's placement actor, with the
// Lookup's Placement).
type activator struct {
	l      *Lookup
	actors map[actorKey]*actor.PID
	kinds  []string // the kinds it spawned actors of
}

func (a *activator) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *cluster.ActivationRequest:
		a.activate(ctx, m)
	case *cluster.ClusterTopology:
		self := a.l.c.ActorSystem.Address()
		for k, pid := range a.actors {
			if a.l.owner(k.kind, k.identity) != self {
				ctx.Poison(pid)
			}
		}
	case *keyStopped:
		k := actorKey{m.kind, m.key}
		if p, ok := a.actors[k]; ok && p.Equal(m.pid) {
			a.stopped(k, m.pid)
		}
	case *actor.Terminated:
		if k, ok := a.spawned(ctx, m.Who); ok {
			a.stopped(k, m.Who)
		}
	case *actor.Stopping:
		var futs []*actor.Future
		for _, pid := range a.actors {
			futs = append(futs, ctx.PoisonFuture(pid))
		}
		for _, f := range futs {
			_ = f.Wait()
		}
	}
}

func (a *activator) activate(ctx actor.Context, m *cluster.ActivationRequest) {
	k := actorKey{m.ClusterIdentity.Kind, m.ClusterIdentity.Identity}
	if pid, ok := a.actors[k]; ok {
		ctx.Respond(&cluster.ActivationResponse{Pid: pid})
		return
	}
	kind := a.l.c.GetClusterKind(m.ClusterIdentity.Kind)
	if kind == nil {
		ctx.Respond(&cluster.ActivationResponse{Failed: true})
		return
	}
	var pid *actor.PID
	if props := bareProps(kind.Props); props != nil {
		// A bare key actor (bare.go) is spawned at the root, not as the
		// activator's child: a child costs its parent an entry in its
		// children's PIDSet (≈ 100 B per live key at 1M keys). It tells the
		// activator itself when it stops (keyStopped), where a child's
		// Terminated would.
		pid = a.l.c.ActorSystem.Root.SpawnPrefix(props, m.ClusterIdentity.Identity)
	} else {
		pid = ctx.SpawnPrefix(cluster.WithClusterIdentity(kind.Props, m.ClusterIdentity), m.ClusterIdentity.Identity)
	}
	kind.Inc()
	a.actors[k] = pid
	if !slices.Contains(a.kinds, k.kind) {
		a.kinds = append(a.kinds, k.kind)
	}
	ctx.Respond(&cluster.ActivationResponse{Pid: pid})
}

// keyStopped tells the activator that the bare key actor pid of kind and
// key stopped.
type keyStopped struct {
	kind, key string
	pid       *actor.PID
}

// stopped forgets the actor k, pid, which stopped, and tells the members.
func (a *activator) stopped(k actorKey, pid *actor.PID) {
	delete(a.actors, k)
	if kind := a.l.c.GetClusterKind(k.kind); kind != nil {
		kind.Dec()
	}
	a.l.c.MemberList.BroadcastEvent(&cluster.ActivationTerminated{Pid: pid, ClusterIdentity: cluster.NewClusterIdentity(k.identity, k.kind)}, true)
}

// spawned finds the child pid among those the activator spawned: its
// identity is in its id (childIdentity), its kind one of the kinds.
func (a *activator) spawned(ctx actor.Context, pid *actor.PID) (actorKey, bool) {
	id := childIdentity(ctx.Self().Id, pid.Id)
	for _, kind := range a.kinds {
		k := actorKey{kind, id}
		if p, ok := a.actors[k]; ok && p.Equal(pid) {
			return k, true
		}
	}
	return actorKey{}, false
}
