package node_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
)

// TestNodeGossipKeyRotation rotates a two-node fleet's gossip key through
// the admin API (what joinctl gossip-key calls): install, use, remove on
// both nodes; the fleet stays whole, each lists only the new key, and a
// node started with the old key alone cannot join any more.
func TestNodeGossipKeyRotation(t *testing.T) {
	oldKey := []byte("0123456789abcdef0123456789abcdef")
	newKey := []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZ012345")
	dir := t.TempDir()
	spec := func(name string, key []byte, seeds ...string) string {
		c := fmt.Sprintf("cluster: {node_name: %s, secret_key: %s, profile: local, seeds: %q}\n", name, base64.StdEncoding.EncodeToString(key), seeds)
		return "name: rot\n" + joinYAML + c + "admin: {addr: '127.0.0.1:0', token: t0ken}\nsinks: [{type: table}]\n"
	}
	n1 := start(t, parse(t, dir, spec("n1", oldKey)))
	n2 := start(t, parse(t, dir, spec("n2", oldKey, n1.GossipAddr())))
	alive := seesAlive
	testutil.WaitFor(t, 20*time.Second, alive(n1, 2))
	testutil.WaitFor(t, 20*time.Second, alive(n2, 2))
	var clients []*admin.Client
	for _, n := range []*node.Node{n1, n2} {
		c, err := admin.NewClient(n.AdminAddr(), "t0ken", nil)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	ctx := context.Background()
	for _, step := range []struct {
		op  string
		key []byte
	}{{"install", newKey}, {"use", newKey}, {"remove", oldKey}} {
		for _, c := range clients {
			if err := c.ChangeGossipKey(ctx, step.op, step.key); err != nil {
				t.Fatalf("%s: %v", step.op, err)
			}
		}
		time.Sleep(time.Second) // gossip and probes under the new keyring
		for _, n := range []*node.Node{n1, n2} {
			if err := alive(n, 2)(); err != nil {
				t.Fatalf("after %s: %v", step.op, err)
			}
		}
	}
	for _, c := range clients {
		keys, err := c.GossipKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 || !keys[0].Primary || keys[0].Fingerprint != cluster.KeyFingerprint(newKey) {
			t.Errorf("keys %+v, want the new key alone, primary", keys)
		}
	}
	// Refusals are 400s; without the token, 401.
	var ae *admin.APIError
	if err := clients[0].ChangeGossipKey(ctx, "remove", newKey); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Errorf("removing the primary: %v, want a 400", err)
	}
	anon, _ := admin.NewClient(n1.AdminAddr(), "", nil)
	if err := anon.ChangeGossipKey(ctx, "install", oldKey); !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Errorf("a change without the token: %v, want a 401", err)
	}
	stale := start(t, parse(t, dir, spec("stale", oldKey, n1.GossipAddr())))
	time.Sleep(3 * time.Second)
	if err := alive(stale, 1)(); err != nil {
		t.Errorf("a node with the removed key: %v", err)
	}
	fresh := start(t, parse(t, dir, spec("fresh", newKey, n1.GossipAddr())))
	testutil.WaitFor(t, 20*time.Second, alive(fresh, 3))
}
