package cluster

import "github.com/hashicorp/memberlist"

// eventDelegate feeds memberlist's join/leave/update events to the
// Provider. memberlist calls it with its node lock held and requires it
// not to block: it copies the node and signals, nothing more.
type eventDelegate struct{ p *Provider }

var _ memberlist.EventDelegate = eventDelegate{}

func (d eventDelegate) NotifyJoin(n *memberlist.Node)   { d.p.recordNode(n, StatusAlive) }
func (d eventDelegate) NotifyUpdate(n *memberlist.Node) { d.p.recordNode(n, StatusAlive) }

func (d eventDelegate) NotifyLeave(n *memberlist.Node) {
	status := StatusDead
	if n.State == memberlist.StateLeft {
		status = StatusLeft
	}
	d.p.recordNode(n, status)
}

// metaDelegate serves this node's meta (fixed at start) to memberlist and
// ignores user messages: watermark gossip, when added, gets its own
// delegate methods here.
type metaDelegate struct{ meta []byte }

var _ memberlist.Delegate = metaDelegate{}

func (d metaDelegate) NodeMeta(limit int) []byte {
	if len(d.meta) > limit { // checked at start; defensive
		return nil
	}
	return d.meta
}
func (metaDelegate) NotifyMsg([]byte)                           {}
func (metaDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (metaDelegate) LocalState(join bool) []byte                { return nil }
func (metaDelegate) MergeRemoteState(buf []byte, join bool)     {}
