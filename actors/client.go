package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
)

// Client sends requests to key actors of one kind.
//
// It resolves a key to its actor's PID through the cluster's identity lookup
// (rendezvous placement) and the cluster's PID cache, and sends from this
// node's own root context. It exists because protoactor-go's
// Cluster.Request/RequestFuture keep their call options in a package-level
// variable bound to the first cluster of the process, so a second actor
// system in one process (tests, embedded use) would send from the wrong one.
type Client struct {
	c    *cluster.Cluster
	kind string
}

// NewClient returns a client for kind on cluster c.
func NewClient(c *cluster.Cluster, kind string) *Client { return &Client{c: c, kind: kind} }

// ErrNoOwner is returned when no member hosts the kind (yet).
var ErrNoOwner = errors.New("actors: no cluster member hosts the kind")

// PID resolves key to its actor, activating it on its owner if needed.
func (cl *Client) PID(key string) (*actor.PID, error) {
	if pid, ok := cl.c.PidCache.Get(key, cl.kind); ok && pid != nil {
		return pid, nil
	}
	pid := cl.c.Get(key, cl.kind)
	if pid == nil {
		return nil, ErrNoOwner
	}
	cl.c.PidCache.Set(key, cl.kind, pid)
	return pid, nil
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
