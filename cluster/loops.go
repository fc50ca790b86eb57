package cluster

import (
	"log/slog"
	"slices"
	"time"

	protocluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/hashicorp/memberlist"

	"github.com/joinery/joinery/internal/backoff"
)

// signal tells the publish goroutine the membership changed. Never blocks.
func (p *Provider) signal() {
	select {
	case p.changed <- struct{}{}:
	default: // a signal is already pending; it will see this change too
	}
}

// publishLoop owns the calls to MemberList.UpdateClusterTopology.
func (p *Provider) publishLoop(c *protocluster.Cluster) {
	defer p.wg.Done()
	filtered := false // the last placement published left suspects out
	for {
		select {
		case <-p.stop:
			return
		case <-p.changed:
			p.publishing.Store(true)
			members := p.topology()
			// Suspects stay in the members protoactor is given: a member it
			// sees leave is blocked for good (see DeadNotice), and a
			// suspicion may be wrong. They leave placement instead.
			c.MemberList.UpdateClusterTopology(members)
			filtered = p.publishPlacement(c, members, filtered)
			p.publishing.Store(false)
			p.publishedOnce.Do(func() { close(p.published) })
		}
	}
}

// publishPlacement takes the suspected members (Suspect) out of placement
// without telling protoactor's MemberList they left: it publishes a
// ClusterTopology event of the members minus the suspects, with the
// suspects as Left, which the identity lookup (placement), the activator
// (it stops local actors whose owner changed) and the PID cache (it drops
// the suspects' PIDs) follow. When the last suspicion ends, it publishes the
// members again. filtered says whether the last event it published left
// suspects out; it returns the new value.
func (p *Provider) publishPlacement(c *protocluster.Cluster, members protocluster.Members, filtered bool) bool {
	now := time.Now()
	p.mu.Lock()
	suspect := map[string]bool{}
	for a, until := range p.mu.suspects {
		if now.Before(until) {
			suspect[a] = true
		} else {
			delete(p.mu.suspects, a)
		}
	}
	p.mu.Unlock()
	blocked := c.GetBlockedMembers()
	var active, left protocluster.Members
	for _, m := range members {
		switch {
		case blocked.Contains(m.Id):
		case suspect[m.Address()]:
			left = append(left, m)
		default:
			active = append(active, m)
		}
	}
	if len(left) == 0 && !filtered {
		return false // nothing suspected before or now: MemberList published it
	}
	c.ActorSystem.EventStream.Publish(&protocluster.ClusterTopology{
		TopologyHash: protocluster.NewMemberSet(active).TopologyHash(),
		Members:      active,
		Left:         left,
	})
	return len(left) > 0
}

// topology returns the protoactor members: alive, decodable, non-client.
func (p *Provider) topology() protocluster.Members {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pruneDepartedLocked(time.Now())
	members := make(protocluster.Members, 0, len(p.mu.nodes))
	for _, n := range p.mu.nodes {
		if n.status != StatusAlive || n.metaErr != nil || n.meta.Client {
			continue
		}
		if _, dead := p.mu.deadIDs[n.meta.ID]; dead {
			continue // blocked by protoactor for good: see DeadNotice
		}
		members = append(members, &protocluster.Member{
			Id:    n.meta.ID,
			Host:  n.meta.Host,
			Port:  int32(n.meta.Port),
			Kinds: slices.Clone(n.meta.Kinds),
		})
	}
	slices.SortFunc(members, func(a, b *protocluster.Member) int {
		if a.Id < b.Id {
			return -1
		}
		if a.Id > b.Id {
			return 1
		}
		return 0
	})
	return members
}

// joinLoop joins the seeds, retrying with exponential backoff until one
// answers or the provider shuts down. A round may block for up to
// memberlist's TCPTimeout per unreachable seed.
func (p *Provider) joinLoop(ml *memberlist.Memberlist, seeds []string) {
	defer p.wg.Done()
	bo := backoff.Backoff{Initial: p.cfg.JoinRetryMin, Max: p.cfg.JoinRetryMax}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-p.stop:
			return
		case <-timer.C:
		}
		n, err := ml.Join(seeds)
		if r := p.Refused(); r != nil {
			p.logNow().Error("the fleet refused this node; not joining", slog.Any("error", r))
			if p.cfg.OnRefused != nil {
				p.cfg.OnRefused(r)
			}
			p.joinTriedOnce.Do(func() { close(p.joinTried) })
			return
		}
		if n > 0 {
			p.joined.Store(true)
			p.joinTriedOnce.Do(func() { close(p.joinTried) })
			p.logNow().Info("joined cluster", slog.Int("contacted", n), slog.Int("attempt", attempt))
			return
		}
		p.joinTriedOnce.Do(func() { close(p.joinTried) })
		p.joinFailures.Add(1)
		p.logNow().Warn("joining seeds failed; will retry",
			slog.Any("seeds", seeds), slog.Int("attempt", attempt), slog.Duration("retry_in", bo.Delay()), slog.Any("error", err))
		timer.Reset(bo.Next())
	}
}

// storeMetaLocked encodes the meta memberlist serves: this node's own,
// the leaving flag and the dead list (newest first, within retention).
// Caller holds metaMu.
func (p *Provider) storeMetaLocked() error {
	m := p.ownMeta
	m.Leaving = p.leaving
	if p.cfg.KeysActive != nil {
		k := p.keysGossiped
		m.Keys = &k
	}
	m.Restarting = p.declaredDead.Load() != nil
	type dead struct {
		id string
		at time.Time
	}
	var ds []dead
	now := time.Now()
	p.mu.Lock()
	for id, at := range p.mu.deadIDs {
		if now.Sub(at) <= p.cfg.DepartedRetention {
			ds = append(ds, dead{id, at})
		}
	}
	p.mu.Unlock()
	slices.SortFunc(ds, func(a, b dead) int { return b.at.Compare(a.at) })
	for _, d := range ds {
		m.Dead = append(m.Dead, d.id)
	}
	b, err := encodeMeta(m)
	if err != nil {
		return err
	}
	p.meta.Store(&b)
	return nil
}

// metaLoop regossips this node's meta whenever its dead list changes, once
// per DepartedRetention so expired entries drop out, and when its key actor
// count (Config.KeysActive, asked every StatsInterval) changed.
func (p *Provider) metaLoop(ml *memberlist.Memberlist) {
	defer p.wg.Done()
	ticker := time.NewTicker(p.cfg.DepartedRetention)
	defer ticker.Stop()
	stats := time.NewTicker(p.cfg.StatsInterval)
	defer stats.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.metaChanged:
		case <-ticker.C:
		case <-stats.C:
			if p.cfg.KeysActive == nil {
				continue
			}
			k := p.cfg.KeysActive()
			p.metaMu.Lock()
			same := k == p.keysGossiped
			p.keysGossiped = k
			p.metaMu.Unlock()
			if same {
				continue
			}
		}
		p.metaMu.Lock()
		err := p.storeMetaLocked()
		p.metaMu.Unlock()
		if err != nil {
			p.logNow().Warn("updating node meta", slog.Any("error", err))
			continue
		}
		// Waits for the broadcast to go out at most a second; peers that
		// miss it get the meta with the next push/pull sync.
		if err := ml.UpdateNode(time.Second); err != nil {
			p.logNow().Debug("gossiping node meta", slog.Any("error", err))
		}
	}
}

// reconnectLoop rejoins, every Config.ReconnectInterval, the gossip
// addresses of members this node saw die or leave. memberlist itself never
// contacts a departed node again (it probes and syncs with live ones only),
// so a node cut off by a partition, or paused past failure detection, would
// otherwise stay split from the fleet after the fault ends; and a node that
// left and came back on its address with no other seed than itself (the
// chart's first pod in a rolling restart, when it is the only seed) would
// stay a fleet of its own. A rejoin that reaches the node merges both
// views; a departed node stays unreachable and costs one failed dial per
// round until DepartedRetention forgets it.
func (p *Provider) reconnectLoop(ml *memberlist.Memberlist) {
	defer p.wg.Done()
	ticker := time.NewTicker(p.cfg.ReconnectInterval)
	defer ticker.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-ticker.C:
		}
		var addrs []string
		p.mu.Lock()
		p.checkDeclaredDeadLocked() // also without a membership event: a verdict dropped on a view in flux is looked at again
		p.pruneDepartedLocked(time.Now())
		for _, n := range p.mu.nodes {
			if (n.status == StatusDead || n.status == StatusLeft) && n.gossipAddr != "" {
				addrs = append(addrs, n.gossipAddr)
			}
		}
		p.mu.Unlock()
		if len(addrs) == 0 {
			continue
		}
		if n, _ := ml.Join(addrs); n > 0 {
			p.reconnects.Add(1)
			p.logNow().Warn("reached members that had died or left; merging views", slog.Any("addresses", addrs), slog.Int("reached", n))
		}
		// While members are dead in this view, also pull every live
		// peer's full state: a member this node declared dead refutes
		// when a peer reaches it, but its refutation (a higher
		// incarnation) reaches this node only by gossip or a push/pull —
		// and memberlist gossips to the dead for GossipToTheDeadTime only
		// and pushes/pulls with one random peer every PushPullInterval.
		// Seen after two of five were cut off: a cut-off node that had
		// declared a majority node dead kept it dead for over 45 s, so it
		// never saw that node's dead list and never learned that it must
		// restart.
		p.mu.Lock()
		live := p.liveGossipAddrsLocked()
		p.mu.Unlock()
		if len(live) > 0 {
			_, _ = ml.Join(live)
		}
	}
}

// logNow returns the logger resolved at start (a discarding one before).
func (p *Provider) logNow() *slog.Logger {
	if l := p.log.Load(); l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
