package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/console"
)

// fakeBackend is a test stand-in for a node: it serves canned status data for
// job "j" and records key actions. The real Backend is the node.
type fakeBackend struct {
	readyErr error
	liveErr  error

	mu      sync.Mutex
	actions []string // "passivate j/k", ...
}

var (
	_ admin.Backend     = (*fakeBackend)(nil)
	_ admin.Watermarker = (*fakeBackend)(nil)
	_ admin.Explainer   = (*fakeBackend)(nil)
	_ admin.HotKeys     = (*fakeBackend)(nil)
	_ admin.KeyActions  = (*fakeBackend)(nil)
	_ admin.Liveness    = (*fakeBackend)(nil)
)

func (f *fakeBackend) Live(context.Context) error { return f.liveErr }

func (f *fakeBackend) job(job string) error {
	if job != "j" {
		return fmt.Errorf("job %q: %w", job, admin.ErrNotFound)
	}
	return nil
}

func (f *fakeBackend) Members(context.Context) ([]admin.Member, error) {
	return []admin.Member{
		{ID: "id-1", Name: "n1", Address: "10.0.0.1:7000", GossipAddr: "10.0.0.1:7946", Status: "alive", Self: true, KeysActive: 3, Uptime: time.Hour},
		{ID: "id-2", Name: "n2", Address: "10.0.0.2:7000", GossipAddr: "10.0.0.2:7946", Status: "alive", KeysActive: -1},
	}, nil
}

func (f *fakeBackend) Locate(_ context.Context, job, key string) (admin.Location, error) {
	if err := f.job(job); err != nil {
		return admin.Location{}, err
	}
	return admin.Location{Job: job, Key: key, Node: "10.0.0.2:7000", Active: key == "1"}, nil
}

func (f *fakeBackend) Inspect(_ context.Context, job, key string) (admin.KeyState, error) {
	if err := f.job(job); err != nil {
		return admin.KeyState{}, err
	}
	if key != "1" && key != "a/b" {
		return admin.KeyState{}, fmt.Errorf("key %q: %w", key, admin.ErrNotFound)
	}
	return admin.KeyState{
		Job: job, Key: key, Node: "10.0.0.2:7000",
		Left:    json.RawMessage(`{"id":1,"name":"ann"}`),
		Rights:  []json.RawMessage{json.RawMessage(`{"id":10,"user_id":1}`), json.RawMessage(`{"id":11,"user_id":1}`)},
		Offsets: map[string]int64{"cdc/0": 41},
		Epoch:   2, Timers: []int64{1000, 2000}, Late: 1,
	}, nil
}

func (f *fakeBackend) Ready(context.Context) error { return f.readyErr }

func (f *fakeBackend) Watermarks(_ context.Context, job string) ([]admin.Watermark, int64, error) {
	if err := f.job(job); err != nil {
		return nil, 0, err
	}
	return []admin.Watermark{
		{Source: "cdc", Partition: "cdc/0", Watermark: 1000, MaxTs: 1500, LagMs: 250},
		{Source: "cdc", Partition: "cdc/1", Watermark: 900, MaxTs: 1400, LagMs: 350, Idle: true},
	}, 900, nil
}

func (f *fakeBackend) Why(_ context.Context, job, key string) (admin.Why, error) {
	if err := f.job(job); err != nil {
		return admin.Why{}, err
	}
	if key != "1" {
		return admin.Why{}, fmt.Errorf("key %q: %w", key, admin.ErrNotFound)
	}
	held := admin.Watermark{Source: "cdc", Partition: "cdc/0", Watermark: 900, MaxTs: 1400, LagMs: 350}
	return admin.Why{Job: job, Key: key, Node: "10.0.0.2:7000", Watermark: 900, KeyWatermark: 800, HeldBy: &held,
		Waits: []admin.Wait{{What: "window [0,1000) fires: 1 left, 2 right", NeedsWatermark: 999, Behind: 99}}}, nil
}

func (f *fakeBackend) Hot(_ context.Context, job string, n int) ([]admin.HotKey, error) {
	if err := f.job(job); err != nil {
		return nil, err
	}
	var out []admin.HotKey
	for i := range min(n, 5) {
		out = append(out, admin.HotKey{Job: job, Key: fmt.Sprint(i), EventsPerSec: float64(100 - i), StateBytes: int64(1000 * i)})
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
	if err := f.job(job); err != nil {
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

// onlyBackend hides the extension methods: it implements Backend only.
type onlyBackend struct{ admin.Backend }

func newTestServer(t *testing.T, cfg admin.ServerConfig) *httptest.Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// The console, as a node wires it: over the registry the server serves.
	if cfg.Metrics == nil {
		cfg.Metrics = admin.NewMetrics()
	}
	ui := console.New(cfg.Metrics.Registry(), console.Options{})
	t.Cleanup(ui.Close)
	cfg.Console = ui
	ts := httptest.NewServer(admin.NewServer(cfg).Handler())
	t.Cleanup(ts.Close)
	return ts
}

type answer struct {
	code int
	body string
	hdr  http.Header
}

func call(t *testing.T, method, u, token string) answer {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, string(b), resp.Header}
}

func wantCode(t *testing.T, a answer, code int) {
	t.Helper()
	if a.code != code {
		t.Fatalf("status %d, want %d; body %q", a.code, code, a.body)
	}
}

func wantJSONError(t *testing.T, a answer, code int, contains string) {
	t.Helper()
	wantCode(t, a, code)
	var eb admin.ErrorBody
	if err := json.Unmarshal([]byte(a.body), &eb); err != nil || eb.Error == "" {
		t.Fatalf("body %q is not a JSON error (%v)", a.body, err)
	}
	if !strings.Contains(eb.Error, contains) {
		t.Fatalf("error %q does not contain %q", eb.Error, contains)
	}
}

func TestAdminHealthz(t *testing.T) {
	ts := newTestServer(t, admin.ServerConfig{}) // no backend: the process still lives
	a := call(t, "GET", ts.URL+"/healthz", "")
	wantCode(t, a, 200)
	if strings.TrimSpace(a.body) != "ok" {
		t.Fatalf("body %q", a.body)
	}
	ts = newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}})
	wantCode(t, call(t, "GET", ts.URL+"/healthz", ""), 200)
	ts = newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{liveErr: errors.New("declared dead by n1")}, Token: "s"})
	a = call(t, "GET", ts.URL+"/healthz", "") // probes need no token
	wantCode(t, a, 503)
	if !strings.Contains(a.body, "declared dead by n1") {
		t.Fatalf("body %q lacks the reason", a.body)
	}
}

func TestAdminReadyz(t *testing.T) {
	ts := newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}})
	wantCode(t, call(t, "GET", ts.URL+"/readyz", ""), 200)

	ts = newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{readyErr: errors.New("store unreachable")}, Token: "s"})
	a := call(t, "GET", ts.URL+"/readyz", "") // probes need no token
	wantCode(t, a, 503)
	if !strings.Contains(a.body, "store unreachable") {
		t.Fatalf("body %q lacks the reason", a.body)
	}

	ts = newTestServer(t, admin.ServerConfig{})
	wantCode(t, call(t, "GET", ts.URL+"/readyz", ""), 503)
	wantJSONError(t, call(t, "GET", ts.URL+"/v1/members", ""), 503, "not started")
}

func decode[T any](t *testing.T, a answer) T {
	t.Helper()
	wantCode(t, a, 200)
	if ct := a.hdr.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var v T
	if err := json.Unmarshal([]byte(a.body), &v); err != nil {
		t.Fatalf("decode %q: %v", a.body, err)
	}
	return v
}

func TestAdminRoutes(t *testing.T) {
	ts := newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}})
	ms := decode[[]admin.Member](t, call(t, "GET", ts.URL+"/v1/members", ""))
	if len(ms) != 2 || !ms[0].Self || ms[0].Uptime != time.Hour || ms[1].GossipAddr != "10.0.0.2:7946" {
		t.Fatalf("members %+v", ms)
	}
	loc := decode[admin.Location](t, call(t, "GET", ts.URL+"/v1/jobs/j/keys/1/location", ""))
	if loc != (admin.Location{Job: "j", Key: "1", Node: "10.0.0.2:7000", Active: true}) {
		t.Fatalf("location %+v", loc)
	}
	ks := decode[admin.KeyState](t, call(t, "GET", ts.URL+"/v1/jobs/j/keys/1", ""))
	if ks.Key != "1" || string(ks.Left) != `{"id":1,"name":"ann"}` || len(ks.Rights) != 2 || ks.Offsets["cdc/0"] != 41 || ks.Epoch != 2 || len(ks.Timers) != 2 {
		t.Fatalf("key state %+v", ks)
	}
	// A key with a slash travels escaped in one path segment.
	ks = decode[admin.KeyState](t, call(t, "GET", ts.URL+"/v1/jobs/j/keys/"+url.PathEscape("a/b"), ""))
	if ks.Key != "a/b" {
		t.Fatalf("escaped key arrived as %q", ks.Key)
	}
	wm := decode[admin.Watermarks](t, call(t, "GET", ts.URL+"/v1/jobs/j/watermarks", ""))
	if wm.Job != "j" || wm.Global != 900 || len(wm.Partitions) != 2 || !wm.Partitions[1].Idle {
		t.Fatalf("watermarks %+v", wm)
	}
	why := decode[admin.Why](t, call(t, "GET", ts.URL+"/v1/jobs/j/keys/1/why", ""))
	if why.HeldBy == nil || why.HeldBy.Partition != "cdc/0" || len(why.Waits) != 1 || why.Waits[0].NeedsWatermark != 999 || why.KeyWatermark != 800 {
		t.Fatalf("why %+v", why)
	}
	hot := decode[[]admin.HotKey](t, call(t, "GET", ts.URL+"/v1/jobs/j/hot", ""))
	if len(hot) != 5 || hot[0].EventsPerSec != 100 {
		t.Fatalf("hot %+v", hot)
	}
	hot = decode[[]admin.HotKey](t, call(t, "GET", ts.URL+"/v1/jobs/j/hot?n=2", ""))
	if len(hot) != 2 {
		t.Fatalf("hot n=2: %+v", hot)
	}
	for _, q := range []string{"0", "x", "1001", "-1"} {
		wantJSONError(t, call(t, "GET", ts.URL+"/v1/jobs/j/hot?n="+q, ""), 400, "n:")
	}
	wantCode(t, call(t, "DELETE", ts.URL+"/v1/members", ""), 405)
}

func TestAdminNotFound(t *testing.T) {
	ts := newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}, Token: "s"})
	for _, p := range []string{
		"/v1/jobs/nope/keys/1/location", "/v1/jobs/nope/keys/1", "/v1/jobs/j/keys/2",
		"/v1/jobs/nope/watermarks", "/v1/jobs/nope/hot", "/v1/jobs/j/keys/2/why",
	} {
		wantJSONError(t, call(t, "GET", ts.URL+p, "s"), 404, "not found")
	}
	wantJSONError(t, call(t, "POST", ts.URL+"/v1/jobs/nope/keys/1/evict", "s"), 404, "not found")
}

func TestAdminUnimplemented(t *testing.T) {
	ts := newTestServer(t, admin.ServerConfig{Backend: onlyBackend{&fakeBackend{}}, Token: "s"})
	wantCode(t, call(t, "GET", ts.URL+"/v1/members", "s"), 200)
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/jobs/j/watermarks"}, {"GET", "/v1/jobs/j/hot"}, {"GET", "/v1/jobs/j/keys/1/why"},
		{"POST", "/v1/jobs/j/keys/1/passivate"}, {"POST", "/v1/jobs/j/keys/1/evict"},
	} {
		wantJSONError(t, call(t, c.method, ts.URL+c.path, "s"), 501, "does not support")
	}
}

type slowBackend struct{ fakeBackend }

func (s *slowBackend) Members(ctx context.Context) ([]admin.Member, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

type brokenBackend struct{ fakeBackend }

func (b *brokenBackend) Members(context.Context) ([]admin.Member, error) {
	return nil, errors.New("gossip exploded")
}

func TestAdminBackendErrors(t *testing.T) {
	ts := newTestServer(t, admin.ServerConfig{Backend: &slowBackend{}, Timeout: 10 * time.Millisecond})
	wantJSONError(t, call(t, "GET", ts.URL+"/v1/members", ""), 504, "deadline")
	ts = newTestServer(t, admin.ServerConfig{Backend: &brokenBackend{}})
	wantJSONError(t, call(t, "GET", ts.URL+"/v1/members", ""), 500, "gossip exploded")
}

func TestAdminToken(t *testing.T) {
	ts := newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}, Token: "s3cret"})
	for _, p := range []string{"/v1/members", "/v1/jobs/j/keys/1", "/v1/jobs/j/watermarks", "/v1/jobs/j/hot"} {
		a := call(t, "GET", ts.URL+p, "")
		wantJSONError(t, a, 401, "token")
		if !strings.HasPrefix(a.hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%s: WWW-Authenticate %q", p, a.hdr.Get("WWW-Authenticate"))
		}
		wantJSONError(t, call(t, "GET", ts.URL+p, "wrong"), 401, "token")
		wantCode(t, call(t, "GET", ts.URL+p, "s3cret"), 200)
	}
	wantJSONError(t, call(t, "POST", ts.URL+"/v1/jobs/j/keys/1/passivate", "wrong"), 401, "token")
	// Probes and scrapes never need the token.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		wantCode(t, call(t, "GET", ts.URL+p, ""), 200)
	}
}

func TestAdminWriteActionsRefusedWithoutToken(t *testing.T) {
	fb := &fakeBackend{}
	ts := newTestServer(t, admin.ServerConfig{Backend: fb})
	wantCode(t, call(t, "GET", ts.URL+"/v1/members", ""), 200) // reads are open
	for _, act := range []string{"passivate", "evict"} {
		wantJSONError(t, call(t, "POST", ts.URL+"/v1/jobs/j/keys/1/"+act, ""), 403, "no admin token")
		wantJSONError(t, call(t, "POST", ts.URL+"/v1/jobs/j/keys/1/"+act, "anything"), 403, "no admin token")
	}
	if got := fb.Actions(); len(got) != 0 {
		t.Fatalf("backend acted: %v", got)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAdminWriteActions(t *testing.T) {
	fb := &fakeBackend{}
	var logs syncBuffer
	ts := newTestServer(t, admin.ServerConfig{Backend: fb, Token: "s", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	wantCode(t, call(t, "POST", ts.URL+"/v1/jobs/j/keys/1/passivate", "s"), 204)
	wantCode(t, call(t, "POST", ts.URL+"/v1/jobs/j/keys/"+url.PathEscape("a/b")+"/evict", "s"), 204)
	wantCode(t, call(t, "GET", ts.URL+"/v1/jobs/j/keys/1/evict", "s"), 405)
	if got, want := strings.Join(fb.Actions(), ","), "passivate j/1,evict j/a/b"; got != want {
		t.Fatalf("actions %q, want %q", got, want)
	}
	out := logs.String()
	for _, want := range []string{"action=passivate", "action=evict", "key=a/b", "remote=127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestAdminMetrics(t *testing.T) {
	m := admin.NewMetrics()
	m.RecordsIn.WithLabelValues("j", "cdc").Add(3)
	m.Outputs.WithLabelValues("j", "stdout").Inc()
	m.Rejected.WithLabelValues("j", "cdc", "json").Inc()
	m.Late.WithLabelValues("j").Inc()
	m.SkippedReplayed.WithLabelValues("j").Inc()
	m.KeysActive.WithLabelValues("j").Set(7)
	m.StateBytes.WithLabelValues("j").Set(1024)
	m.SnapshotSeconds.Observe(0.002)
	m.SnapshotBytes.Add(200)
	m.FencedWrites.WithLabelValues("j").Inc()
	m.RedisErrors.Inc()
	m.ClusterMembers.Set(3)
	m.WatermarkLag.WithLabelValues("j", "cdc", "cdc/0").Set(1.5)

	ts := newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}, Metrics: m})
	a := call(t, "GET", ts.URL+"/metrics", "")
	wantCode(t, a, 200)
	for _, fam := range []string{
		`joinery_records_in_total{job="j",source="cdc"} 3`,
		`joinery_outputs_total{job="j",sink="stdout"} 1`,
		`joinery_rejected_total{job="j",reason="json",source="cdc"} 1`,
		`joinery_late_total{job="j"} 1`,
		`joinery_skipped_replayed_total{job="j"} 1`,
		`joinery_keys_active{job="j"} 7`,
		`joinery_state_bytes{job="j"} 1024`,
		`joinery_snapshot_seconds_count 1`,
		`joinery_snapshot_bytes_total 200`,
		`joinery_fenced_writes_total{job="j"} 1`,
		`joinery_redis_errors_total 1`,
		`joinery_cluster_members 3`,
		`joinery_watermark_lag_seconds{job="j",partition="cdc/0",source="cdc"} 1.5`,
	} {
		if !strings.Contains(a.body, fam) {
			t.Errorf("/metrics lacks %s", fam)
		}
	}
	for _, line := range strings.Split(a.body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "joinery_") {
			t.Errorf("/metrics serves a foreign series (global registry?): %s", line)
		}
	}

	m.ForgetJob("j")
	a = call(t, "GET", ts.URL+"/metrics", "")
	if strings.Contains(a.body, `job="j"`) {
		t.Errorf("ForgetJob left series of job j:\n%s", a.body)
	}

	if err := m.RegisterRuntime(); err != nil {
		t.Fatal(err)
	}
	a = call(t, "GET", ts.URL+"/metrics", "")
	if !strings.Contains(a.body, "go_goroutines") {
		t.Errorf("RegisterRuntime: no go_goroutines")
	}
	// The collector's CPU and cycles (docs/operations/alerts.md, "Garbage collector").
	runtime.GC()
	a = call(t, "GET", ts.URL+"/metrics", "")
	for _, name := range []string{"go_cpu_classes_gc_total_cpu_seconds_total", "go_cpu_classes_gc_mark_assist_cpu_seconds_total", "go_cpu_classes_total_cpu_seconds_total", "go_gc_cycles_total_gc_cycles_total"} {
		if !strings.Contains(a.body, "\n"+name+" ") {
			t.Errorf("RegisterRuntime: no %s", name)
		}
	}
}

func TestAdminPprof(t *testing.T) {
	ts := newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}})
	wantCode(t, call(t, "GET", ts.URL+"/debug/pprof/", ""), 404)
	wantCode(t, call(t, "GET", ts.URL+"/debug/pprof/cmdline", ""), 404)

	ts = newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}, Pprof: true})
	wantCode(t, call(t, "GET", ts.URL+"/debug/pprof/", ""), 200)
	wantCode(t, call(t, "GET", ts.URL+"/debug/pprof/goroutine?debug=1", ""), 200)

	ts = newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}, Pprof: true, Token: "s"})
	wantCode(t, call(t, "GET", ts.URL+"/debug/pprof/", ""), 401)
	wantCode(t, call(t, "GET", ts.URL+"/debug/pprof/", "s"), 200)
}

func TestAdminStartShutdown(t *testing.T) {
	s := admin.NewServer(admin.ServerConfig{Addr: "127.0.0.1:0", Backend: &fakeBackend{}, Logger: slog.New(slog.DiscardHandler)})
	if s.Addr() != "" {
		t.Fatalf("Addr before Start: %q", s.Addr())
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if strings.HasSuffix(addr, ":0") || addr == "" {
		t.Fatalf("Addr %q: want the bound port", addr)
	}
	if err := s.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	wantCode(t, call(t, "GET", "http://"+addr+"/healthz", ""), 200)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("server still answers after Shutdown")
	}
	if err := s.Start(); err == nil {
		t.Fatal("Start after Shutdown succeeded")
	}
	// Shutdown of a server never started is fine too.
	if err := admin.NewServer(admin.ServerConfig{}).Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestAdminStartListenError(t *testing.T) {
	s := admin.NewServer(admin.ServerConfig{Addr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	s2 := admin.NewServer(admin.ServerConfig{Addr: s.Addr(), Logger: slog.New(slog.DiscardHandler)})
	if err := s2.Start(); err == nil {
		_ = s2.Shutdown(context.Background())
		t.Fatal("Start on a busy port succeeded")
	}
}
