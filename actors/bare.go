package actors

import (
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/asynkron/protoactor-go/actor"
)

// Bare Props. cluster.NewKind wraps a kind's Props in protoactor's cluster
// middleware, which needs the actor's ClusterIdentity as a context
// extension: protoactor's activators spawn each actor from a clone of the
// Props that sets it (cluster.WithClusterIdentity). Per live key that is
// ≈ 550 B of heap kept for the activation's life: the cloned Props, its
// OnInit closure, and the context extras and extensions it sets. The
// Lookup's activator spawns the key actors of a kind made by NewKind from
// the kind's bare Props instead (the same actor and options, no
// middleware): the actor then starts on Started, its key read from its PID
// (keyIdentity), and drops its cached PID itself on Stopped.

// bare maps a weak pointer to the kind's Props (cluster.NewKind's) to a
// weak pointer to its bare Props, which the kind's Props hold (NewKind's
// kindProducer): an entry goes with its kind. The value must not be
// strong: the bare Props reach the kind's (their Deps hold the budget,
// whose root context holds the actor system, its cluster and its kinds),
// and a strong value kept every closed node's actor system, key actors
// and sinks reachable for the life of the process.
var bare sync.Map

// registerBare records the bare Props of the kind whose Props are kind,
// for as long as kind is reachable. kind must hold props.
func registerBare(kind, props *actor.Props) {
	k := weak.Make(kind)
	bare.Store(k, weak.Make(props))
	runtime.AddCleanup(kind, func(k weak.Pointer[actor.Props]) { bare.Delete(k) }, k)
}

// bareProps returns the bare Props registered for a kind's Props, or nil
// (a kind not made by NewKind: spawn it as protoactor does).
func bareProps(kind *actor.Props) *actor.Props {
	if p, ok := bare.Load(weak.Make(kind)); ok {
		return p.(weak.Pointer[actor.Props]).Value()
	}
	return nil
}

// keyIdentity is a bare key actor's key (childIdentity).
func keyIdentity(ctx actor.Context) string {
	parent := ""
	if p := ctx.Parent(); p != nil {
		parent = p.Id
	}
	return childIdentity(parent, ctx.Self().Id)
}

// childIdentity is the identity of the key actor whose PID's id is id,
// spawned by the activator whose id is parent. The activator spawns a key
// actor as its child with the key as the name's prefix (ctx.SpawnPrefix),
// so its id is the parent's id, "/", the key, then the process registry's
// "$" and counter (base-64 digits, no "$").
func childIdentity(parent, id string) string {
	if parent != "" {
		id = strings.TrimPrefix(id, parent+"/")
	}
	if i := strings.LastIndexByte(id, '$'); i >= 0 {
		id = id[:i]
	}
	return id
}
