package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	bad := Config{
		BindAddr:      "localhost",
		BindPort:      70000,
		AdvertiseAddr: "not-an-ip",
		AdvertisePort: -1,
		Seeds:         []string{"127.0.0.1:7946", "nohost", "h:0", ":7946"},
		SecretKey:     []byte("short"),
		Label:         strings.Repeat("x", 300),
		Profile:       "fast",
		ProbeInterval: time.Second, ProbeTimeout: 2 * time.Second,
		JoinRetryMin: time.Minute, JoinRetryMax: time.Second,
		LeaveTimeout:  -time.Second,
		SuspicionMult: -1,
	}
	err := bad.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad config")
	}
	for _, field := range []string{"BindAddr", "BindPort", "AdvertiseAddr", "AdvertisePort",
		"Seeds[1]", "Seeds[2]", "Seeds[3]", "SecretKey", "Label", "Profile", "ProbeTimeout",
		"JoinRetryMin", "LeaveTimeout", "SuspicionMult"} {
		if !strings.Contains(err.Error(), "config "+field+":") {
			t.Errorf("error does not name %s:\n%v", field, err)
		}
	}
	if strings.Contains(err.Error(), "Seeds[0]") {
		t.Errorf("valid seed reported: %v", err)
	}
	if _, err := New(bad); err == nil {
		t.Fatal("New accepted a bad config")
	}
}

// TestConfigNotWrittenBack: memberlist writes BindPort/AdvertisePort into
// its config; the caller's Config and slices must stay untouched.
func TestConfigNotWrittenBack(t *testing.T) {
	f := newFleet(t)
	cfg := testConfig("127.0.0.1:1")
	cfg.SecretKey = []byte("0123456789abcdef")
	want := cfg
	wantSeeds := slices.Clone(cfg.Seeds)
	wantKey := slices.Clone(cfg.SecretKey)
	n := f.startMode(cfg, false, false)
	if n.provider.GossipAddr() == "" || strings.HasSuffix(n.provider.GossipAddr(), ":0") {
		t.Fatalf("GossipAddr = %q, want the bound port", n.provider.GossipAddr())
	}
	if cfg.BindPort != want.BindPort || cfg.AdvertisePort != want.AdvertisePort ||
		!slices.Equal(cfg.Seeds, wantSeeds) || !bytes.Equal(cfg.SecretKey, wantKey) {
		t.Fatalf("caller's Config changed: %+v", cfg)
	}
	cfg.Seeds[0] = "changed:1"
	if n.provider.cfg.Seeds[0] != "127.0.0.1:1" {
		t.Fatal("Provider shares the caller's Seeds slice")
	}
}

func TestProviderLifecycle(t *testing.T) {
	// Shutdown before start closes it for good.
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(true); err != nil {
		t.Fatal(err)
	}
	if err := p.StartMember(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("StartMember after Shutdown: %v, want ErrClosed", err)
	}

	// A started provider: second start fails; Shutdown is idempotent.
	f := newFleet(t)
	n := f.startMode(testConfig(), false, false)
	if err := n.provider.StartMember(n.cluster); !errors.Is(err, ErrStarted) {
		t.Fatalf("second StartMember: %v, want ErrStarted", err)
	}
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- n.provider.Shutdown(true) }()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	}
	if err := n.provider.Shutdown(false); err != nil {
		t.Fatalf("third Shutdown: %v", err)
	}
	if got := n.provider.Members(); len(got) != 1 || !got[0].Self {
		t.Fatalf("Members after shutdown = %+v", got)
	}
}

func TestMemberlistLogBridge(t *testing.T) {
	var buf bytes.Buffer
	l := newMemberlistLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Printf("[DEBUG] memberlist: chatty")
	l.Printf("[WARN] memberlist: Refuting a suspect message")
	l.Printf("[ERR] memberlist: Failed to send")
	l.Printf("no prefix")
	out := buf.String()
	for _, want := range []string{
		`level=WARN msg="Refuting a suspect message" component=memberlist`,
		`level=ERROR msg="Failed to send"`,
		`level=INFO msg="no prefix"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "chatty") {
		t.Errorf("debug line logged at info:\n%s", out)
	}
}

func FuzzDecodeMeta(f *testing.F) {
	good, _ := encodeMeta(nodeMeta{ID: "a", Host: "127.0.0.1", Port: 8090, Kinds: []string{"echo"}})
	f.Add(good)
	f.Add([]byte(`{"v":2,"id":"a","host":"h","port":1}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			return
		}
		again, err := encodeMeta(m)
		if err != nil {
			return // valid but over the size limit
		}
		m2, err := decodeMeta(again)
		if err != nil || m2.ID != m.ID || m2.Host != m.Host || m2.Port != m.Port ||
			!slices.Equal(m2.Kinds, m.Kinds) || m2.Client != m.Client || m2.Leaving != m.Leaving {
			t.Fatalf("round trip: %+v -> %+v, %v", m, m2, err)
		}
	})
}

// TestMemberInfoStats: a member's key actor count and start time come
// from its gossiped meta; a node that does not gossip them (no
// Config.KeysActive, an older node) shows -1 and a zero time.
func TestMemberInfoStats(t *testing.T) {
	keys := int64(42)
	started := time.UnixMilli(1_700_000_000_123)
	for _, c := range []struct {
		name    string
		meta    string
		keys    int64
		started time.Time
		encode  bool
	}{
		{"gossiped", "", 42, started, true},
		{"older node", `{"v":1,"id":"a","host":"h","port":1}`, -1, time.Time{}, false},
		{"zero keys", `{"v":1,"id":"a","host":"h","port":1,"keys":0,"started":5}`, 0, time.UnixMilli(5), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := []byte(c.meta)
			if c.encode {
				var err error
				if b, err = encodeMeta(nodeMeta{ID: "a", Host: "h", Port: 1, Keys: &keys, Started: started.UnixMilli()}); err != nil {
					t.Fatal(err)
				}
			}
			m, err := decodeMeta(b)
			if err != nil {
				t.Fatal(err)
			}
			mi := (&nodeView{name: "n", status: StatusAlive, meta: m}).infoLocked("other")
			if mi.KeysActive != c.keys || !mi.Started.Equal(c.started) {
				t.Errorf("keys %d started %v, want %d %v", mi.KeysActive, mi.Started, c.keys, c.started)
			}
		})
	}
}
