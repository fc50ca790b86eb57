package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/redisstore"
	"github.com/joinery/joinery/record"
)

// TestCLIInspectOfflineRedisTLS: --offline --config uses the job's
// state.redis.tls (a Redis that only speaks TLS); without a job file
// --redis-ca-file does; without either the TLS port is not reached.
func TestCLIInspectOfflineRedisTLS(t *testing.T) {
	dir := t.TempDir()
	certs := testutil.WriteTLSFiles(t, dir)
	tlsPort := testutil.FreePort(t)
	rs := testutil.StartRedis(t, "--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", certs.Cert,
		"--tls-key-file", certs.Key, "--tls-ca-cert-file", certs.CA, "--tls-auth-clients", "no")
	tlsAddr := fmt.Sprintf("127.0.0.1:%d", tlsPort)
	ctx := context.Background()
	store, err := redisstore.New(ctx, redisstore.Config{Options: redisopts.Options{Addr: rs.Addr}}) // plain port, to write the snapshot
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	spec := &joins.CDCSpec{Left: joins.SideSpec{Name: "users", PK: "id", JoinOn: "id"}, Right: joins.SideSpec{Name: "domains", PK: "id", JoinOn: "user_id"}}
	cdc := joins.NewCDC(spec)
	evs, err := spec.Route(record.Left, record.Change{Op: record.OpCreate, After: record.Row{"id": 5, "name": "tls-ann"}})
	if err != nil {
		t.Fatal(err)
	}
	cdc.OnEvent(evs[0], nil)
	state, err := keycore.EncodeJoinState(cdc.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Save(ctx, []persistence.Snapshot{{Job: "ud", Key: "5", State: state, Offsets: record.OffsetsOf(map[string]int64{"cdc/0": 3})}}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`name: ud
join: {type: cdc, left: {name: users, pk: id, join_on: id}, right: {name: domains, pk: id, join_on: user_id}}
state: {store: redis, redis: {addr: %q, tls: {ca_file: ca.pem}}}
`, tlsAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	noServer := map[string]string{envServer: "http://127.0.0.1:1"}
	r := runCLI(t, noServer, "--timeout", "10s", "key", "inspect", "ud", "5", "--offline", "--config", cfg)
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "tls-ann")
	r = runCLI(t, noServer, "--timeout", "10s", "key", "inspect", "ud", "5", "--offline", "--redis", tlsAddr, "--redis-ca-file", certs.CA)
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "tls-ann")
	r = runCLI(t, noServer, "--timeout", "3s", "key", "inspect", "ud", "5", "--offline", "--redis", tlsAddr)
	wantExit(t, r, 1) // plain text to a TLS port
	wantExit(t, runCLI(t, noServer, "key", "inspect", "ud", "5", "--redis-tls"), 2)
}

// TestCLITokenFileAndHTTPS: --token-file (trailing newline trimmed) against
// an HTTPS admin server whose CA is given with --ca-file; the read token
// cannot passivate (403, exit 1).
func TestCLITokenFileAndHTTPS(t *testing.T) {
	dir := t.TempDir()
	certs := testutil.WriteTLSFiles(t, dir)
	cert, err := tls.LoadX509KeyPair(certs.Cert, certs.Key)
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBackend{}
	s := admin.NewServer(admin.ServerConfig{Backend: fb, Token: "adm", ReadToken: "rd", Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	url := strings.Replace(ts.URL, "https://127.0.0.1", "https://localhost", 1)
	read := filepath.Join(dir, "read")
	if err := os.WriteFile(read, []byte("rd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{envServer: url}
	wantExit(t, runCLI(t, env, "--ca-file", certs.CA, "--token-file", read, "members"), 0)
	r := runCLI(t, env, "--ca-file", certs.CA, "--token-file", read, "key", "passivate", "j", "42")
	wantExit(t, r, 1)
	wantContains(t, r.stderr, "403")
	r = runCLI(t, env, "--token-file", read, "members") // the test CA is not a system root
	wantExit(t, r, 1)
	wantContains(t, r.stderr, "certificate")
	wantExit(t, runCLI(t, env, "--token", "x", "--token-file", read, "members"), 2)
	wantExit(t, runCLI(t, env, "--token-file", filepath.Join(dir, "nope"), "members"), 2)
	if len(fb.Actions()) != 0 {
		t.Errorf("actions %v: the read token acted", fb.Actions())
	}
}
