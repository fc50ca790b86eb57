package node

import "github.com/joinery/joinery/cluster"

// Sharded Redis Streams sources (sources[].shards) spread their shards over
// the live members of the fleet that read them; these give the source this
// node's view of the fleet.

// liveMembers returns the names of the live members of the fleet that can
// read a source (clients, which run none, are left out).
func (n *Node) liveMembers() []string {
	var out []string
	for _, m := range n.provider.Members() {
		if m.Status == cluster.StatusAlive && !m.Client {
			out = append(out, m.Name)
		}
	}
	return out
}

// memberName is this node's name among liveMembers: its memberlist name,
// else fallback (the source's consumer name).
func (n *Node) memberName(fallback string) string {
	for _, m := range n.provider.Members() {
		if m.Self {
			return m.Name
		}
	}
	return fallback
}
