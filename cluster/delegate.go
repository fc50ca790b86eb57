package cluster

import "github.com/hashicorp/memberlist"

// eventDelegate feeds memberlist's join/leave/update events to the
// Provider. memberlist calls it with its node lock held and requires it
// not to block: it copies the node and signals, nothing more.
type eventDelegate struct{ p *Provider }

var _ memberlist.EventDelegate = eventDelegate{}

func (d eventDelegate) NotifyJoin(n *memberlist.Node)   { d.p.recordNode(n, false) }
func (d eventDelegate) NotifyUpdate(n *memberlist.Node) { d.p.recordNode(n, false) }
func (d eventDelegate) NotifyLeave(n *memberlist.Node)  { d.p.recordNode(n, true) }

// metaDelegate serves this node's current meta to memberlist and ignores
// user messages (the cluster gossips nothing but the meta).
type metaDelegate struct{ p *Provider }

var _ memberlist.Delegate = metaDelegate{}

func (d metaDelegate) NodeMeta(limit int) []byte {
	b := d.p.meta.Load()
	if b == nil || len(*b) > limit { // size checked by encodeMeta; defensive
		return nil
	}
	return *b
}
func (metaDelegate) NotifyMsg([]byte)                           {}
func (metaDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (metaDelegate) LocalState(join bool) []byte                { return nil }
func (metaDelegate) MergeRemoteState(buf []byte, join bool)     {}
