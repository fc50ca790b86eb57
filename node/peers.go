package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
)

// suspectFor is how long a peer whose remoting connection broke stays out
// of this node's placement (cluster.Provider.Suspect) unless the
// connection comes back first. By then memberlist has decided: a dead peer
// is gone from the membership, a live one is placed on again.
const suspectFor = 10 * time.Second

// watchPeers follows protoactor's remoting connections: when the
// connection to a peer breaks — the peer's socket closed, which a kill -9
// does at once — the peer leaves this node's placement right away, so its
// keys are activated on the other members without waiting for memberlist's
// failure detection plus a request timeout, which is what a kill -9 would
// otherwise stall for. A connection established again ends the
// suspicion. Fencing keeps a wrong suspicion harmless: a key activated
// elsewhere takes a newer owner epoch.
func (n *Node) watchPeers() {
	self := n.system.Address()
	n.system.EventStream.SubscribeWithPredicate(func(evt any) {
		switch e := evt.(type) {
		case *remote.EndpointTerminatedEvent:
			if e.Address != self {
				n.log.Info("remoting connection to a peer lost: not placing keys on it until it is back or memberlist decides",
					"peer", e.Address, "for", suspectFor)
				n.provider.Suspect(e.Address, suspectFor)
				n.peers.lose(e.Address)
			}
		case *remote.EndpointConnectedEvent:
			n.provider.Unsuspect(e.Address)
		}
	}, func(evt any) bool {
		switch evt.(type) {
		case *remote.EndpointTerminatedEvent, *remote.EndpointConnectedEvent:
			return true
		}
		return false
	})
}

// peerWatch fails the requests in flight to a peer whose connection broke,
// instead of letting each wait for its timeout: their answers cannot come
// (a kill -9 took the peer's mailboxes with it), and the sender resends
// them to the keys' new owners.
type peerWatch struct {
	mu   sync.Mutex
	lost map[string]chan struct{} // by address; closed when the connection broke
}

// watch returns a channel closed when the connection to addr breaks next.
func (w *peerWatch) watch(addr string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lost == nil {
		w.lost = map[string]chan struct{}{}
	}
	ch := w.lost[addr]
	if ch == nil {
		ch = make(chan struct{})
		w.lost[addr] = ch
	}
	return ch
}

// lose fails what waits on addr.
func (w *peerWatch) lose(addr string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch := w.lost[addr]; ch != nil {
		close(ch)
		delete(w.lost, addr)
	}
}

// errPeerLost answers a request to a peer whose connection broke (or that
// is suspected since). It wraps actor.ErrDeadLetter: as for an actor that
// passivated, the sender resolves the key again at once.
type errPeerLost struct{ addr string }

func (e errPeerLost) Error() string {
	return fmt.Sprintf("remoting connection to %s lost: %v", e.addr, actor.ErrDeadLetter)
}
func (e errPeerLost) Unwrap() error { return actor.ErrDeadLetter }

// remoteAnswer is a protoactor future that also ends, with errPeerLost,
// when the connection to its peer breaks.
type remoteAnswer struct {
	fut  *actor.Future
	addr string
	lost <-chan struct{}
}

func (a *remoteAnswer) Result(ctx context.Context) (any, error) {
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := a.fut.Result()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-a.lost:
		return nil, errPeerLost{a.addr}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
