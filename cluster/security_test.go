package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/joinery/joinery/internal/testutil"
)

// rogue is a bare memberlist instance, not a Provider: what an outsider
// writes in forty lines to join a fleet. It advertises the fleet's kind
// and gossips the dead list it is given.
type rogue struct {
	ml   *memberlist.Memberlist
	meta []byte
}

func (r *rogue) NodeMeta(int) []byte                  { return r.meta }
func (*rogue) NotifyMsg([]byte)                       {}
func (*rogue) GetBroadcasts(int, int) [][]byte        { return nil }
func (*rogue) LocalState(bool) []byte                 { return nil }
func (*rogue) MergeRemoteState(buf []byte, join bool) {}

// startRogue starts a rogue memberlist on loopback, encrypting with key
// when it is set, and gossiping a meta that names dead as dead.
func startRogue(t *testing.T, key []byte, dead ...string) *rogue {
	t.Helper()
	r := &rogue{}
	var err error
	r.meta, err = json.Marshal(nodeMeta{V: metaVersion, ID: "rogue-id", Host: "127.0.0.1", Port: 1, Kinds: []string{echoKind}, Dead: dead, Proto: Protocol})
	if err != nil {
		t.Fatal(err)
	}
	mc := memberlist.DefaultLocalConfig()
	mc.Name = "rogue"
	mc.BindAddr = "127.0.0.1"
	mc.BindPort = 0
	mc.SecretKey = key
	mc.Delegate = r
	mc.LogOutput = discard{}
	mc.ProbeInterval, mc.ProbeTimeout, mc.GossipInterval = 200*time.Millisecond, 100*time.Millisecond, 20*time.Millisecond
	if r.ml, err = memberlist.Create(mc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.ml.Shutdown() })
	return r
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

func listed(n *testNode, name string) bool {
	return slices.ContainsFunc(n.provider.Members(), func(m MemberInfo) bool { return m.Name == name })
}

// TestRogueCannotJoinEncryptedFleet: a memberlist member without the
// fleet's key — in the clear, or with another key — never joins, is never
// listed and is never placed on.
func TestRogueCannotJoinEncryptedFleet(t *testing.T) {
	f := newFleet(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	secure := func(seeds ...string) Config { c := testConfig(seeds...); c.SecretKey = key; return c }
	a := f.start(secure())
	b := f.start(secure(a.provider.GossipAddr()))
	waitSizes(t, 2, a, b)
	if !a.provider.Encrypted() {
		t.Fatal("a fleet started with a secret key reports its gossip unencrypted")
	}
	for _, rk := range []struct {
		name string
		key  []byte
	}{{"in the clear", nil}, {"another key", []byte("fedcba9876543210")}} {
		t.Run(rk.name, func(t *testing.T) {
			r := startRogue(t, rk.key, a.system.ID)
			if n, err := r.ml.Join([]string{a.provider.GossipAddr()}); err == nil || n > 0 {
				t.Fatalf("rogue joined the encrypted fleet (contacted %d, err %v)", n, err)
			}
			time.Sleep(500 * time.Millisecond) // a few gossip and probe rounds
			for _, n := range []*testNode{a, b} {
				if listed(n, "rogue") {
					t.Errorf("a fleet node lists the rogue: %+v", n.provider.Members())
				}
				if s := n.size(); s != 2 {
					t.Errorf("a fleet node's topology has %d members, want 2", s)
				}
				if d := n.provider.DeclaredDead(); d != nil {
					t.Errorf("a fleet node declared dead: %v", d)
				}
			}
		})
	}
}

// TestForgedDeadListChangesNoHealth: on a plain loopback fleet (nothing to
// verify against), a rogue that joins and gossips a dead list naming a
// real node is one declarer among three live peers of that node: a minority, so the
// named node does not report DeclaredDead (its /healthz stays 200). The
// old rule restarted whoever a single peer declared dead.
func TestForgedDeadListChangesNoHealth(t *testing.T) {
	f := newFleet(t)
	n1 := f.start(testConfig())
	seed := n1.provider.GossipAddr()
	rest := f.startAll(testConfig(seed), testConfig(seed))
	n2, n3 := rest[0], rest[1]
	waitSizes(t, 3, n1, n2, n3)
	r := startRogue(t, nil, n1.system.ID)
	if _, err := r.ml.Join([]string{seed}); err != nil {
		t.Fatalf("rogue could not join the plain fleet (the test needs it in): %v", err)
	}
	testutil.WaitUntil(t, 10*time.Second, "every node to list the rogue with its dead list", func() bool {
		return listed(n1, "rogue") && listed(n2, "rogue") && listed(n3, "rogue")
	})
	time.Sleep(time.Second) // let every node re-evaluate
	for i, n := range []*testNode{n1, n2, n3} {
		if d := n.provider.DeclaredDead(); d != nil {
			t.Errorf("n%d reports DeclaredDead after one rogue's forged dead list: %v", i+1, d)
		}
	}
}

// TestTrustDeclarations: a minority's declaration restarts the declarer,
// never the declared node; a majority's keeps restartSet's verdict.
func TestTrustDeclarations(t *testing.T) {
	tests := []struct {
		name  string
		nodes []string
		lists []string
		want  []string
	}{
		{"rogue names one node", []string{"n1", "n2", "n3", "rogue"}, []string{"rogue>n1"}, []string{"rogue"}},
		{"rogue names every node", []string{"n1", "n2", "n3", "rogue"}, []string{"rogue>n1", "rogue>n2", "rogue>n3"}, []string{"rogue"}},
		{"rogue in a two-node fleet is half: no majority", []string{"n1", "n2", "rogue"}, []string{"rogue>n1"}, []string{"rogue"}},
		{"partition: majority declared the cut-off node", []string{"n1", "n2", "n3"}, []string{"n1>n2", "n3>n2", "n2>n1", "n2>n3"}, []string{"n2"}},
		{"four nodes, the cut-off one declared by all", []string{"n1", "n2", "n3", "n4"}, []string{"n1>n2", "n3>n2", "n4>n2", "n2>n1", "n2>n3", "n2>n4"}, []string{"n2"}},
		{"even split declared each other dead", []string{"n1", "n2", "n3", "n4"}, []string{"n1>n3", "n1>n4", "n2>n3", "n2>n4", "n3>n1", "n3>n2", "n4>n1", "n4>n2"}, []string{"n3", "n4"}},
		{"two nodes: the one peer is the majority", []string{"n2", "n3"}, []string{"n3>n2"}, []string{"n2"}},
		{"one peer alone lost sight of a node: the peer restarts", []string{"n1", "n2", "n3"}, []string{"n3>n2"}, []string{"n3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			declared := map[string][]string{}
			for _, l := range tt.lists {
				a, b, _ := strings.Cut(l, ">")
				declared[a] = append(declared[a], b)
			}
			got := restartSet(tt.nodes, trustDeclarations(tt.nodes, declared))
			if !slices.Equal(got, tt.want) {
				t.Errorf("restart %v, want %v", got, tt.want)
			}
			for a, bs := range declared { // every conflict still ends
				for _, b := range bs {
					if !slices.Contains(got, a) && !slices.Contains(got, b) {
						t.Errorf("%s declared %s dead and neither restarts", a, b)
					}
				}
			}
		})
	}
}

// TestGossipKeyRotation rotates a running fleet's gossip key through the
// keyring (install everywhere, use everywhere, remove the old everywhere)
// and checks that the fleet stays whole, that only the new key admits a
// node afterwards, and that the keys are listed by fingerprint.
func TestGossipKeyRotation(t *testing.T) {
	f := newFleet(t)
	oldKey := []byte("0123456789abcdef0123456789abcdef")
	newKey := []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZ012345")
	withKey := func(key []byte, seeds ...string) Config { c := testConfig(seeds...); c.SecretKey = key; return c }
	n1 := f.start(withKey(oldKey))
	seed := n1.provider.GossipAddr()
	rest := f.startAll(withKey(oldKey, seed), withKey(oldKey, seed))
	fleet := []*testNode{n1, rest[0], rest[1]}
	waitSizes(t, 3, fleet...)

	for _, step := range []string{KeyInstall, KeyUse, KeyRemove} {
		key := newKey
		if step == KeyRemove {
			key = oldKey
		}
		for _, n := range fleet {
			if err := n.provider.ChangeGossipKey(step, key); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
		}
		time.Sleep(500 * time.Millisecond) // probes and gossip under the new keyring
		for i, n := range fleet {
			if s := n.size(); s != 3 {
				t.Fatalf("after %s, n%d sees %d members", step, i+1, s)
			}
		}
	}
	keys, err := n1.provider.GossipKeys()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || !keys[0].Primary || keys[0].Fingerprint != KeyFingerprint(newKey) || keys[0].Bits != 256 {
		t.Errorf("keys after rotation %+v, want only the new key, primary", keys)
	}
	for i, n := range fleet {
		for _, m := range n.provider.Members() {
			if m.Status != StatusAlive {
				t.Errorf("n%d sees %s %s after the rotation", i+1, m.Name, m.Status)
			}
		}
	}
	stale := f.start(withKey(oldKey, seed))
	fresh := f.start(withKey(newKey, seed))
	waitSizes(t, 4, append(fleet, fresh)...)
	testutil.WaitUntil(t, 10*time.Second, "the old-key node to fail joining", func() bool { return stale.provider.joinFailures.Load() >= 2 })
	if s := stale.size(); s != 1 {
		t.Errorf("a node with the removed key sees %d members", s)
	}

	// Refused operations are typed errors and change nothing.
	other := []byte("fedcba9876543210")
	for _, bad := range []struct {
		op  string
		key []byte
	}{{KeyUse, other}, {KeyRemove, newKey}, {KeyRemove, other}, {"rotate", newKey}, {KeyInstall, []byte("short")}} {
		err := n1.provider.ChangeGossipKey(bad.op, bad.key)
		var ke *KeyError
		if !errors.As(err, &ke) {
			t.Errorf("%s %q: err %v, want a *KeyError", bad.op, bad.key, err)
		}
	}
	if keys2, _ := n1.provider.GossipKeys(); !slices.Equal(keys, keys2) {
		t.Errorf("a refused operation changed the keys: %+v", keys2)
	}
	plain := f.startMode(testConfig(), false, false)
	if err := plain.provider.ChangeGossipKey(KeyInstall, newKey); !errors.Is(err, ErrNoEncryption) {
		t.Errorf("key change on a plain node: %v, want ErrNoEncryption", err)
	}
}

// TestExposedBindRefused: gossip off loopback needs a secret key, remoting
// off loopback needs TLS, unless insecure says so; loopback needs neither.
func TestExposedBindRefused(t *testing.T) {
	tests := []struct {
		addr     string
		key      []byte
		insecure bool
		refused  bool
	}{
		{"127.0.0.1", nil, false, false},
		{"", nil, false, false},
		{"::1", nil, false, false},
		{"0.0.0.0", nil, false, true},
		{"10.1.2.3", nil, false, true},
		{"0.0.0.0", []byte("0123456789abcdef"), false, false},
		{"0.0.0.0", nil, true, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s key=%v insecure=%v", tt.addr, tt.key != nil, tt.insecure), func(t *testing.T) {
			c := Config{BindAddr: tt.addr, SecretKey: tt.key, Insecure: tt.insecure}
			_, err := New(c)
			var ee *ExposureError
			if got := errors.As(err, &ee); got != tt.refused {
				t.Fatalf("New: %v, want refused=%v", err, tt.refused)
			}
			if tt.refused && (ee.What != "gossip" || !strings.Contains(err.Error(), "secret_key")) {
				t.Errorf("error does not say what to set: %v", err)
			}
			if tt.addr == "" {
				return // an empty remoting host listens on every interface: not the same rule
			}
			var re *ExposureError
			if got := errors.As(CheckRemoteExposure(tt.addr, tt.key != nil, tt.insecure), &re); got != tt.refused {
				t.Errorf("CheckRemoteExposure(%q, tls=%v): refused=%v, want %v", tt.addr, tt.key != nil, got, tt.refused)
			}
		})
	}
}
