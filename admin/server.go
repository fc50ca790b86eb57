package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/joinery/joinery/console"
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
