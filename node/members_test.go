package node_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
)

// TestClusterMembersStats runs three nodes over real memberlist and
// protoactor remoting, one reading a Redis stream whose keys' actors spread
// over all three, and asks one node's admin API for the members (what
// `joinctl members` shows): every node's live key count is the one that
// node has (each gossips it in its node meta), and its uptime is known and
// within the test's run.
func TestClusterMembersStats(t *testing.T) {
	began := time.Now()
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 11, Users: 30, Domains: 60, Changes: 400})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	dir := t.TempDir()
	yml := "name: members\n" + joinYAML + fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: table}]
admin: {addr: "127.0.0.1:0"}
`, rs.Addr)
	n1 := start(t, parse(t, dir, yml+"cluster: {node_name: n1}\n"))
	seeds := fmt.Sprintf("cluster: {node_name: %%s, seeds: [%q]}\n", n1.GossipAddr())
	n2 := start(t, parse(t, dir, yml+fmt.Sprintf(seeds, "n2")))
	n3 := start(t, parse(t, dir, yml+fmt.Sprintf(seeds, "n3")))
	nodes := map[string]*node.Node{"n1": n1, "n2": n2, "n3": n3}
	for _, n := range nodes {
		testutil.WaitFor(t, 30*time.Second, seesAlive(n, 3))
	}
	xadd(t, rc, "cdc", h.Lines)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n1.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("run: %v", err)
		}
	}()
	testutil.WaitFor(t, 60*time.Second, joinedAndAcked(n1, rc, h.LeftJoin()))

	ac, err := admin.NewClient("http://"+n2.AdminAddr(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each node regossips its count within cluster.Config.StatsInterval (5s).
	var ms []admin.Member
	testutil.WaitFor(t, 30*time.Second, func() error {
		if ms, err = ac.Members(ctx); err != nil {
			return err
		}
		if len(ms) != 3 {
			return fmt.Errorf("%d members, want 3", len(ms))
		}
		for _, m := range ms {
			n := nodes[m.Name]
			if n == nil {
				return fmt.Errorf("member %q is none of the nodes", m.Name)
			}
			if want := n.Stats().ActiveKeys(); int64(m.KeysActive) != want || want == 0 {
				return fmt.Errorf("%s: %d keys active by n2's admin, %d by the node itself (want the same, not 0)", m.Name, m.KeysActive, want)
			}
		}
		return nil
	})
	total := 0
	for _, m := range ms {
		total += m.KeysActive
		if m.Uptime <= 0 || m.Uptime > time.Since(began) {
			t.Errorf("%s: uptime %v, want above 0 and at most the test's %v", m.Name, m.Uptime, time.Since(began))
		}
		t.Logf("%s (self %v): %d keys active, up %v", m.Name, m.Self, m.KeysActive, m.Uptime.Round(time.Millisecond))
	}
	if total != 30 {
		t.Errorf("%d keys active over the fleet, want the 30 users", total)
	}
}
