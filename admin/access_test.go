package admin_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/joinery/joinery/admin"
)

// startOn starts a real admin server on addr (port 0) and returns the URL
// to reach it over 127.0.0.1, whatever host it bound.
func startOn(t *testing.T, cfg admin.ServerConfig) string {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	s := admin.NewServer(cfg)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	_, port, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return "http://127.0.0.1:" + port
}

// TestAdminAccessOffLoopback binds the server to 0.0.0.0 (off loopback, by
// its configured address) and calls it over 127.0.0.1: every /v1 route and
// pprof need a token, a read token is refused where the admin scope is
// needed, and the probes stay open.
func TestAdminAccessOffLoopback(t *testing.T) {
	fb := &fakeBackend{}
	base := startOn(t, admin.ServerConfig{Addr: "0.0.0.0:0", Backend: fb, Pprof: true, ReadToken: "r34d", Token: "4dm1n"})
	for _, c := range []struct {
		name, method, path, token string
		want                      int
	}{
		{"members without token", "GET", "/v1/members", "", 401},
		{"inspect without token", "GET", "/v1/jobs/j/keys/1", "", 401},
		{"location without token", "GET", "/v1/jobs/j/keys/1/location", "", 401},
		{"why without token", "GET", "/v1/jobs/j/keys/1/why", "", 401},
		{"watermarks without token", "GET", "/v1/jobs/j/watermarks", "", 401},
		{"hot without token", "GET", "/v1/jobs/j/hot", "", 401},
		{"pprof without token", "GET", "/debug/pprof/", "", 401},
		{"cmdline without token", "GET", "/debug/pprof/cmdline", "", 401},
		{"passivate without token", "POST", "/v1/jobs/j/keys/1/passivate", "", 401},
		{"members wrong token", "GET", "/v1/members", "guess", 401},
		{"members read token", "GET", "/v1/members", "r34d", 200},
		{"inspect read token", "GET", "/v1/jobs/j/keys/1", "r34d", 200},
		{"inspect admin token", "GET", "/v1/jobs/j/keys/1", "4dm1n", 200},
		{"passivate read token", "POST", "/v1/jobs/j/keys/1/passivate", "r34d", 403},
		{"evict read token", "POST", "/v1/jobs/j/keys/1/evict", "r34d", 403},
		{"pprof read token", "GET", "/debug/pprof/", "r34d", 403},
		{"pprof admin token", "GET", "/debug/pprof/", "4dm1n", 200},
		{"passivate admin token", "POST", "/v1/jobs/j/keys/1/passivate", "4dm1n", 204},
		{"100 KB key", "GET", "/v1/jobs/j/keys/" + strings.Repeat("k", 100<<10), "r34d", 414},
		{"healthz", "GET", "/healthz", "", 200},
		{"readyz", "GET", "/readyz", "", 200},
		{"metrics", "GET", "/metrics", "", 200},
	} {
		a := call(t, c.method, base+c.path, c.token)
		if a.code != c.want {
			t.Errorf("%s: %s %s = %d, want %d (%s)", c.name, c.method, c.path, a.code, c.want, strings.TrimSpace(a.body))
		}
	}
	if got := strings.Join(fb.Actions(), ","); got != "passivate j/1" {
		t.Errorf("actions %q: only the admin token's passivate may act", got)
	}
}

// TestAdminRefusesOffLoopbackWithoutToken: off loopback with no token the
// server does not start, unless insecure is explicit; on loopback it does.
func TestAdminRefusesOffLoopbackWithoutToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		s := admin.NewServer(admin.ServerConfig{Addr: addr, Backend: &fakeBackend{}, Logger: slog.New(slog.DiscardHandler)})
		err := s.Start()
		if err == nil {
			_ = s.Shutdown(context.Background())
		}
		if !errors.Is(err, admin.ErrInsecure) {
			t.Errorf("Start on %s without tokens: %v, want ErrInsecure", addr, err)
		}
	}
	base := startOn(t, admin.ServerConfig{Addr: "0.0.0.0:0", Backend: &fakeBackend{}, Insecure: true})
	wantCode(t, call(t, "GET", base+"/v1/members", ""), 200)
	wantJSONError(t, call(t, "POST", base+"/v1/jobs/j/keys/1/evict", ""), 403, "no admin token")
	base = startOn(t, admin.ServerConfig{Addr: "127.0.0.1:0", Backend: &fakeBackend{}})
	wantCode(t, call(t, "GET", base+"/v1/members", ""), 200)
	// A token alone is enough off loopback.
	base = startOn(t, admin.ServerConfig{Addr: "0.0.0.0:0", Backend: &fakeBackend{}, ReadToken: "r"})
	wantCode(t, call(t, "GET", base+"/v1/members", ""), 401)
	wantCode(t, call(t, "GET", base+"/v1/members", "r"), 200)
}

// TestAdminLongKey: a key over MaxKeyBytes is 414 on every key route, before
// the backend sees it (fakeBackend would answer 404 or act).
func TestAdminLongKey(t *testing.T) {
	fb := &fakeBackend{}
	ts := newTestServer(t, admin.ServerConfig{Backend: fb, Token: "s"})
	long := strings.Repeat("k", admin.MaxKeyBytes+1)
	for _, p := range []string{"", "/location", "/why"} {
		wantCode(t, call(t, "GET", ts.URL+"/v1/jobs/j/keys/"+long+p, "s"), 414)
	}
	for _, act := range []string{"passivate", "evict"} {
		wantCode(t, call(t, "POST", ts.URL+"/v1/jobs/j/keys/"+long+"/"+act, "s"), 414)
	}
	if got := fb.Actions(); len(got) != 0 {
		t.Errorf("backend acted on a long key: %v", got)
	}
	wantCode(t, call(t, "GET", ts.URL+"/v1/jobs/j/keys/"+strings.Repeat("k", 100*1024), "s"), 414)
	// At the limit the key reaches the backend (which does not know it).
	wantCode(t, call(t, "GET", ts.URL+"/v1/jobs/j/keys/"+long[1:], "s"), 404)
}

// TestAdminMetricsToken: with a metrics token /metrics needs it; the API
// tokens do not open it.
func TestAdminMetricsToken(t *testing.T) {
	ts := newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}, Token: "a", MetricsToken: "m"})
	wantCode(t, call(t, "GET", ts.URL+"/metrics", ""), 401)
	wantCode(t, call(t, "GET", ts.URL+"/metrics", "a"), 401)
	wantCode(t, call(t, "GET", ts.URL+"/metrics", "m"), 200)
	wantCode(t, call(t, "GET", ts.URL+"/v1/members", "m"), 401)
	wantCode(t, call(t, "GET", ts.URL+"/healthz", ""), 200)
}

func TestAdminCheckAccess(t *testing.T) {
	for _, c := range []struct {
		cfg  admin.ServerConfig
		want bool // refused
	}{
		{admin.ServerConfig{}, false}, // DefaultAddr is loopback
		{admin.ServerConfig{Addr: "localhost:1"}, false},
		{admin.ServerConfig{Addr: "0.0.0.0:1"}, true},
		{admin.ServerConfig{Addr: "10.1.2.3:1"}, true},
		{admin.ServerConfig{Addr: "0.0.0.0:1", Token: "t"}, false},
		{admin.ServerConfig{Addr: "0.0.0.0:1", ReadToken: "t"}, false},
		{admin.ServerConfig{Addr: "0.0.0.0:1", MetricsToken: "t"}, true},
		{admin.ServerConfig{Addr: "0.0.0.0:1", Insecure: true}, false},
	} {
		if err := admin.CheckAccess(c.cfg); errors.Is(err, admin.ErrInsecure) != c.want {
			t.Errorf("CheckAccess(addr %q): %v, want refused=%v", c.cfg.Addr, err, c.want)
		}
	}
}
