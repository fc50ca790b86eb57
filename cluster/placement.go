package cluster

import (
	"strconv"
	"strings"

	protocluster "github.com/asynkron/protoactor-go/cluster"
)

// ownerKind is the placeholder kind Owner gives every member: protoactor
// places among the members hosting the requested kind, and Owner's caller
// has already chosen those members.
const ownerKind = "joinery-owner"

// Owner returns the member that owns key under rendezvous
// (highest-random-weight) hashing: of members, the one maximising
// FNV-1a-32(key ‖ member). members are protoactor remote addresses
// ("host:port"), because that is what protoactor hashes; entries that are
// not host:port with a decimal port are ignored. Owner returns "" when no
// member is usable.
//
// This is the placement the admin CLI reports. It is protoactor's own
// cluster.Rendezvous (used by the disthash identity lookup), so for a
// (kind, identity) request Owner(identity, addresses of the live members
// hosting kind) is the member protoactor activates the identity on. One
// caveat: when two members' scores for a key tie exactly (a 32-bit hash
// collision), protoactor picks the member with the greater member ID, and
// Owner, which sees only addresses, the greater address; Provider.OwnerOf
// has the IDs and agrees in that case too.
//
// Owner is pure and safe for concurrent use. Properties: the result depends
// only on the set of members (not their order); removing a member moves
// only the keys it owned; adding one moves keys only to it.
func Owner(key string, members []string) string {
	ms := make(protocluster.Members, 0, len(members))
	for _, addr := range members {
		m, ok := memberFromAddress(addr)
		if !ok {
			continue
		}
		m.Id = addr
		ms = append(ms, m)
	}
	return ownerOf(ownerKind, key, ms)
}

// ownerOf runs protoactor's Rendezvous over members for (kind, identity).
func ownerOf(kind, identity string, members protocluster.Members) string {
	r := protocluster.NewRendezvous()
	r.UpdateMembers(members)
	return r.GetByClusterIdentity(protocluster.NewClusterIdentity(identity, kind))
}

// memberFromAddress builds a member whose Address() is exactly addr.
func memberFromAddress(addr string) (*protocluster.Member, bool) {
	i := strings.LastIndexByte(addr, ':')
	if i <= 0 {
		return nil, false
	}
	port, err := strconv.ParseInt(addr[i+1:], 10, 32)
	if err != nil || port < 0 || strconv.FormatInt(port, 10) != addr[i+1:] {
		return nil, false
	}
	return &protocluster.Member{Host: addr[:i], Port: int32(port), Kinds: []string{ownerKind}}, true
}
