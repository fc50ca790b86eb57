package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"

	"github.com/joinery/joinery/admin"
)

// fakeKeyring is a test stand-in for a node with encrypted gossip: it
// records the key changes it is asked for and refuses "remove" of the
// primary, like the real keyring (node/gossipkeys_test.go runs the real one).
type fakeKeyring struct {
	fakeBackend
	kmu     sync.Mutex
	changes []string
}

func (f *fakeKeyring) GossipKeys(context.Context) ([]admin.GossipKey, error) {
	return []admin.GossipKey{{Fingerprint: "00112233aabbccdd", Primary: true, Bits: 256}}, nil
}

func (f *fakeKeyring) ChangeGossipKey(_ context.Context, op string, key []byte) error {
	if op == "remove" && string(key) == "primary-key-0123" {
		return fmt.Errorf("%w: it is the primary", admin.ErrKeyRefused)
	}
	f.kmu.Lock()
	defer f.kmu.Unlock()
	f.changes = append(f.changes, fmt.Sprintf("%s %s", op, key))
	return nil
}

func TestCLIGossipKey(t *testing.T) {
	a, b := &fakeKeyring{}, &fakeKeyring{}
	ua, ub := startServer(t, a, "s"), startServer(t, b, "s")
	env := map[string]string{envToken: "s"}
	key := base64.StdEncoding.EncodeToString([]byte("new-key-01234567"))
	r := runCLI(t, env, "gossip-key", "install", key, "--nodes", ua+","+ub)
	wantExit(t, r, 0)
	wantContains(t, r.stdout, ua+": install done", ub+": install done")
	for _, f := range []*fakeKeyring{a, b} {
		if len(f.changes) != 1 || f.changes[0] != "install new-key-01234567" {
			t.Errorf("node got %v, want one install of the key", f.changes)
		}
	}
	r = runCLI(t, env, "--server", ua, "gossip-key", "list")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "00112233aabbccdd", "256", "true")

	r = runCLI(t, env, "--server", ua, "gossip-key", "remove", base64.StdEncoding.EncodeToString([]byte("primary-key-0123")))
	wantExit(t, r, 1)
	wantContains(t, r.stderr, "400", "primary")
	r = runCLI(t, env, "--server", ua, "gossip-key", "use", "not base64!")
	wantExit(t, r, 2)
	r = runCLI(t, nil, "--server", ua, "gossip-key", "use", key) // no token
	wantExit(t, r, 1)
	wantContains(t, r.stderr, "401")
}
