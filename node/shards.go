package node

import (
	"context"
	"fmt"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/joinery/joinery/actors"
	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/connectors"
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
// belongs to a key group (keyGroups), and the group to the member that the
// shard leases give shard group to (streamshard.Assign over the members'
// names, as sources/redisstream spreads the shards and the Kafka source's
// KeyGroupBalancer assigns the partitions): the node that reads a shard
// hosts the actors of its keys, so its events need no network hop.
// Otherwise keys are placed one by one, by rendezvous.
func (n *Node) keyPlacement() (actors.Placement, error) {
	groups, groupOf, err := n.keyGroups()
	if err != nil || groups == 0 {
		return actors.RendezvousPlacement, err
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
		return func(key string) string { return byGroup[groupOf(key)] }
	}, nil
}

// kafkaMetadataTimeout bounds the partition count lookup of a job's
// co-partitioned Kafka topics when the node starts.
const kafkaMetadataTimeout = 30 * time.Second

// keyGroups is the job's key groups: how many (0: keys are placed one by
// one) and the group of a key, by the rule of the job's sources
// partitioned by the join key (job.Plan.KeyGrouped; Compile checked they
// share one). When the job does not know how many (Kafka topics keyed by
// the join column: their partitions), each source's kind asks its system
// here (connectors.Kind.KeyGroups): counts that differ are not
// co-partitioned, an error naming both.
func (n *Node) keyGroups() (int, func(string) int, error) {
	srcs := n.plan.KeyGrouped()
	if len(srcs) == 0 {
		return 0, nil, nil
	}
	if g := srcs[0].KeyGroups; g.Groups > 0 && g.Of != nil {
		groups, of := g.Groups, g.Of
		return groups, func(key string) int { return of(key, groups) }, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkaMetadataTimeout)
	defer cancel()
	var kgs []connectors.KeyGroups
	for i, src := range srcs {
		var kg connectors.KeyGroups
		err := fmt.Errorf("a %s source has no key groups of its own", src.Type)
		if src.Kind.KeyGroups != nil {
			kg, err = src.Kind.KeyGroups(ctx, src.Config, n.connEnv())
		}
		if err != nil {
			return 0, nil, fmt.Errorf("source %s: partitioned_by join_key: %w", src.Name, err)
		}
		if kg.Partitions <= 0 {
			return 0, nil, fmt.Errorf("source %s: partitioned_by join_key: %s has no partitions", src.Name, kg.What)
		}
		if i > 0 && kg.Partitions != kgs[0].Partitions {
			return 0, nil, fmt.Errorf("partitioned_by join_key sources must be co-partitioned: %s (source %s) has %d partitions, %s (source %s) has %d; give them the same partition count, as Kafka Streams requires of joined topics",
				kgs[0].What, srcs[0].Name, kgs[0].Partitions, kg.What, src.Name, kg.Partitions)
		}
		kgs = append(kgs, kg)
	}
	groups, of := kgs[0].Partitions, kgs[0].Of // every source's Of is one rule (Compile: one key grouping rule)
	return groups, func(key string) int { return of(key, groups) }, nil
}
