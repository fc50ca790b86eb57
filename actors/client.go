package actors

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
)

// Client sends requests to key actors of one kind.
//
// It resolves a key to its actor's PID through its Placement (the
// cluster's Lookup's) and the cluster's PID cache, and sends from this
// node's own root context. It exists because protoactor-go's
// Cluster.Request/RequestFuture keep their call options in a package-level
// variable bound to the first cluster of the process, so a second actor
// system in one process (tests, embedded use) would send from the wrong one.
//
// Resolving a key that is not cached asks the owner's activator for the
// actor, as protoactor's disthash lookup does, but with the client's own
// placement (the latest ClusterTopology event, which the cluster provider
// publishes without its suspected members) and with Options: a bounded
// wait, and an answer that ends as soon as the owner's connection is lost
// — disthash waits a fixed 5 s for an activator that a kill -9 took.
type Client struct {
	c     *cluster.Cluster
	kind  string
	opts  ClientOptions
	owner atomic.Pointer[func(string) string] // placement of the latest topology
}

// ClientOptions tune how a Client resolves keys; the zero value is usable.
type ClientOptions struct {
	// Timeout bounds an activation request. Default 5 s.
	Timeout time.Duration
	// Lost, when set, returns a channel closed when the connection to the
	// member at addr breaks (the activation request to it fails at once).
	Lost func(addr string) <-chan struct{}
	// Suspect, when set, reports members not to ask at all.
	Suspect func(addr string) bool
	// Placement places the keys; it must be the cluster's Lookup's.
	// nil: RendezvousPlacement (protoactor's disthash).
	Placement Placement
}

// NewClient returns a client for kind on cluster c, which must be started.
func NewClient(c *cluster.Cluster, kind string, opts ClientOptions) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Placement == nil {
		opts.Placement = RendezvousPlacement
	}
	cl := &Client{c: c, kind: kind, opts: opts}
	cl.place(c.MemberList.Members().Members())
	c.ActorSystem.EventStream.SubscribeWithPredicate(func(evt any) {
		cl.place(evt.(*cluster.ClusterTopology).Members)
	}, func(evt any) bool {
		_, ok := evt.(*cluster.ClusterTopology)
		return ok
	})
	return cl
}

func (cl *Client) place(members cluster.Members) {
	f := cl.opts.Placement(cl.kind, members)
	cl.owner.Store(&f)
}

// Owner names the member (its remote address) that owns key in the latest
// topology, "" when none hosts the kind; nothing is activated.
func (cl *Client) Owner(key string) string { return (*cl.owner.Load())(key) }

// ErrOwnerLost is returned when the connection to a key's owner broke while
// it was asked for the key's actor (or the owner is suspected).
var ErrOwnerLost = errors.New("actors: the key's owner is unreachable")

// ErrNoOwner is returned when no member hosts the kind (yet).
var ErrNoOwner = errors.New("actors: no cluster member hosts the kind")

// PID resolves key to its actor, activating it on its owner if needed.
func (cl *Client) PID(key string) (*actor.PID, error) {
	if pid, ok := cl.c.PidCache.Get(key, cl.kind); ok && pid != nil {
		return pid, nil
	}
	pid, err := cl.activate(key)
	if err != nil {
		return nil, err
	}
	cl.c.PidCache.Set(key, cl.kind, pid)
	return pid, nil
}

// activate asks key's owner's activator for its actor (disthash's
// ActivationRequest).
func (cl *Client) activate(key string) (*actor.PID, error) {
	ci := cluster.NewClusterIdentity(key, cl.kind)
	owner := cl.Owner(key)
	if owner == "" {
		return nil, ErrNoOwner
	}
	if cl.opts.Suspect != nil && cl.opts.Suspect(owner) {
		return nil, fmt.Errorf("%w: %s", ErrOwnerLost, owner)
	}
	var lost <-chan struct{}
	if cl.opts.Lost != nil && owner != cl.c.ActorSystem.Address() {
		lost = cl.opts.Lost(owner)
	}
	fut := cl.c.ActorSystem.Root.RequestFuture(actor.NewPID(owner, disthash.PartitionActivatorActorName),
		&cluster.ActivationRequest{ClusterIdentity: ci}, cl.opts.Timeout)
	type result struct {
		v   any
		err error
	}
	var r result
	if lost == nil {
		// Nothing to race the answer against (the owner is this node, or
		// no Lost): wait on this goroutine, not another and a channel.
		r.v, r.err = fut.Result()
	} else {
		done := make(chan result, 1)
		go func() {
			v, err := fut.Result()
			done <- result{v, err}
		}()
		select {
		case r = <-done:
		case <-lost:
			return nil, fmt.Errorf("%w: %s", ErrOwnerLost, owner)
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("actors: activate %s/%s on %s: %w", cl.kind, key, owner, r.err)
	}
	res, ok := r.v.(*cluster.ActivationResponse)
	if !ok || res.Failed || res.Pid == nil {
		return nil, ErrNoOwner
	}
	return res.Pid, nil
}

// Forget drops the cached PID of key, so the next request resolves it again
// (after the actor moved, passivated or stopped).
func (cl *Client) Forget(key string) { cl.c.PidCache.Remove(key, cl.kind) }

// RequestFuture sends msg to key's actor and returns the future of its answer.
func (cl *Client) RequestFuture(key string, msg any, timeout time.Duration) (*actor.Future, error) {
	pid, err := cl.PID(key)
	if err != nil {
		return nil, err
	}
	return cl.c.ActorSystem.Root.RequestFuture(pid, msg, timeout), nil
}

// Request sends msg to key's actor and waits for the answer. When the actor
// is gone (it moved or stopped) it forgets the cached PID and tries again, up
// to three times.
func (cl *Client) Request(key string, msg any, timeout time.Duration) (any, error) {
	var last error
	for range 3 {
		f, err := cl.RequestFuture(key, msg, timeout)
		if err != nil {
			last = err
			continue
		}
		res, err := f.Result()
		if err == nil {
			return res, nil
		}
		last = err
		if !errors.Is(err, actor.ErrDeadLetter) {
			break
		}
		cl.c.PidCache.Remove(key, cl.kind)
	}
	return nil, fmt.Errorf("actors: request to %s/%s: %w", cl.kind, key, last)
}
