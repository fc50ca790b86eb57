package cluster

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// TestClusterProtocolRefused: a node speaking another protocol version is
// refused when it joins — its first join ends refused, with a
// *ProtocolError naming both versions, reported once through OnRefused,
// and it stops joining — and the fleet never takes it in; a node of the
// fleet's own version joins as usual.
func TestClusterProtocolRefused(t *testing.T) {
	f := newFleet(t)
	port1 := freePort(t)
	seed := net.JoinHostPort("127.0.0.1", fmt.Sprint(port1))
	cfg1 := testConfig()
	cfg1.BindPort = port1
	n1 := f.start(cfg1)

	reported := make(chan error, 2)
	newer := testConfig(seed)
	newer.Protocol = Protocol + 1
	newer.OnRefused = func(err error) { reported <- err }
	n2 := f.start(newer)
	select {
	case <-n2.provider.FirstJoin():
	case <-time.After(10 * time.Second):
		t.Fatal("the first join of the newer node did not end")
	}
	err := n2.provider.Refused()
	var pe *ProtocolError
	if !errors.Is(err, ErrIncompatible) || !errors.As(err, &pe) || pe.Peer != Protocol || pe.Own != Protocol+1 {
		t.Fatalf("Refused() = %v, want a *ProtocolError of peer %d, own %d", err, Protocol, Protocol+1)
	}
	for _, want := range []string{fmt.Sprintf("speaks protocol version %d", Protocol), fmt.Sprintf("this node speaks %d", Protocol+1)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	select {
	case got := <-reported:
		if got != err {
			t.Errorf("OnRefused got %v, want %v", got, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnRefused was not called")
	}

	n3 := f.start(testConfig(seed))
	waitSizes(t, 2, n1, n3)
	if s := n2.size(); s != 1 {
		t.Errorf("the refused node sees %d members, want itself alone", s)
	}
	if s := n1.size(); s != 2 {
		t.Errorf("the fleet sees %d members, want 2 (the refused node is not one)", s)
	}
	if len(reported) > 0 {
		t.Errorf("OnRefused called more than once: %v", <-reported)
	}
	if n3.provider.Refused() != nil {
		t.Errorf("a node of the fleet's version was refused: %v", n3.provider.Refused())
	}
}

// TestClusterLeftSeedRejoined: a node that left gracefully and came back
// on its gossip address with no seed but itself (a fleet's only seed,
// restarted) is rejoined by its peers' reconnect, so the fleet does not
// stay split in two.
func TestClusterLeftSeedRejoined(t *testing.T) {
	f := newFleet(t)
	port1 := freePort(t)
	seed := net.JoinHostPort("127.0.0.1", fmt.Sprint(port1))
	cfg1 := testConfig()
	cfg1.BindPort = port1
	n1 := f.start(cfg1)
	cfg2 := testConfig(seed)
	cfg2.ReconnectInterval = 100 * time.Millisecond
	n2 := f.start(cfg2)
	waitSizes(t, 2, n1, n2)
	n1.stop(t, true)
	waitSizes(t, 1, n2)
	again := f.start(cfg1)
	waitSizes(t, 2, again, n2)
}
