package node_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
)

// TestClusterCleanStopLogsNoError stops a 3-node fleet (real memberlist
// and protoactor remoting) that has just run a join, one node after the
// other as a rolling stop does, and checks that no node logged anything at
// ERROR: an operator's log alerting pages on ERROR lines, and a clean stop
// is nothing to act on (memberlist's goroutines racing its Shutdown logged
// "use of closed network connection" at ERROR before).
func TestClusterCleanStopLogsNoError(t *testing.T) {
	rs := testutil.StartRedis(t)
	dir := t.TempDir()
	h := cdcgen.Generate(cdcgen.Config{Seed: 5, Users: 30, Domains: 90, Changes: 600})
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), append(bytes.Join(h.Lines, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := make([]*testutil.SyncBuffer, 3)
	startLogged := func(i int, yml string) *node.Node {
		logs[i] = &testutil.SyncBuffer{}
		l := slog.New(slog.NewTextHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelWarn}))
		n, err := node.Start(context.Background(), parse(t, dir, yml), node.Options{Logger: l, Stdout: io.Discard})
		if err != nil {
			t.Fatalf("start n%d: %v", i+1, err)
		}
		return n
	}
	base := "name: cleanstop\n" + joinYAML + fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", rs.Addr)
	n1 := startLogged(0, base+`sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: file, path: out.jsonl, format: changelog}]
cluster: {node_name: n1}
`)
	n2 := startLogged(1, base+fmt.Sprintf("cluster: {node_name: n2, seeds: [%q]}\n", n1.GossipAddr()))
	n3 := startLogged(2, base+fmt.Sprintf("cluster: {node_name: n3, seeds: [%q]}\n", n1.GossipAddr()))
	nodes := []*node.Node{n1, n2, n3}
	for _, n := range nodes {
		testutil.WaitFor(t, 30*time.Second, seesAlive(n, 3))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n1.Run(ctx); err != nil {
		t.Fatalf("run: %v", err)
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		if err := nodes[i].Close(context.Background()); err != nil {
			t.Errorf("close n%d: %v", i+1, err)
		}
	}
	time.Sleep(500 * time.Millisecond) // what a stopping goroutine logs late still lands in the buffer
	for i, l := range logs {
		for _, line := range strings.Split(l.String(), "\n") {
			if strings.Contains(line, "level=ERROR") {
				t.Errorf("n%d logged at ERROR on a clean stop: %s", i+1, line)
			}
		}
	}
}
