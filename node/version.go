package node

import (
	"context"
	"sync"
)

// fleetRefusal is closed once the fleet refused this node (a member speaks
// another protocol version, cluster.ProtocolError) after its start: Run and
// Wait return the error. A refusal during start fails the start instead.
type fleetRefusal struct {
	once sync.Once
	done chan struct{}
	err  error
}

func newFleetRefusal() *fleetRefusal { return &fleetRefusal{done: make(chan struct{})} }

func (r *fleetRefusal) stop(err error) { r.once.Do(func() { r.err = err; close(r.done) }) }

// found is the refusal, nil if none.
func (r *fleetRefusal) found() error {
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}

// Wait blocks a node without sources, which hosts key actors until it is
// stopped, until ctx ends (nil) or the fleet refuses it (the error).
func (n *Node) Wait(ctx context.Context) error {
	if n.refusal == nil {
		<-ctx.Done()
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-n.refusal.done:
		return n.refusal.err
	}
}
