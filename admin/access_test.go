package admin_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
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

// callAuth is call with the Authorization header as given ("" for none).
func callAuth(t *testing.T, method, u, authorization string) answer {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
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

// TestAdminScopes runs every kind of route with every kind of token on a
// server with admin, read and metrics tokens: a higher scope is accepted
// wherever a lower one is (admin ⊇ read ⊇ metrics), a smaller scope is
// 403, no or an unknown token 401; the console's page is open (it holds no
// data and asks for the token), its data (/ui/api/) needs the read scope;
// the scheme "Bearer" is matched case-insensitively.
func TestAdminScopes(t *testing.T) {
	ts := newTestServer(t, admin.ServerConfig{Backend: &fakeBackend{}, Pprof: true, Token: "4dm1n", ReadToken: "r34d", MetricsToken: "m3tr1cs"})
	// The Authorization headers, by column of the table below.
	auths := []string{"", "Bearer guess", "Bearer m3tr1cs", "Bearer r34d", "Bearer 4dm1n", "bearer r34d", "BEARER 4dm1n", "r34d", "Basic r34d"}
	for _, c := range []struct {
		method, path string
		want         [9]int // by auths
	}{
		{"GET", "/healthz", [9]int{200, 200, 200, 200, 200, 200, 200, 200, 200}},
		{"GET", "/readyz", [9]int{200, 200, 200, 200, 200, 200, 200, 200, 200}},
		{"GET", "/metrics", [9]int{401, 401, 200, 200, 200, 200, 200, 401, 401}},
		{"GET", "/ui/", [9]int{200, 200, 200, 200, 200, 200, 200, 200, 200}},
		{"GET", "/ui/app.js", [9]int{200, 200, 200, 200, 200, 200, 200, 200, 200}},
		{"GET", "/ui/api/samples", [9]int{401, 401, 403, 200, 200, 200, 200, 401, 401}},
		{"HEAD", "/ui/api/samples", [9]int{401, 401, 403, 200, 200, 200, 200, 401, 401}},
		{"GET", "/ui/api/nothing", [9]int{401, 401, 403, 404, 404, 404, 404, 401, 401}},
		{"GET", "/v1/members", [9]int{401, 401, 403, 200, 200, 200, 200, 401, 401}},
		{"GET", "/v1/jobs/j/keys/1", [9]int{401, 401, 403, 200, 200, 200, 200, 401, 401}},
		{"GET", "/v1/jobs/j/keys/1/why", [9]int{401, 401, 403, 200, 200, 200, 200, 401, 401}},
		{"GET", "/v1/jobs/j/watermarks", [9]int{401, 401, 403, 200, 200, 200, 200, 401, 401}},
		{"POST", "/v1/jobs/j/keys/1/passivate", [9]int{401, 401, 403, 403, 204, 403, 204, 401, 401}},
		{"GET", "/debug/pprof/", [9]int{401, 401, 403, 403, 200, 403, 200, 401, 401}},
	} {
		for i, auth := range auths {
			a := callAuth(t, c.method, ts.URL+c.path, auth)
			if a.code != c.want[i] {
				t.Errorf("%s %s with Authorization %q = %d, want %d (%s)", c.method, c.path, auth, a.code, c.want[i], strings.TrimSpace(a.body))
			}
			if a.code == 401 && !strings.HasPrefix(a.hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s: 401 without WWW-Authenticate: Bearer", c.method, c.path)
			}
		}
	}
	// A 403 says which token the route needs.
	wantJSONError(t, call(t, "GET", ts.URL+"/ui/api/samples", "m3tr1cs"), 403, "the read or admin token")
	wantJSONError(t, call(t, "POST", ts.URL+"/v1/jobs/j/keys/1/passivate", "r34d"), 403, "the admin token")
}

// TestAdminScopesWithoutMetricsToken: /metrics stays open without a
// metrics token, while the console's data needs the read scope as soon as
// an API token is set; on loopback without any token everything is open.
func TestAdminScopesWithoutMetricsToken(t *testing.T) {
	for _, c := range []struct {
		name          string
		cfg           admin.ServerConfig
		token         string
		metrics, data int
	}{
		{"read token set, none sent", admin.ServerConfig{ReadToken: "r"}, "", 200, 401},
		{"read token set and sent", admin.ServerConfig{ReadToken: "r"}, "r", 200, 200},
		{"admin token set and sent", admin.ServerConfig{Token: "a"}, "a", 200, 200},
		{"admin token set, none sent", admin.ServerConfig{Token: "a"}, "", 200, 401},
		{"only a metrics token, on loopback", admin.ServerConfig{MetricsToken: "m"}, "", 401, 200},
		{"no token, on loopback", admin.ServerConfig{}, "", 200, 200},
	} {
		c.cfg.Backend = &fakeBackend{}
		ts := newTestServer(t, c.cfg)
		if a := call(t, "GET", ts.URL+"/metrics", c.token); a.code != c.metrics {
			t.Errorf("%s: /metrics = %d, want %d", c.name, a.code, c.metrics)
		}
		for _, p := range []string{"/ui/api/samples", "/v1/members"} {
			if a := call(t, "GET", ts.URL+p, c.token); a.code != c.data {
				t.Errorf("%s: %s = %d, want %d", c.name, p, a.code, c.data)
			}
		}
		if a := call(t, "GET", ts.URL+"/ui/", ""); a.code != 200 || !strings.Contains(a.body, "token") {
			t.Errorf("%s: /ui/ = %d, want the page", c.name, a.code)
		}
	}
}

// TestAdminWithoutConsole: a server given no console serves no /ui/ (the
// node builds the console and hands it over; admin makes none), and the
// rest of its routes as usual.
func TestAdminWithoutConsole(t *testing.T) {
	s := admin.NewServer(admin.ServerConfig{Backend: &fakeBackend{}, Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	for _, c := range []struct {
		path string
		want int
	}{{"/ui/", 404}, {"/ui/api/samples", 404}, {"/v1/members", 200}, {"/metrics", 200}} {
		if a := call(t, "GET", ts.URL+c.path, ""); a.code != c.want {
			t.Errorf("%s = %d, want %d", c.path, a.code, c.want)
		}
	}
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
