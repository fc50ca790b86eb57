package admin

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"

	bearertok "github.com/joinery/joinery/internal/bearer"
	"github.com/joinery/joinery/internal/bindaddr"
)

// ErrInsecure is returned (wrapped) by Start when the server would listen off
// loopback without any token and without ServerConfig.Insecure.
var ErrInsecure = errors.New("admin: refusing to serve the admin API off loopback without a token")

// open reports whether the read routes and pprof need no token.
func (c ServerConfig) open() bool {
	return c.Token == "" && c.ReadToken == "" && (c.Insecure || bindaddr.Loopback(c.Addr))
}

// CheckAccess returns an error wrapping ErrInsecure when cfg would serve the
// admin API off loopback with no token and without Insecure. Start calls it;
// job validation does too, so `joinery check` reports it.
func CheckAccess(cfg ServerConfig) error {
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	if cfg.Token == "" && cfg.ReadToken == "" && !cfg.Insecure && !bindaddr.Loopback(addr) {
		return fmt.Errorf("%w: %s is not a loopback address; set a read and/or admin token (or insecure: true)", ErrInsecure, addr)
	}
	return nil
}

// scope is what a route needs, and what a token allows. Each scope
// includes the ones below it: the admin token is accepted wherever the
// read token is, and both wherever the metrics token is.
type scope int

const (
	scopeMetrics scope = iota // /metrics (MetricsToken)
	scopeRead                 // the read-only /v1 routes and the console's data (ReadToken)
	scopeAdmin                // everything: write actions, gossip keys, pprof (Token)
)

// what names the token that a need asks for, for error messages.
func (need scope) what() string {
	switch need {
	case scopeMetrics:
		return "the metrics, read or admin token"
	case scopeRead:
		return "the read or admin token"
	}
	return "the admin token"
}

// bearer is the request's bearer token, "" without one.
func bearer(r *http.Request) string { return bearertok.Token(r) }

// tokenIs compares in constant time; an empty want never matches.
func tokenIs(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// scopeOf is the scope the token got allows; ok is false for no token or
// an unknown one.
func (s *Server) scopeOf(got string) (sc scope, ok bool) {
	switch {
	case got == "":
		return 0, false
	case tokenIs(got, s.cfg.Token):
		return scopeAdmin, true
	case tokenIs(got, s.cfg.ReadToken):
		return scopeRead, true
	case tokenIs(got, s.cfg.MetricsToken):
		return scopeMetrics, true
	}
	return 0, false
}

// authed lets a request through when it carries a token of scope need or
// above (or when the route is open: /metrics without MetricsToken, the
// others see ServerConfig): 401 without a known token, 403 with a token of
// a smaller scope.
func (s *Server) authed(need scope, h http.Handler) http.Handler {
	open, realm := s.cfg.open(), `Bearer realm="joinery"`
	if need == scopeMetrics {
		open, realm = s.cfg.MetricsToken == "", `Bearer realm="joinery-metrics"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open {
			h.ServeHTTP(w, r)
			return
		}
		got, ok := s.scopeOf(bearer(r))
		switch {
		case !ok:
			w.Header().Set("WWW-Authenticate", realm)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		case got < need:
			s.log.Warn("admin: token of too small a scope", "path", r.URL.Path, "remote", r.RemoteAddr, "needs", need.what())
			msg := "this needs " + need.what() + "; the read token only allows reads"
			if got == scopeMetrics {
				msg = "this needs " + need.what() + "; the metrics token only allows /metrics"
			}
			writeError(w, http.StatusForbidden, msg)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// metrics guards /metrics: open without MetricsToken; with it, the
// metrics, read or admin token.
func (s *Server) metrics(h http.Handler) http.Handler { return s.authed(scopeMetrics, h) }
