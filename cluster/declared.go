package cluster

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// DeadNotice says that this node must restart to rejoin placement: its
// view of the fleet and its live peers' views conflict for good. A long
// pause (GC, VM stall, SIGSTOP) or a partition made peers fail it, or made
// it fail them. memberlist lets a failed node refute and lists it alive
// again, but protoactor on every node that saw a member die has blocked that
// member's ID for good and never places a key on it again. Only a restart (a
// new member ID, a fresh blocklist) ends the conflict; until then the stale
// key activations of a node its peers blocked are harmless, because their
// state writes are fenced.
//
// Which nodes restart is decided by restartSet, the same way on every node
// from the dead lists the live nodes gossip: as few as end every conflict,
// preferring the nodes that were declared dead. So after a partition heals
// only the cut-off side reports it; the majority, which the cut-off side may
// also have declared dead, does not.
type DeadNotice struct {
	By      []string  // memberlist names of the live peers that declared this node dead
	Blocked []string  // memberlist names of live peers this node declared dead (and blocks)
	At      time.Time // when this node learned it
}

func (d DeadNotice) Error() string {
	var what string
	switch {
	case len(d.By) > 0:
		what = "declared dead by " + strings.Join(d.By, ", ")
	default:
		what = "this node declared its live peers " + strings.Join(d.Blocked, ", ") + " dead"
	}
	return fmt.Sprintf("%s (learned %s): peers no longer place keys on this node, or it no longer places keys on them; restart it to rejoin placement",
		what, d.At.UTC().Format(time.RFC3339))
}

// DeclaredDead returns the notice that this node must restart because its
// view and its live peers' views conflict (see DeadNotice), or nil. Once
// set it stays set until the process restarts.
func (p *Provider) DeclaredDead() *DeadNotice { return p.declaredDead.Load() }

// restartSet picks the live nodes that must restart so that no live node
// blocks another. nodes are the live nodes' names; declared maps a node to
// the live nodes it declared dead (from its gossiped dead list). A restart
// ends every conflict the node is in (it gets a new member ID and an empty
// blocklist), so the set is a cover of the "declared dead" edges, built
// greedily: the node in the most remaining conflicts first; among those,
// the one declared dead by the most; then the highest name (so on an even
// split the side holding the lowest name stays). A partition's cut-off side
// is in the most conflicts and goes; the majority stays, whichever way the
// declarations went. Every node runs this on the same gossip and so reaches
// the same set.
func restartSet(nodes []string, declared map[string][]string) []string {
	type edge struct{ from, to string }
	edges := map[edge]bool{}
	for from, tos := range declared {
		for _, to := range tos {
			if from != to && slices.Contains(nodes, from) && slices.Contains(nodes, to) {
				edges[edge{from, to}] = true
			}
		}
	}
	var out []string
	for len(edges) > 0 {
		deg, in := map[string]int{}, map[string]int{}
		for e := range edges {
			deg[e.from]++
			deg[e.to]++
			in[e.to]++
		}
		best := ""
		for n := range deg {
			if best == "" || deg[n] > deg[best] ||
				deg[n] == deg[best] && (in[n] > in[best] || in[n] == in[best] && n > best) {
				best = n
			}
		}
		out = append(out, best)
		for e := range edges {
			if e.from == best || e.to == best {
				delete(edges, e)
			}
		}
	}
	slices.Sort(out)
	return out
}

// trustDeclarations keeps a "declared dead" edge into a node only when a
// strict majority of that node's live peers declared it dead. A minority
// declaration — one rogue or confused member gossiping a dead list, a peer
// that alone lost sight of the node — does not make the named node
// restart: the edge is turned round, so the declarer is the one restarted
// (its restart ends the conflict as well: it gets a fresh blocklist). A
// real partition's cut-off side is declared dead by the whole majority,
// and what it declared of the majority is a minority's word; so the
// outcome there is the one restartSet alone gives. Every node applies this
// to the same gossip and so reaches the same graph.
//
// On an encrypted fleet only holders of the gossip key are members at all
// (memberlist drops every packet it cannot decrypt, GossipVerifyIncoming),
// so every dead list counted here came through the encrypted gossip; on a
// plain fleet (loopback, or insecure: true) this rule is what keeps one
// member that lies from restarting others.
func trustDeclarations(nodes []string, declared map[string][]string) map[string][]string {
	by := map[string]map[string]bool{} // target -> its live declarers
	for from, tos := range declared {
		for _, to := range tos {
			if from == to || !slices.Contains(nodes, from) || !slices.Contains(nodes, to) {
				continue
			}
			if by[to] == nil {
				by[to] = map[string]bool{}
			}
			by[to][from] = true
		}
	}
	peers := len(nodes) - 1
	out := map[string][]string{}
	for to, froms := range by {
		for from := range froms {
			if 2*len(froms) > peers {
				out[from] = append(out[from], to)
			} else {
				out[to] = append(out[to], from)
			}
		}
	}
	for n := range out {
		slices.Sort(out[n])
		out[n] = slices.Compact(out[n])
	}
	return out
}

// checkDeclaredDeadLocked applies restartSet to the current view, after
// trustDeclarations, and when this node is in it starts confirmRestart: the
// notice is set only if the verdict still holds once the views are synced.
func (p *Provider) checkDeclaredDeadLocked() {
	if p.declaredDead.Load() != nil || p.ownMeta.ID == "" || p.mu.confirming || p.mu.state != stateRunning {
		return
	}
	v := p.restartVerdictLocked()
	if !v.restart {
		return
	}
	addrs := p.liveGossipAddrsLocked()
	wait := p.cfg.RestartConfirm
	if !v.majority {
		wait = p.cfg.MinorityConfirm
	}
	p.mu.confirming = true
	p.wg.Add(1) // under p.mu with the state running: see start
	go p.confirmRestart(p.mu.ml, addrs, wait, v.majority)
}

// confirmRestart settles a restart verdict before it becomes the
// DeadNotice, which is for good. A verdict is taken on one node's view at
// one moment, and while a partition heals that view is in flux: a peer's
// meta update (its new dead list) is a UDP broadcast a loaded node may have
// dropped, the healed side's gossip arrives in pieces, and the cut-off
// side's own late declarations (its dead list, memberlist's dead messages)
// reach the majority. On such a view a majority node can find itself in
// restartSet, restart for nothing and fail its /healthz. So it first pulls
// every live peer's full state (memberlist's push/pull, over TCP, which
// Join does with each address), waits, and decides again; only a verdict
// that still holds sets the notice. Later membership events check again.
//
// How long it waits depends on the evidence. A node that a strict majority
// of its live peers declared dead (the cut-off side of a partition, a
// paused node) has positive evidence, which a stale view can only lack:
// it waits Config.RestartConfirm. A node in restartSet without that — only
// a minority declared it dead, or it alone declared live peers dead — may
// be looking at a view in flux, so the verdict must hold for
// Config.MinorityConfirm, long enough for gossip to converge, and still be
// minority-only then: a minority's declarations never make a majority node
// unhealthy quickly, and only a conflict that stays does so at all.
func (p *Provider) confirmRestart(ml *memberlist.Memberlist, addrs []string, wait time.Duration, majority bool) {
	defer p.wg.Done()
	sync := func() {
		if ml != nil && len(addrs) > 0 {
			_, _ = ml.Join(addrs) // a push/pull with each; an unreachable peer is not an error here
		}
	}
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-p.stop:
			return false
		case <-t.C:
			return true
		}
	}
	sync()
	if !majority {
		// The verdict must hold for wait (MinorityConfirm), looked at
		// every RestartConfirm: one that goes ends the wait, one that
		// gains a strict majority takes the majority's path (the cut-off
		// node's own view is in flux too while the partition heals).
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
			if !sleep(p.cfg.RestartConfirm) {
				return
			}
			p.mu.Lock()
			v := p.restartVerdictLocked()
			if !v.restart {
				p.mu.confirming = false
				p.mu.Unlock()
				p.logNow().Info("a restart verdict no majority stood behind went while it was confirmed; staying in placement")
				return
			}
			p.mu.Unlock()
			if v.majority {
				majority = true
				break
			}
		}
		// Sync once more, then give the broadcasts in flight
		// RestartConfirm, as a majority verdict.
		p.mu.Lock()
		addrs = p.liveGossipAddrsLocked()
		p.mu.Unlock()
		sync()
	}
	if !sleep(p.cfg.RestartConfirm) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.confirming = false
	if p.declaredDead.Load() != nil || p.mu.state != stateRunning {
		return
	}
	v := p.restartVerdictLocked()
	if !v.restart || v.majority != majority && !v.majority {
		// The verdict went, or it was a majority's and now rests on a
		// minority only: that one has to hold for MinorityConfirm first.
		p.logNow().Info("a restart verdict did not hold once the views were synced; staying in placement",
			slog.Duration("confirm", wait), slog.Bool("declared_by_majority", v.majority))
		if v.restart {
			p.checkDeclaredDeadLocked()
		}
		return
	}
	d := &DeadNotice{By: v.by, Blocked: v.blocked, At: time.Now()}
	if p.declaredDead.CompareAndSwap(nil, d) {
		select { // gossip meta.Restarting
		case p.metaChanged <- struct{}{}:
		default:
		}
		if p.cfg.OnDeclaredDead != nil {
			p.cfg.OnDeclaredDead(*d)
		}
		p.logNow().Error("this node must restart: it was declared dead by its live peers, or declared them dead, and protoactor blocks those member IDs for good (its /healthz fails from now on)",
			slog.Any("declared_dead_by", d.By), slog.Any("declared_dead_here", d.Blocked), slog.Bool("declared_by_majority", v.majority),
			slog.Any("live", v.nodes), slog.Any("dead_lists", v.declared))
	}
}

// liveGossipAddrsLocked lists the gossip addresses of the live peers.
func (p *Provider) liveGossipAddrsLocked() []string {
	var addrs []string
	for _, n := range p.mu.nodes {
		if n.status == StatusAlive && n.name != p.mu.self && n.gossipAddr != "" {
			addrs = append(addrs, n.gossipAddr)
		}
	}
	return addrs
}

// restartVerdict is restartVerdictLocked's answer: whether this node is in
// restartSet, the live peers that declared it dead (by) and those it
// declared dead (blocked), and whether by is a strict majority of its live
// peers (see confirmRestart).
type restartVerdict struct {
	restart, majority bool
	by, blocked       []string
	nodes             []string            // the live nodes, this one first, for the log
	declared          map[string][]string // their dead lists by name, for the log
}

// restartVerdictLocked says whether this node is in restartSet on the
// current view (after trustDeclarations), with the live peers that
// declared it dead and those it declared dead.
func (p *Provider) restartVerdictLocked() restartVerdict {
	names := map[string]string{p.ownMeta.ID: p.mu.self} // member ID -> name, live nodes
	var live, left, dead []*nodeView
	for _, n := range p.mu.nodes {
		if n.metaErr != nil || n.meta.Client || n.meta.ID == p.ownMeta.ID {
			continue
		}
		switch {
		case n.status == StatusLeft:
			left = append(left, n)
		case n.status == StatusDead:
			dead = append(dead, n)
		case n.status != StatusAlive || n.meta.Restarting:
			// a restarting node is on its way out: its conflicts end with its restart
		default:
			names[n.meta.ID] = n.name
			live = append(live, n)
		}
	}
	nodes := []string{p.mu.self} // the live nodes, which can restart
	declared := map[string][]string{}
	var v restartVerdict
	declare := func(n *nodeView) {
		for _, id := range n.meta.Dead {
			if name, ok := names[id]; ok {
				declared[n.name] = append(declared[n.name], name)
				if name == p.mu.self {
					v.by = append(v.by, n.name)
				}
			}
		}
	}
	for _, n := range live {
		nodes = append(nodes, n.name)
		declare(n)
		if _, ok := p.mu.deadIDs[n.meta.ID]; ok {
			declared[p.mu.self] = append(declared[p.mu.self], n.name)
			v.blocked = append(v.blocked, n.name)
		}
	}
	// A node that left gracefully (within DepartedRetention) still votes:
	// its dead list is what it saw while it ran. Without its word, a fleet
	// whose ingesting node finished after a partition (3 against 2 of 5)
	// looks like an even split on the healed view. It blocks nobody any
	// more, so it is not a node of restartSet.
	voters := slices.Clone(nodes)
	for _, n := range left {
		voters = append(voters, n.name)
		declare(n)
	}
	for _, n := range dead {
		if by := inferredVote(n.meta.ID, p.mu.self, p.mu.deadIDs, live); by != nil {
			voters = append(voters, n.name)
			declared[n.name] = by
			if slices.Contains(by, p.mu.self) {
				v.by = append(v.by, n.name)
			}
		}
	}
	if len(v.by) == 0 && len(v.blocked) == 0 || !slices.Contains(restartSet(nodes, trustDeclarations(voters, declared)), p.mu.self) {
		return restartVerdict{}
	}
	slices.Sort(v.by)
	slices.Sort(v.blocked)
	v.nodes, v.declared = voters, declared
	v.restart = true
	v.majority = 2*len(v.by) > len(voters)-1
	return v
}

// inferredVote is the vote of a member this node holds dead, when its own
// word cannot reach this node: the live nodes that declared it dead, or nil
// when all of them did (it failed: no vote) or none did.
//
// The case it is for: a partition cuts two of five off, and the ingesting
// node finishes and leaves before the heal. The majority saw it leave, so
// it votes there with the dead list it gossiped (see restartVerdictLocked).
// The cut-off pair had declared it dead before it left, and memberlist
// ignores news of a member it holds dead — its leave, its last meta — so
// on the pair's healed view the four live nodes are an even split, whose
// tie-break restarts the majority's side while the majority restarts the
// pair: the views disagree and no one restarts (seen in
// TestChaosPartitionTwoOfFive, n2 healthy 45 s after the heal). A
// partition's declarations are mutual, so a member that only some live
// nodes declared dead stood on the other side from them: it declared them
// dead, which is the vote it cast on the majority's view.
func inferredVote(id, self string, deadHere map[string]time.Time, live []*nodeView) []string {
	var by []string
	if _, ok := deadHere[id]; ok {
		by = append(by, self)
	}
	for _, n := range live {
		if slices.Contains(n.meta.Dead, id) {
			by = append(by, n.name)
		}
	}
	if len(by) == 0 || len(by) == len(live)+1 {
		return nil
	}
	return by
}
