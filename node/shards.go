package node

import (
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/joinery/joinery/actors"
	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/internal/streamshard"
)

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

// keyPlacement is where the job's key actors live. With sources whose
// shards follow the join key (sources[].partitioned_by: join_key) a key
// belongs to key group streamshard.KeyGroup(key, shards), and the group to
// the member that the shard leases give shard group to (streamshard.Assign
// over the members' names, as sources/redisstream spreads the shards): the
// node that reads a shard hosts the actors of its keys, so its events need
// no network hop. Otherwise keys are placed one by one, by rendezvous.
func (n *Node) keyPlacement() actors.Placement {
	groups := n.spec.KeyGroups()
	if groups == 0 {
		return actors.RendezvousPlacement
	}
	return func(kind string, members pcluster.Members) func(string) string {
		names := map[string]string{} // member ID -> memberlist name
		for _, m := range n.provider.Members() {
			names[m.ID] = m.Name
		}
		addr := map[string]string{} // name -> remote address
		var live []string
		for _, m := range members {
			if !m.HasKind(kind) {
				continue
			}
			name := names[m.Id]
			if name == "" {
				name = m.Id // not in this node's view yet: it places nothing until it is
			}
			addr[name] = m.Address()
			live = append(live, name)
		}
		owners := streamshard.Assign(groups, live)
		if owners == nil {
			return func(string) string { return "" }
		}
		byGroup := make([]string, groups)
		for g, o := range owners {
			byGroup[g] = addr[o]
		}
		return func(key string) string { return byGroup[streamshard.KeyGroup(key, groups)] }
	}
}
