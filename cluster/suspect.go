package cluster

import (
	"slices"
	"time"
)

// Suspect takes the member at the protoactor address addr ("host:port") out
// of placement for d, ahead of memberlist's failure detection: the caller
// saw this node's remoting connection to it break (the peer's socket
// closed, as a kill -9 does at once), so keys it owned are placed on the
// other members now rather than after memberlist's suspicion timeout.
// memberlist stays the arbiter: after d the member is placed on again if it
// is still alive, and a member silent but connected (a partition) is
// handled by memberlist alone. A wrongly suspected member is harmless: a
// key activated elsewhere takes a newer owner epoch, which fences the old
// activation's writes. Unsuspect ends a suspicion early (the connection is
// back). The own address is never suspected.
func (p *Provider) Suspect(addr string, d time.Duration) {
	p.mu.Lock()
	if p.mu.suspects == nil {
		p.mu.suspects = map[string]time.Time{}
	}
	self := p.selfAddrLocked()
	if addr == "" || addr == self {
		p.mu.Unlock()
		return
	}
	until := time.Now().Add(d)
	prev, had := p.mu.suspects[addr]
	p.mu.suspects[addr] = until
	p.mu.Unlock()
	time.AfterFunc(d, p.signal) // place on it again once the suspicion ends
	if !had || time.Now().After(prev) {
		p.signal()
	}
}

// Unsuspect ends a suspicion of addr (see Suspect).
func (p *Provider) Unsuspect(addr string) {
	p.mu.Lock()
	_, had := p.mu.suspects[addr]
	delete(p.mu.suspects, addr)
	p.mu.Unlock()
	if had {
		p.signal()
	}
}

// IsSuspect reports whether addr is suspected now (see Suspect).
func (p *Provider) IsSuspect(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	until, ok := p.mu.suspects[addr]
	return ok && time.Now().Before(until)
}

// Suspects are the addresses currently suspected, sorted.
func (p *Provider) Suspects() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	var out []string
	for a, until := range p.mu.suspects {
		if now.Before(until) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}
