package admin

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/joinery/joinery/console"
	bearertok "github.com/joinery/joinery/internal/bearer"
	"github.com/joinery/joinery/internal/bindaddr"
)

// DefaultAddr is where the admin server listens when ServerConfig.Addr is
// empty, and where joinctl looks by default.
const DefaultAddr = "127.0.0.1:8081"

// DefaultTimeout bounds one Backend call when ServerConfig.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// MaxHot is the largest n GET /v1/jobs/{job}/hot accepts.
const MaxHot = 1000

// MaxKeyBytes is the longest key the /v1 key routes accept; a longer one is
// answered 414 before any backend call.
const MaxKeyBytes = 1024

// Timeouts of the admin http.Server: a client that sends its headers or
// reads its answer slowly holds a connection this long at most.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second
	// WriteTimeout leaves room for a 60 s /debug/pprof/profile.
	WriteTimeout = 2 * time.Minute
	IdleTimeout  = 2 * time.Minute
)

// ErrInsecure is returned (wrapped) by Start when the server would listen off
// loopback without any token and without ServerConfig.Insecure.
var ErrInsecure = errors.New("admin: refusing to serve the admin API off loopback without a token")

// ServerConfig configures NewServer. A zero field means its default.
//
// Access: /healthz and /readyz are always open (probes), and so is the
// console's page under /ui/ (no data: it asks for a token). /metrics is
// open unless MetricsToken is set. Bearer tokens have three scopes, each
// including the ones below: MetricsToken allows /metrics, ReadToken also
// the read-only /v1 routes and the console's data (/ui/api/), Token (the
// admin scope) everything. A token of too small a scope is 403 (a read
// token on a write action or pprof, a metrics token on a read route), a
// missing or unknown token 401. The "Bearer" scheme is matched
// case-insensitively. Without any token the read routes and
// pprof are open, but only while the server binds to loopback
// (bindaddr.Loopback of Addr) or Insecure is set: off loopback Start refuses
// with ErrInsecure. Write actions always need Token.
type ServerConfig struct {
	// Addr is the host:port to listen on (DefaultAddr when empty; port 0
	// picks a free port, see Server.Addr).
	Addr string
	// Token is the admin-scope bearer token: every /v1 route, the write
	// actions (passivate, evict) and /debug/pprof.
	Token string
	// ReadToken is the read-scope bearer token: the read-only /v1 routes.
	ReadToken string
	// MetricsToken, when set, is required on /metrics (a scraper's
	// bearer token); empty: /metrics is open.
	MetricsToken string
	// Insecure lets a server bound off loopback serve reads without a
	// token. Never in production.
	Insecure bool
	// TLS, when set, serves HTTPS with it (certificates, and client
	// certificate checks if it asks for them).
	TLS *tls.Config
	// Pprof mounts net/http/pprof under /debug/pprof when true (default off).
	Pprof bool
	// Backend answers the /v1 routes and /readyz. When nil, /readyz answers
	// 503 and /v1 routes 503 (a server started before its node).
	Backend Backend
	// Metrics is served on /metrics. When nil the server makes its own
	// (NewMetrics), available from Server.Metrics.
	Metrics *Metrics
	// Console is the read-only web console (a *console.Console over the
	// registry of Metrics, which the node builds), mounted under
	// console.Prefix: its page open, its data (console.APIPrefix) under the
	// read scope. When nil there is no console (/ui/ is 404).
	Console http.Handler
	// Logger receives request errors and write actions. Default slog.Default().
	Logger *slog.Logger
	// Timeout bounds each Backend call (DefaultTimeout when zero).
	Timeout time.Duration
}

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

// Server is the admin HTTP server of one node. Its methods are safe for
// concurrent use.
type Server struct {
	cfg     ServerConfig
	log     *slog.Logger
	handler http.Handler

	mu struct {
		sync.Mutex
		srv      *http.Server
		ln       net.Listener
		done     chan struct{} // closed when Serve returned
		shutdown bool
	}
}

// NewServer builds a server; Start makes it listen. It never modifies cfg.
func NewServer(cfg ServerConfig) *Server {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	s.handler = s.routes()
	return s
}

// Metrics returns the collectors the server serves on /metrics.
func (s *Server) Metrics() *Metrics { return s.cfg.Metrics }

// Handler returns the server's routes, for tests and for mounting on another
// server.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("GET /readyz", s.handleReadyz)
	mux.Handle("GET /metrics", s.metrics(s.cfg.Metrics.Handler()))
	// The read-only web console: its page (HTML, CSS, JavaScript, no data)
	// is open so that it can ask for a token; its data needs the read
	// scope, like the /v1 routes it also reads.
	if ui := s.cfg.Console; ui != nil {
		mux.Handle("GET "+console.Prefix, ui)
		mux.Handle("GET "+console.APIPrefix, s.authed(scopeRead, ui))
	}

	mux.Handle("GET /v1/members", s.read(s.handleMembers))
	mux.Handle("GET /v1/jobs/{job}/keys/{key}/location", s.read(keyed(s.handleLocate)))
	mux.Handle("GET /v1/jobs/{job}/keys/{key}", s.read(keyed(s.handleInspect)))
	mux.Handle("GET /v1/jobs/{job}/keys/{key}/why", s.read(keyed(s.handleWhy)))
	mux.Handle("GET /v1/jobs/{job}/watermarks", s.read(s.handleWatermarks))
	mux.Handle("GET /v1/jobs/{job}/hot", s.read(s.handleHot))
	mux.Handle("POST /v1/jobs/{job}/keys/{key}/passivate", s.write("passivate", KeyActions.Passivate))
	mux.Handle("POST /v1/jobs/{job}/keys/{key}/evict", s.write("evict", KeyActions.Evict))
	s.gossipKeyRoutes(mux) // gossipkeys.go

	if s.cfg.Pprof {
		mux.Handle("/debug/pprof/", s.authed(scopeAdmin, http.HandlerFunc(pprof.Index)))
		mux.Handle("/debug/pprof/cmdline", s.authed(scopeAdmin, http.HandlerFunc(pprof.Cmdline)))
		mux.Handle("/debug/pprof/profile", s.authed(scopeAdmin, http.HandlerFunc(pprof.Profile)))
		mux.Handle("/debug/pprof/symbol", s.authed(scopeAdmin, http.HandlerFunc(pprof.Symbol)))
		mux.Handle("/debug/pprof/trace", s.authed(scopeAdmin, http.HandlerFunc(pprof.Trace)))
	}
	return mux
}

// Start listens on the configured address and serves in a goroutine that
// Shutdown waits for. It returns the listen error, if any.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.shutdown {
		return http.ErrServerClosed
	}
	if s.mu.srv != nil {
		return errors.New("admin: server already started")
	}
	if err := CheckAccess(s.cfg); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("admin: listen %s: %w", s.cfg.Addr, err)
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS.Clone())
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	s.mu.srv, s.mu.ln, s.mu.done = srv, ln, done
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin: serve", "addr", ln.Addr().String(), "err", err)
		}
	}()
	s.log.Info("admin: listening", "addr", ln.Addr().String(), "tls", s.cfg.TLS != nil, "pprof", s.cfg.Pprof,
		"read_token", s.cfg.ReadToken != "", "admin_token", s.cfg.Token != "", "open", s.cfg.open(), "metrics_token", s.cfg.MetricsToken != "")
	return nil
}

// Addr is the address the server listens on (with the port chosen when
// ServerConfig.Addr asked for port 0), or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ln == nil {
		return ""
	}
	return s.mu.ln.Addr().String()
}

// Shutdown stops accepting connections, waits for in-flight requests (until
// ctx ends) and for the serving goroutine. It is idempotent; after it Start
// fails.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.mu.shutdown = true
	srv, done := s.mu.srv, s.mu.done
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close() // ctx ended: drop what is left
	}
	<-done
	return err
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if l, ok := s.cfg.Backend.(Liveness); ok {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		err := l.Live(ctx)
		cancel()
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "restart needed: "+err.Error()+"\n")
			return
		}
	}
	_, _ = io.WriteString(w, "ok\n")
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	var err error
	if s.cfg.Backend == nil {
		err = errors.New("node not started")
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		err = s.cfg.Backend.Ready(ctx)
		cancel()
	}
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "not ready: "+err.Error()+"\n")
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

// apiFunc answers one /v1 request: a value to encode as JSON (nil for 204)
// or an error mapped by errorStatus.
type apiFunc func(ctx context.Context, b Backend, r *http.Request) (any, error)

// errBadRequest marks a client error in a request's parameters (400).
type errBadRequest struct{ msg string }

func (e errBadRequest) Error() string { return e.msg }

// errUnimplemented is answered for a missing Backend extension (501).
type errUnimplemented struct{ what string }

func (e errUnimplemented) Error() string { return "this node does not support " + e.what }

var errNoBackend = errors.New("node not started")

// read wraps a read-only route: read or admin scope.
func (s *Server) read(f apiFunc) http.Handler {
	return s.authed(scopeRead, s.api(f))
}

// keyed refuses a key over MaxKeyBytes with 414 before f runs.
func keyed(f apiFunc) apiFunc {
	return func(ctx context.Context, b Backend, r *http.Request) (any, error) {
		if len(r.PathValue("key")) > MaxKeyBytes {
			return nil, errKeyTooLong
		}
		return f(ctx, b, r)
	}
}

// errKeyTooLong is answered 414.
var errKeyTooLong = fmt.Errorf("key longer than %d bytes", MaxKeyBytes)

// write wraps a write action on a key: admin scope only, refused without a
// configured admin token, and logged.
func (s *Server) write(action string, do func(KeyActions, context.Context, string, string) error) http.Handler {
	f := func(ctx context.Context, b Backend, r *http.Request) (any, error) {
		job, key := r.PathValue("job"), r.PathValue("key")
		ka, ok := b.(KeyActions)
		if !ok {
			return nil, errUnimplemented{"key actions (passivate, evict)"}
		}
		err := do(ka, ctx, job, key)
		lvl := slog.LevelInfo
		if err != nil {
			lvl = slog.LevelWarn
		}
		s.log.Log(ctx, lvl, "admin: key action", "action", action, "job", job, "key", key, "remote", r.RemoteAddr, "err", err)
		return nil, err
	}
	guarded := s.authed(scopeAdmin, s.api(keyed(f)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token == "" {
			s.log.Warn("admin: write action refused: no token configured", "path", r.URL.Path, "remote", r.RemoteAddr)
			writeError(w, http.StatusForbidden, "write actions are disabled: the server has no admin token configured")
			return
		}
		guarded.ServeHTTP(w, r)
	})
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

// api runs f with the backend and a bounded context and writes its answer.
func (s *Server) api(f apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Backend == nil {
			writeError(w, http.StatusServiceUnavailable, errNoBackend.Error())
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		v, err := f(ctx, s.cfg.Backend, r)
		if err != nil {
			code := errorStatus(err)
			if code >= 500 && code != http.StatusNotImplemented {
				s.log.Warn("admin: request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
			}
			writeError(w, code, err.Error())
			return
		}
		if v == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

// errorStatus maps an error of a Backend or a handler to an HTTP status.
func errorStatus(err error) int {
	var bad errBadRequest
	var unimpl errUnimplemented
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest
	case errors.Is(err, errKeyTooLong):
		return http.StatusRequestURITooLong
	case errors.As(err, &unimpl), errors.Is(err, errors.ErrUnsupported):
		return http.StatusNotImplemented
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	default:
		return http.StatusInternalServerError
	}
}

func (s *Server) handleMembers(ctx context.Context, b Backend, _ *http.Request) (any, error) {
	ms, err := b.Members(ctx)
	if ms == nil {
		ms = []Member{}
	}
	return ms, err
}

func (s *Server) handleLocate(ctx context.Context, b Backend, r *http.Request) (any, error) {
	loc, err := b.Locate(ctx, r.PathValue("job"), r.PathValue("key"))
	return loc, err
}

func (s *Server) handleInspect(ctx context.Context, b Backend, r *http.Request) (any, error) {
	ks, err := b.Inspect(ctx, r.PathValue("job"), r.PathValue("key"))
	return ks, err
}

func (s *Server) handleWhy(ctx context.Context, b Backend, r *http.Request) (any, error) {
	ex, ok := b.(Explainer)
	if !ok {
		return nil, errUnimplemented{"key why"}
	}
	why, err := ex.Why(ctx, r.PathValue("job"), r.PathValue("key"))
	if err != nil {
		return nil, err
	}
	if why.Waits == nil {
		why.Waits = []Wait{}
	}
	return why, nil
}

func (s *Server) handleWatermarks(ctx context.Context, b Backend, r *http.Request) (any, error) {
	wm, ok := b.(Watermarker)
	if !ok {
		return nil, errUnimplemented{"watermarks"}
	}
	job := r.PathValue("job")
	parts, global, err := wm.Watermarks(ctx, job)
	if err != nil {
		return nil, err
	}
	if parts == nil {
		parts = []Watermark{}
	}
	return Watermarks{Job: job, Global: global, Partitions: parts}, nil
}

func (s *Server) handleHot(ctx context.Context, b Backend, r *http.Request) (any, error) {
	n := 10
	if q := r.URL.Query().Get("n"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil || v < 1 || v > MaxHot {
			return nil, errBadRequest{fmt.Sprintf("n: want an integer from 1 to %d (got %q)", MaxHot, q)}
		}
		n = v
	}
	hk, ok := b.(HotKeys)
	if !ok {
		return nil, errUnimplemented{"hot keys"}
	}
	keys, err := hk.Hot(ctx, r.PathValue("job"), n)
	if err != nil {
		return nil, err
	}
	if keys == nil {
		keys = []HotKey{}
	}
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys, nil
}

// ErrorBody is the JSON body of every error answer of the /v1 routes.
type ErrorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorBody{Error: "admin: encode answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
