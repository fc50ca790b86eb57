package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/memberlist"
)

// Protocol is the version of the protocol a node speaks with its fleet:
// the remoting messages between nodes (actors/keypb), the node meta it
// gossips (nodeMeta) and the layout of the state it stores and reads
// (persistence/redisstore). It is gossiped in every node's meta. Bump it
// on any change that a node of the previous version would misread; nodes
// of different protocols never form one fleet (docs/operations/upgrades.md:
// such an upgrade drains the fleet instead of rolling). A node whose meta
// does not say speaks protocol 1.
//
// The versions:
//
//	1  each join key's state in three Redis keys (state, parts, epoch),
//	   rows as JSON (every release before version 2; their meta says no version)
//	2  each join key one Redis hash (epoch, binary base, parts), rows in
//	   internal/rowcodec under their side's column schema, a row's source
//	   position folded into its part; a version-1 node reads none of it
//	3  each join key's hashes named by a short tag from the store's job
//	   registry, a right row's integer key as the field; a version-2 node
//	   would not find a key a version-3 node moved
const Protocol = 3

// ErrIncompatible is what a ProtocolError matches with errors.Is.
var ErrIncompatible = errors.New("cluster: incompatible protocol version")

// ProtocolError says that a peer speaks another protocol than this node:
// the node refuses to join a fleet of it, and a fleet refuses it as a
// member (memberlist's merge and alive delegates).
type ProtocolError struct {
	Node string // the peer's memberlist node name
	Peer int    // the protocol version the peer speaks
	Own  int    // the one this node speaks
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("cluster: node %s speaks protocol version %d and this node speaks %d: nodes of incompatible versions cannot run in one fleet (drain the fleet to upgrade across them: docs/operations/upgrades.md)",
		e.Node, e.Peer, e.Own)
}

// Is makes errors.Is(err, ErrIncompatible) hold.
func (e *ProtocolError) Is(target error) bool { return target == ErrIncompatible }

// protocolOf is the protocol a node with meta m speaks.
func protocolOf(m nodeMeta) int {
	if m.Proto == 0 {
		return 1
	}
	return m.Proto
}

// checkPeer returns a *ProtocolError when memberlist node n, not this
// node, gossips a meta of another protocol than this node's. A meta that
// does not decode is left to recordNode, which keeps such a node out of
// placement.
func (p *Provider) checkPeer(n *memberlist.Node) error {
	if n.Name == p.selfName() || len(n.Meta) == 0 {
		return nil
	}
	m, err := decodeMeta(n.Meta)
	if err != nil {
		return nil
	}
	if peer, own := protocolOf(m), p.cfg.protocol(); peer != own {
		return &ProtocolError{Node: n.Name, Peer: peer, Own: own}
	}
	return nil
}

// selfName is this node's memberlist name ("" before start).
func (p *Provider) selfName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.self
}

// versionDelegate refuses peers of another protocol: a push/pull merge
// with one (the joining node's Join fails, and a member does not take the
// joiner in), and any news of one alive (it never becomes a member).
type versionDelegate struct{ p *Provider }

var (
	_ memberlist.MergeDelegate = versionDelegate{}
	_ memberlist.AliveDelegate = versionDelegate{}
)

// NotifyMerge refuses a merge with a node list holding a peer of another
// protocol. A node that has not joined its seeds yet records the refusal:
// joinLoop then stops and reports it (Config.OnRefused).
func (d versionDelegate) NotifyMerge(peers []*memberlist.Node) error {
	for _, n := range peers {
		if err := d.p.checkPeer(n); err != nil {
			if !d.p.joined.Load() {
				d.p.refused.CompareAndSwap(nil, &refusal{err})
			}
			d.p.logNow().Warn("refused a node of another protocol version", slog.Any("error", err))
			return err
		}
	}
	return nil
}

// NotifyAlive keeps a peer of another protocol out of the member list.
func (d versionDelegate) NotifyAlive(n *memberlist.Node) error { return d.p.checkPeer(n) }

// refusal is the error a Provider was refused with while joining.
type refusal struct{ err error }

// refusedAtJoin is the refusal recorded while joining, or nil.
func refusedAtJoin(r *atomic.Pointer[refusal]) error {
	if v := r.Load(); v != nil {
		return v.err
	}
	return nil
}
