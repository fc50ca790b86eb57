package cluster

import (
	"log/slog"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// Member statuses reported by Provider.Members.
const (
	StatusAlive   = "alive"   // a live member (memberlist alive or suspect)
	StatusLeaving = "leaving" // shutting down gracefully; no longer placed on
	StatusLeft    = "left"    // left gracefully; kept for Config.DepartedRetention
	StatusDead    = "dead"    // failed; kept for Config.DepartedRetention
)

// MemberInfo describes one node as this node sees it, for the admin CLI.
type MemberInfo struct {
	// ID is the protoactor member ID (the actor system ID); empty if the
	// node's meta could not be decoded.
	ID string
	// Name is the memberlist node name.
	Name string
	// Address is the protoactor remote address, "host:port".
	Address string
	// GossipAddr is the memberlist address, "host:port".
	GossipAddr string
	// Kinds are the cluster kinds the node hosts.
	Kinds []string
	// Status is StatusAlive, StatusLeaving, StatusLeft or StatusDead.
	Status string
	// Client is true for nodes started with StartClient (no kinds; not
	// part of the protoactor topology).
	Client bool
	// Self is true for this node.
	Self bool
	// KeysActive is how many key actors the node has activated, as it
	// last gossiped (within Config.StatsInterval plus gossip time); -1
	// when it does not say (no Config.KeysActive, an older node).
	KeysActive int64
	// Started is when the node started (its Provider); zero when unknown.
	Started time.Time
}

// nodeView is the provider's copy of one memberlist node, taken inside
// memberlist's event callbacks (where reading the *memberlist.Node is safe).
type nodeView struct {
	name       string
	gossipAddr string
	meta       nodeMeta
	metaErr    error
	status     string
	departed   time.Time // when status became left/dead
}

func (p *Provider) pruneDepartedLocked(now time.Time) {
	for name, n := range p.mu.nodes {
		if !n.departed.IsZero() && now.Sub(n.departed) > p.cfg.DepartedRetention {
			delete(p.mu.nodes, name)
		}
	}
}

// GossipAddr returns the memberlist address ("host:port") this node
// advertises: the one to give other nodes as a seed. Empty before start.
func (p *Provider) GossipAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.gossipAddr
}

// Members returns this node's current view of the fleet, sorted by node
// name: live members and clients, plus nodes that left or died within
// Config.DepartedRetention. The slice and its contents are the caller's.
func (p *Provider) Members() []MemberInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pruneDepartedLocked(time.Now())
	out := make([]MemberInfo, 0, len(p.mu.nodes))
	for _, n := range p.mu.nodes {
		out = append(out, n.infoLocked(p.mu.self))
	}
	slices.SortFunc(out, func(a, b MemberInfo) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

func (n *nodeView) infoLocked(self string) MemberInfo {
	mi := MemberInfo{
		Name:       n.name,
		GossipAddr: n.gossipAddr,
		Status:     n.status,
		Self:       n.name == self,
	}
	mi.KeysActive = -1
	if n.metaErr == nil {
		if n.meta.Keys != nil {
			mi.KeysActive = *n.meta.Keys
		}
		if n.meta.Started > 0 {
			mi.Started = time.UnixMilli(n.meta.Started)
		}
		mi.ID = n.meta.ID
		mi.Address = net.JoinHostPort(n.meta.Host, strconv.Itoa(n.meta.Port))
		mi.Kinds = slices.Clone(n.meta.Kinds)
		mi.Client = n.meta.Client
	}
	return mi
}

// recordNode copies n into the provider's view. Called by memberlist with
// its node lock held, so reading n is safe here and only here. n.State is
// not read: memberlist never updates it (nodeState shadows the field).
func (p *Provider) recordNode(n *memberlist.Node, departed bool) {
	v := &nodeView{name: n.Name, gossipAddr: n.Address(), status: StatusAlive}
	v.meta, v.metaErr = decodeMeta(n.Meta)
	switch {
	case departed && v.meta.Leaving:
		v.status = StatusLeft
	case departed:
		v.status = StatusDead
	case v.meta.Leaving:
		v.status = StatusLeaving
	}
	if departed {
		v.departed = time.Now()
	}
	newDead := false
	p.mu.Lock()
	p.mu.nodes[n.Name] = v
	if v.status == StatusDead && v.metaErr == nil && !v.meta.Client && v.meta.ID != p.ownMeta.ID {
		if _, seen := p.mu.deadIDs[v.meta.ID]; !seen {
			p.mu.deadIDs[v.meta.ID] = v.departed
			newDead = true
		}
	}
	p.checkDeclaredDeadLocked()
	p.mu.Unlock()
	if newDead {
		p.logNow().Warn("a peer was declared dead: protoactor blocks its member ID for good", slog.String("node", v.name), slog.String("member", v.meta.ID))
		select {
		case p.metaChanged <- struct{}{}:
		default:
		}
	}
	if v.metaErr != nil && !departed {
		p.logNow().Warn("ignoring node with unreadable meta", slog.String("node", n.Name), slog.Any("error", v.metaErr))
	}
	p.signal()
}
