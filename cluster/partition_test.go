package cluster

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/joinery/joinery/internal/testutil"
)

// cutLab cuts one node's gossip off from the others and heals it again: every
// node's memberlist transport is wrapped so that packets and dials between
// the isolated address and any other are dropped. memberlist and its UDP/TCP
// transport are real; only the delivery between them is decided here.
type cutLab struct {
	mu       sync.Mutex
	isolated string // gossip address cut off from the rest; "" when healed
}

func (l *cutLab) isolate(addr string) { l.mu.Lock(); l.isolated = addr; l.mu.Unlock() }
func (l *cutLab) heal()               { l.isolate("") }

func (l *cutLab) cut(from, to string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.isolated != "" && (from == l.isolated) != (to == l.isolated)
}

// config is testConfig on a fixed port whose transport goes through the lab.
// Dead nodes are gossiped to for only 300 ms, so gossip alone cannot heal a
// longer partition: the Provider's reconnect has to.
func (l *cutLab) config(t *testing.T, seeds ...string) Config {
	c := testConfig(seeds...)
	c.BindPort = freePort(t)
	c.ReconnectInterval = 300 * time.Millisecond
	self := net.JoinHostPort(c.BindAddr, fmt.Sprint(c.BindPort))
	c.tune = func(mc *memberlist.Config) error {
		mc.GossipToTheDeadTime = 300 * time.Millisecond
		nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
			BindAddrs: []string{mc.BindAddr}, BindPort: mc.BindPort, Logger: mc.Logger,
		})
		if err != nil {
			return err
		}
		mc.Transport = cutTransport{Transport: nt, lab: l, self: self}
		return nil
	}
	return c
}

type cutTransport struct {
	memberlist.Transport
	lab  *cutLab
	self string
}

func (c cutTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if c.lab.cut(c.self, addr) {
		return time.Now(), nil // lost on the way, as UDP may be
	}
	return c.Transport.WriteTo(b, addr)
}

func (c cutTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if c.lab.cut(c.self, addr) {
		time.Sleep(min(timeout, 50*time.Millisecond))
		return nil, errors.New("cut by the test: no route to host")
	}
	return c.Transport.DialTimeout(addr, timeout)
}

func selfName(n *testNode) string {
	for _, m := range n.provider.Members() {
		if m.Self {
			return m.Name
		}
	}
	return ""
}

func statusOf(n *testNode, gossipAddr string) string {
	for _, m := range n.provider.Members() {
		if m.GossipAddr == gossipAddr {
			return m.Status
		}
	}
	return ""
}

// TestClusterDeclaredDeadAfterPartition cuts n2 off, lets both sides declare
// each other dead, heals, and checks that the Provider's reconnect merges the
// views again (memberlist alone never contacts a dead node) and that n2
// learns it was declared dead: DeclaredDead is what makes its /healthz fail,
// so its supervisor restarts it under a new member ID — the only way back
// into protoactor's placement, which blocks a dead member's ID for good.
func TestClusterDeclaredDeadAfterPartition(t *testing.T) {
	lab := &cutLab{}
	f := newFleet(t)
	n1 := f.start(lab.config(t))
	seed := n1.provider.GossipAddr()
	rest := f.startAll(lab.config(t, seed), lab.config(t, seed))
	n2, n3 := rest[0], rest[1]
	waitSizes(t, 3, n1, n2, n3)
	if d := n2.provider.DeclaredDead(); d != nil {
		t.Fatalf("n2 declared dead before any fault: %v", d)
	}

	a1, a2, a3 := n1.provider.GossipAddr(), n2.provider.GossipAddr(), n3.provider.GossipAddr()
	lab.isolate(a2)
	testutil.WaitUntil(t, 20*time.Second, "n1 and n3 to see n2 dead, and n2 to see them dead", func() bool {
		return statusOf(n1, a2) == StatusDead && statusOf(n3, a2) == StatusDead &&
			statusOf(n2, a1) == StatusDead && statusOf(n2, a3) == StatusDead
	})
	waitSizes(t, 2, n1, n3)
	time.Sleep(time.Second) // past GossipToTheDeadTime (300 ms): gossip alone no longer reaches n2
	lab.heal()

	testutil.WaitUntil(t, 20*time.Second, "n2 to learn it was declared dead", func() bool { return n2.provider.DeclaredDead() != nil })
	d := n2.provider.DeclaredDead()
	t.Logf("n2: %v", d)
	for _, by := range d.By {
		if by != selfName(n1) && by != selfName(n3) {
			t.Errorf("declared dead by %q, want n1 and/or n3", d.By)
		}
	}
	testutil.WaitUntil(t, 20*time.Second, "the views to merge (every node sees all three alive)", func() bool {
		for _, n := range []*testNode{n1, n2, n3} {
			for _, a := range []string{a1, a2, a3} {
				if statusOf(n, a) != StatusAlive {
					return false
				}
			}
		}
		return true
	})
	if n1.provider.reconnects.Load()+n2.provider.reconnects.Load()+n3.provider.reconnects.Load() == 0 {
		t.Errorf("the views merged without a reconnect round")
	}
	// n2 declared n1 and n3 dead too, and gossips that: but they are the
	// majority, so neither concludes it is the one out.
	testutil.WaitUntil(t, 10*time.Second, "n2's meta to list n1 and n3 as dead in n1's view", func() bool {
		n1.provider.mu.Lock()
		defer n1.provider.mu.Unlock()
		for _, n := range n1.provider.mu.nodes {
			if n.gossipAddr == a2 {
				return len(n.meta.Dead) >= 2
			}
		}
		return false
	})
	for i, n := range []*testNode{n1, n3} {
		if d := n.provider.DeclaredDead(); d != nil {
			t.Errorf("majority node n%d reports itself declared dead: %v", 2*i+1, d)
		}
	}
	// n1's topology agrees with protoactor's block list: n2 is not in it.
	for _, m := range n1.provider.topology() {
		if m.Id == n2.system.ID {
			t.Fatalf("n1's topology lists n2 (%s), whose member ID n1 declared dead", m.Address())
		}
	}
	if !fullStack {
		return
	}
	// What DeclaredDead warns of: memberlist lists n2 alive again, but n1's
	// protoactor has blocked n2's member ID, so nothing is placed on it.
	for i := range 100 {
		if got := request(t, n1, fmt.Sprintf("user-%d", i)); got == n2.addr() {
			t.Fatalf("n1 placed user-%d on n2 after n2 was declared dead: protoactor no longer blocks it — DeadNotice's advice is out of date", i)
		}
	}
}
