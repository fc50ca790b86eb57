package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/internal/testutil/statetest"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/redisstore"
	"github.com/joinery/joinery/record"
)

// fakeBackend is a test stand-in for a node (the real Backend): canned data
// for job "j", recorded key actions.
type fakeBackend struct {
	membersErr error

	mu      sync.Mutex
	actions []string
}

var (
	_ admin.Backend     = (*fakeBackend)(nil)
	_ admin.Watermarker = (*fakeBackend)(nil)
	_ admin.Explainer   = (*fakeBackend)(nil)
	_ admin.HotKeys     = (*fakeBackend)(nil)
	_ admin.KeyActions  = (*fakeBackend)(nil)
)

func checkJob(job string) error {
	if job != "j" {
		return fmt.Errorf("job %q: %w", job, admin.ErrNotFound)
	}
	return nil
}

func (f *fakeBackend) Members(context.Context) ([]admin.Member, error) {
	if f.membersErr != nil {
		return nil, f.membersErr
	}
	return []admin.Member{
		{ID: "id-1", Name: "node-1", Address: "10.0.0.1:7000", GossipAddr: "10.0.0.1:7946", Status: "alive", Self: true, KeysActive: 3, Uptime: 90 * time.Minute},
		{ID: "id-2", Name: "node-2", Address: "10.0.0.2:7000", GossipAddr: "10.0.0.2:7946", Status: "alive", KeysActive: 17, Uptime: 2 * time.Minute},
		{ID: "id-3", Name: "node-3", Address: "10.0.0.3:7000", GossipAddr: "10.0.0.3:7946", Status: "dead", KeysActive: -1},
	}, nil
}

func (f *fakeBackend) Locate(_ context.Context, job, key string) (admin.Location, error) {
	if err := checkJob(job); err != nil {
		return admin.Location{}, err
	}
	return admin.Location{Job: job, Key: key, Node: "10.0.0.2:7000", Active: true}, nil
}

func (f *fakeBackend) Inspect(_ context.Context, job, key string) (admin.KeyState, error) {
	if err := checkJob(job); err != nil {
		return admin.KeyState{}, err
	}
	if key != "42" {
		return admin.KeyState{}, fmt.Errorf("key %q: %w", key, admin.ErrNotFound)
	}
	return admin.KeyState{
		Job: job, Key: key, Node: "10.0.0.2:7000",
		Left:    json.RawMessage(`{"id":42,"name":"ann"}`),
		Rights:  []json.RawMessage{json.RawMessage(`{"id":7,"user_id":42}`)},
		Offsets: map[string]int64{"cdc/1": 9, "cdc/0": 12345678901},
		Epoch:   3, Timers: []int64{5000},
	}, nil
}

func (f *fakeBackend) Ready(context.Context) error { return nil }

func (f *fakeBackend) Watermarks(_ context.Context, job string) ([]admin.Watermark, int64, error) {
	if err := checkJob(job); err != nil {
		return nil, 0, err
	}
	return []admin.Watermark{
		{Source: "cdc", Partition: "cdc/0", Watermark: 1000, MaxTs: 1500, LagMs: 2500},
		{Source: "cdc", Partition: "cdc/1", Watermark: -1 << 63, MaxTs: -1 << 63, Idle: true},
	}, 1000, nil
}

func (f *fakeBackend) Why(_ context.Context, job, key string) (admin.Why, error) {
	if err := checkJob(job); err != nil {
		return admin.Why{}, err
	}
	if key != "42" {
		return admin.Why{}, fmt.Errorf("key %q: %w", key, admin.ErrNotFound)
	}
	held := admin.Watermark{Source: "visits", Partition: "visits/1", Watermark: 1000, MaxTs: 1500, LagMs: 2500}
	return admin.Why{Job: job, Key: key, Node: "10.0.0.2:7000", Watermark: 1000, KeyWatermark: 900, HeldBy: &held,
		Waits: []admin.Wait{{What: "window [0,2000) fires: 1 left, 2 right", NeedsWatermark: 1999, Behind: 999}}}, nil
}

func (f *fakeBackend) Hot(_ context.Context, job string, n int) ([]admin.HotKey, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	var out []admin.HotKey
	for i := range min(n, 3) {
		out = append(out, admin.HotKey{Job: job, Key: fmt.Sprintf("k%d", i), EventsPerSec: 10.5 - float64(i), StateBytes: 100})
	}
	return out, nil
}

func (f *fakeBackend) Passivate(_ context.Context, job, key string) error {
	return f.act("passivate", job, key)
}

func (f *fakeBackend) Evict(_ context.Context, job, key string) error {
	return f.act("evict", job, key)
}

func (f *fakeBackend) act(what, job, key string) error {
	if err := checkJob(job); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, what+" "+job+"/"+key)
	return nil
}

func (f *fakeBackend) Actions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.actions...)
}

// startServer serves admin.Server with b (and token) on an httptest server.
func startServer(t *testing.T, b admin.Backend, token string) string {
	t.Helper()
	s := admin.NewServer(admin.ServerConfig{Backend: b, Token: token, Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs joinctl with env as its whole environment.
func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runContext(context.Background(), args, &out, &errOut, func(k string) string { return env[k] })
	return result{code, out.String(), errOut.String()}
}

func wantExit(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

func wantContains(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("output lacks %q:\n%s", sub, s)
		}
	}
}

func TestCLIMembers(t *testing.T) {
	env := map[string]string{envServer: startServer(t, &fakeBackend{}, "")}
	r := runCLI(t, env, "members")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "SELF", "NAME", "KEYS", "UPTIME", "node-1", "10.0.0.1:7946", "1h30m0s", "dead")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	// Another member's gossiped count and uptime show; an unknown one "?" and "-".
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "*") ||
		!regexp.MustCompile(`node-2 .* alive +17 +2m0s$`).MatchString(lines[2]) ||
		!regexp.MustCompile(`node-3 .* dead +\? +-$`).MatchString(lines[3]) {
		t.Fatalf("table:\n%s", r.stdout)
	}

	r = runCLI(t, env, "members", "-o", "json")
	wantExit(t, r, 0)
	var ms []admin.Member
	if err := json.Unmarshal([]byte(r.stdout), &ms); err != nil || len(ms) != 3 || ms[0].Name != "node-1" {
		t.Fatalf("json %v:\n%s", err, r.stdout)
	}

	r = runCLI(t, env, "-o", "yaml", "members")
	wantExit(t, r, 0)
	var ym []map[string]any
	if err := yaml.Unmarshal([]byte(r.stdout), &ym); err != nil || len(ym) != 3 || ym[0]["gossip_addr"] != "10.0.0.1:7946" || ym[0]["keys_active"] != 3 {
		t.Fatalf("yaml %v:\n%s", err, r.stdout)
	}
}

func TestCLIKey(t *testing.T) {
	url := startServer(t, &fakeBackend{}, "")
	r := runCLI(t, nil, "--server", url, "key", "locate", "j", "42")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "NODE", "10.0.0.2:7000", "true")

	r = runCLI(t, nil, "--server", url, "key", "inspect", "j", "42")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, `{"id":42,"name":"ann"}`, `{"id":7,"user_id":42}`, "cdc/0", "12345678901", "Epoch:", "3", "5000", "Left columns kept:", "id, name", "Right columns kept:", "id, user_id")
	if strings.Index(r.stdout, "cdc/0") > strings.Index(r.stdout, "cdc/1") {
		t.Errorf("offsets not sorted:\n%s", r.stdout)
	}

	r = runCLI(t, nil, "--server", url, "key", "inspect", "j", "42", "-o", "json")
	wantExit(t, r, 0)
	var ks admin.KeyState
	if err := json.Unmarshal([]byte(r.stdout), &ks); err != nil || ks.Offsets["cdc/0"] != 12345678901 || len(ks.Rights) != 1 {
		t.Fatalf("json %v:\n%s", err, r.stdout)
	}

	r = runCLI(t, nil, "--server", url, "key", "inspect", "j", "42", "-o", "yaml")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "cdc/0: 12345678901", "name: ann", "user_id: 42")
}

func TestCLIKeyWhy(t *testing.T) {
	url := startServer(t, &fakeBackend{}, "")
	r := runCLI(t, nil, "--server", url, "key", "why", "j", "42")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "Held back by:", "visits/1", "lagging", "2.5s", "1999", "999", "window [0,2000) fires: 1 left, 2 right", "the key has seen 900")

	r = runCLI(t, nil, "--server", url, "key", "why", "j", "42", "-o", "json")
	wantExit(t, r, 0)
	var why admin.Why
	if err := json.Unmarshal([]byte(r.stdout), &why); err != nil || why.HeldBy == nil || len(why.Waits) != 1 || why.Waits[0].NeedsWatermark != 1999 {
		t.Fatalf("json %v:\n%s", err, r.stdout)
	}
	r = runCLI(t, nil, "--server", url, "key", "why", "j", "7")
	wantExit(t, r, 3)
}

func TestCLINotFound(t *testing.T) {
	url := startServer(t, &fakeBackend{}, "s")
	env := map[string]string{envServer: url, envToken: "s"}
	for _, args := range [][]string{
		{"key", "inspect", "j", "nope"}, {"key", "inspect", "nope", "42"}, {"key", "locate", "nope", "1"},
		{"watermarks", "nope"}, {"hot", "nope"}, {"key", "passivate", "nope", "1"},
	} {
		r := runCLI(t, env, args...)
		wantExit(t, r, 3)
		wantContains(t, r.stderr, "not found")
	}
}

func TestCLIServerErrors(t *testing.T) {
	// Nothing listens: exit 1.
	ts := httptest.NewServer(nil)
	dead := ts.URL
	ts.Close()
	r := runCLI(t, map[string]string{envServer: dead}, "members")
	wantExit(t, r, 1)

	url := startServer(t, &fakeBackend{membersErr: errors.New("gossip exploded")}, "")
	r = runCLI(t, nil, "--server", url, "members")
	wantExit(t, r, 1)
	wantContains(t, r.stderr, "500", "gossip exploded")

	// A backend without extensions: 501 is a server error, exit 1.
	url = startServer(t, struct{ admin.Backend }{&fakeBackend{}}, "")
	r = runCLI(t, nil, "--server", url, "hot", "j")
	wantExit(t, r, 1)
	wantContains(t, r.stderr, "501", "does not support")
}

func TestCLIToken(t *testing.T) {
	fb := &fakeBackend{}
	url := startServer(t, fb, "tok-9f2")
	r := runCLI(t, map[string]string{envServer: url}, "members")
	wantExit(t, r, 1)
	wantContains(t, r.stderr, "401")

	env := map[string]string{envServer: url, envToken: "tok-9f2"}
	wantExit(t, runCLI(t, env, "members"), 0)
	r = runCLI(t, env, "key", "passivate", "j", "42")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "passivated j/42")
	r = runCLI(t, map[string]string{envServer: url}, "--token", "tok-9f2", "key", "evict", "j", "42", "-o", "json")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, `"action": "evict"`, `"ok": true`)
	if got := strings.Join(fb.Actions(), ","); got != "passivate j/42,evict j/42" {
		t.Fatalf("actions %q", got)
	}
	// --help never shows the token from the environment.
	r = runCLI(t, env, "--help")
	wantExit(t, r, 0)
	if strings.Contains(r.stdout, "tok-9f2") {
		t.Fatalf("--help shows the token:\n%s", r.stdout)
	}

	// A server without a token refuses write actions: 403, exit 1.
	open := startServer(t, &fakeBackend{}, "")
	r = runCLI(t, map[string]string{envServer: open, envToken: "x"}, "key", "passivate", "j", "42")
	wantExit(t, r, 1)
	wantContains(t, r.stderr, "403")
}

func TestCLIWatermarks(t *testing.T) {
	url := startServer(t, &fakeBackend{}, "")
	r := runCLI(t, nil, "--server", url, "watermarks", "j")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "global watermark 1000", "PARTITION", "cdc/0", "2.5s", "idle")
	if !strings.Contains(r.stdout, "cdc/1") || !strings.Contains(r.stdout, " - ") {
		t.Fatalf("no watermark yet should show as -:\n%s", r.stdout)
	}
}

func TestCLIWatermarksWatch(t *testing.T) {
	url := startServer(t, &fakeBackend{}, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"--server", url, "watermarks", "j", "-w", "10ms"}, &out, &errOut, func(string) string { return "" })
	}()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "Every 10ms: watermarks j") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 3 redraws in 10s:\n%s", out.String())
		}
		select {
		case code := <-done:
			t.Fatalf("watch ended early with %d: %s", code, errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel() // Ctrl-C
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after interrupt: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not stop on interrupt")
	}

	// An unknown job fails at once instead of watching.
	r := runCLI(t, nil, "--server", url, "watermarks", "nope", "-w", "10ms")
	wantExit(t, r, 3)
}

func TestCLIHot(t *testing.T) {
	url := startServer(t, &fakeBackend{}, "")
	r := runCLI(t, nil, "--server", url, "hot", "j", "-n", "2")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "EVENTS/S", "k0", "10.5", "k1")
	if strings.Contains(r.stdout, "k2") {
		t.Fatalf("-n 2 showed more:\n%s", r.stdout)
	}
}

func TestCLIUsage(t *testing.T) {
	url := startServer(t, &fakeBackend{}, "")
	for _, args := range [][]string{
		{"bogus"},
		{"members", "extra"},
		{"key", "inspect", "j"},
		{"key", "locate", "j", "1", "2"},
		{"--nope", "members"},
		{"-o", "xml", "members"},
		{"hot", "j", "-n", "0"},
		{"hot", "j", "-n", "x"},
		{"hot", "j", "--limit", "1001"},
		{"watermarks", "j", "-w", "-1s"},
		{"key", "inspect", "j", "42", "--redis", "127.0.0.1:1"},
		{"key", "inspect", "j", "42", "--offline"},
		{"key", "inspect", "j", "42", "--offline", "--config", "/does/not/exist.yaml"},
		{"--server", "ftp://x", "members"},
		{"completion", "tcsh"},
	} {
		r := runCLI(t, map[string]string{envServer: url}, args...)
		if r.code != 2 {
			t.Errorf("%q: exit %d, want 2\nstderr: %s", args, r.code, r.stderr)
		}
	}
}

func TestCLIHelpAndCompletion(t *testing.T) {
	for _, args := range [][]string{
		{}, {"members"}, {"key"}, {"key", "locate"}, {"key", "inspect"}, {"key", "passivate"}, {"key", "evict"},
		{"watermarks"}, {"hot"}, {"completion"}, {"completion", "bash"},
	} {
		r := runCLI(t, nil, append(args, "--help")...)
		wantExit(t, r, 0)
		if !strings.Contains(r.stdout, "Examples:") {
			t.Errorf("joinctl %s --help has no examples:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := runCLI(t, nil, "completion", sh)
		wantExit(t, r, 0)
		wantContains(t, r.stdout, "joinctl")
	}
}

func TestCLIInspectOffline(t *testing.T) {
	redis := testutil.StartRedis(t)
	ctx := context.Background()
	spec := &joins.CDCSpec{
		Type:  joins.LeftOuter,
		Left:  joins.SideSpec{Name: "users", PK: "uid", JoinOn: "uid"},
		Right: joins.SideSpec{Name: "domains", PK: "did", JoinOn: "user_id"},
	}
	cdc := joins.NewCDC(spec)
	for _, c := range []struct {
		side record.Side
		row  record.Row
	}{
		{record.Left, record.Row{"uid": 42, "name": "ann"}},
		{record.Right, record.Row{"did": 7, "user_id": 42, "domain": "a.example"}},
	} {
		evs, err := spec.Route(c.side, record.Change{Op: record.OpCreate, After: c.row})
		if err != nil || len(evs) != 1 {
			t.Fatal(err)
		}
		cdc.OnEvent(evs[0], nil)
	}
	store, err := redisstore.New(ctx, redisstore.Config{Options: redisopts.Options{Addr: redis.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Save(ctx, []persistence.Snapshot{{Job: "users-domains", Key: "42", State: statetest.JoinState(t, cdc.Snapshot()), Offsets: record.OffsetsOf(map[string]int64{"cdc/0": 17})}}); err != nil {
		t.Fatal(err)
	}

	// Primary keys from flags; no server is involved (--server points nowhere).
	noServer := map[string]string{envServer: "http://127.0.0.1:1"}
	r := runCLI(t, noServer, "key", "inspect", "users-domains", "42", "--offline", "--redis", redis.Addr, "--left-pk", "uid", "--right-pk", "did")
	wantExit(t, r, 0)
	wantContains(t, r.stdout, `{"name":"ann","uid":42}`, `{"did":7,"domain":"a.example","user_id":42}`, "cdc/0", "17", "read from the store")

	// The default primary key "id" does not match these rows: a decode error.
	r = runCLI(t, noServer, "key", "inspect", "users-domains", "42", "--offline", "--redis", redis.Addr)
	wantExit(t, r, 1)
	wantContains(t, r.stderr, "bad CDC snapshot")

	// Primary keys and Redis from the job file.
	cfg := filepath.Join(t.TempDir(), "job.yaml")
	jobYAML := fmt.Sprintf(`name: users-domains
join:
  type: cdc
  mode: left
  left:  {name: users,   pk: uid, join_on: uid}
  right: {name: domains, pk: did, join_on: user_id}
state:
  store: redis
  redis: {addr: %q}
`, redis.Addr)
	if err := os.WriteFile(cfg, []byte(jobYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, noServer, "key", "inspect", "users-domains", "42", "--offline", "--config", cfg, "-o", "json")
	wantExit(t, r, 0)
	var ks admin.KeyState
	var left bytes.Buffer
	if err := json.Unmarshal([]byte(r.stdout), &ks); err != nil || ks.Offsets["cdc/0"] != 17 ||
		json.Compact(&left, ks.Left) != nil || left.String() != `{"name":"ann","uid":42}` {
		t.Fatalf("json %v:\n%s", err, r.stdout)
	}

	r = runCLI(t, noServer, "key", "inspect", "users-domains", "43", "--offline", "--config", cfg)
	wantExit(t, r, 3)

	r = runCLI(t, noServer, "key", "inspect", "users-domains", "42", "--offline", "--config", cfg, "--left-pk", "x")
	wantExit(t, r, 2)

	// Redis unreachable: exit 1.
	r = runCLI(t, noServer, "--timeout", "2s", "key", "inspect", "users-domains", "42", "--offline", "--redis", "127.0.0.1:1")
	wantExit(t, r, 1)
}

// TestCLIInspectOfflineCluster reads a key's snapshot from a real
// three-master Redis Cluster, with the nodes from --redis-cluster and from
// the job file's state.redis.cluster.
func TestCLIInspectOfflineCluster(t *testing.T) {
	c := testutil.StartRedisCluster(t, 3)
	ctx := context.Background()
	spec := &joins.CDCSpec{
		Type:  joins.LeftOuter,
		Left:  joins.SideSpec{Name: "users", PK: "uid", JoinOn: "uid"},
		Right: joins.SideSpec{Name: "domains", PK: "did", JoinOn: "user_id"},
	}
	store, err := redisstore.New(ctx, redisstore.Config{Cluster: c.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Keys on every master: each snapshot's key is its user id.
	var batch []persistence.Snapshot
	for uid := range 30 {
		cdc := joins.NewCDC(spec)
		evs, err := spec.Route(record.Left, record.Change{Op: record.OpCreate, After: record.Row{"uid": uid, "name": fmt.Sprint("user-", uid)}})
		if err != nil || len(evs) != 1 {
			t.Fatal(err)
		}
		cdc.OnEvent(evs[0], nil)
		batch = append(batch, persistence.Snapshot{Job: "users-domains", Key: record.Key(fmt.Sprint(uid)),
			State: statetest.JoinState(t, cdc.Snapshot()), Offsets: record.OffsetsOf(map[string]int64{"cdc/0": int64(100 + uid)})})
	}
	if err := store.Save(ctx, batch); err != nil {
		t.Fatal(err)
	}
	noServer := map[string]string{envServer: "http://127.0.0.1:1"}
	// One node is enough to find every key.
	for _, uid := range []int{0, 7, 29} {
		r := runCLI(t, noServer, "key", "inspect", "users-domains", fmt.Sprint(uid), "--offline",
			"--redis-cluster", c.Addrs()[uid%3], "--left-pk", "uid", "--right-pk", "did", "-o", "json")
		wantExit(t, r, 0)
		var ks admin.KeyState
		var left bytes.Buffer
		if err := json.Unmarshal([]byte(r.stdout), &ks); err != nil || ks.Offsets["cdc/0"] != int64(100+uid) ||
			json.Compact(&left, ks.Left) != nil || left.String() != fmt.Sprintf(`{"name":"user-%d","uid":%d}`, uid, uid) {
			t.Fatalf("key %d: %v:\n%s", uid, err, r.stdout)
		}
	}

	cfg := filepath.Join(t.TempDir(), "job.yaml")
	jobYAML := fmt.Sprintf(`name: users-domains
join:
  type: cdc
  mode: left
  left:  {name: users,   pk: uid, join_on: uid}
  right: {name: domains, pk: did, join_on: user_id}
state:
  store: redis
  redis: {cluster: {addrs: [%q, %q]}}
`, c.Addrs()[1], c.Addrs()[2])
	if err := os.WriteFile(cfg, []byte(jobYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, noServer, "key", "inspect", "users-domains", "12", "--offline", "--config", cfg)
	wantExit(t, r, 0)
	wantContains(t, r.stdout, "user-12", "cdc/0", "112", "read from the store")
	r = runCLI(t, noServer, "key", "inspect", "users-domains", "30", "--offline", "--config", cfg)
	wantExit(t, r, 3) // not found

	// --redis and --redis-cluster together are a usage error; --redis-cluster needs --offline.
	r = runCLI(t, noServer, "key", "inspect", "users-domains", "1", "--offline", "--redis", c.Addrs()[0], "--redis-cluster", c.Addrs()[1])
	wantExit(t, r, 2)
	r = runCLI(t, noServer, "key", "inspect", "users-domains", "1", "--redis-cluster", c.Addrs()[1])
	wantExit(t, r, 2)
}

// TestCLIMembersKeyMemory: a member that reports its key memory gets a line
// with the accounted bytes, the budget and the passivations by cause.
func TestCLIMembersKeyMemory(t *testing.T) {
	var b strings.Builder
	membersTable(&b, []admin.Member{{ID: "id-1", Name: "node-1", Status: "alive", Self: true, KeysActive: 3,
		Memory: &admin.KeyMemory{BudgetBytes: 64 << 20, AccountedBytes: 3 << 20, Activations: 40,
			Passivations: map[string]int64{"idle": 2, "budget": 35}}}})
	want := "key memory of node-1: 3.0 MiB accounted of a 64.0 MiB budget; 40 activations; passivations: idle 2, budget 35, request 0, stopped 0"
	if !strings.Contains(b.String(), want) {
		t.Errorf("members output:\n%s\nwant a line\n%s", b.String(), want)
	}
}
