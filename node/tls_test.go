package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
)

// TestNodeRedisTLS runs the join with its state store, a Redis Stream source
// and a Redis hash sink all on a redis-server's TLS port (a test CA the job
// names in ca_file), and checks the result; a job without the CA is refused
// when it connects.
func TestNodeRedisTLS(t *testing.T) {
	dir := t.TempDir()
	certs := testutil.WriteTLSFiles(t, dir)
	tlsPort := testutil.FreePort(t)
	rs := testutil.StartRedis(t, "--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", certs.Cert,
		"--tls-key-file", certs.Key, "--tls-ca-cert-file", certs.CA, "--tls-auth-clients", "no")
	tlsAddr := fmt.Sprintf("127.0.0.1:%d", tlsPort)
	h := cdcgen.Generate(cdcgen.Config{Seed: 17, Users: 10, Domains: 30, Changes: 300})
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr}) // the plain port, to feed the stream
	defer rc.Close()
	for _, l := range h.Lines {
		if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: "cdc", Values: map[string]any{"value": string(l)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	redisYAML := fmt.Sprintf("{addr: %q, tls: {ca_file: %q}}", tlsAddr, certs.CA)
	n := start(t, parse(t, dir, "name: tls\n"+joinYAML+`
state: {store: redis, redis: `+redisYAML+`}
sources: [{name: cdc, type: redis-stream, redis: `+redisYAML+`, stream: cdc, group: g, tables: {users: left, domains: right}}]
sinks: [{type: redis-hash, redis: `+redisYAML+`, key: view}, {type: table}]
`))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(runCtx) }()
	want := h.LeftJoin()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if got := rc.HLen(ctx, "view").Val(); got != int64(len(want)) {
			return fmt.Errorf("view has %d rows, want %d", got, len(want))
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	diff(t, "tls", tableMap(n.Table()), want)

	// Without the CA the server's certificate is not trusted: the node does
	// not start (its state store cannot connect).
	spec := parse(t, dir, "name: tls2\n"+joinYAML+fmt.Sprintf(`
state: {store: redis, redis: {addr: %q, tls: {enabled: true}}}
`, tlsAddr))
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if n2, err := node.Start(sctx, spec, node.Options{Logger: testLogger(t), Stdout: io.Discard}); err == nil {
		_ = n2.Close(ctx)
		t.Error("a node started against a TLS port whose certificate it cannot verify")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("start error %v, want one about the certificate", err)
	}
}
