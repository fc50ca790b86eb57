// Package httpingest is the HTTP ingest endpoint as a connector: it
// serves POST /ingest (package ingest's handler: JSON or NDJSON, 202 only
// once the append is durable, 429 with Retry-After under backpressure) on
// the job's ingest.addr and appends to the log of the source the job names
// (a source kind with an Append: redis-stream, kafka). It is registered by
// one line in connectors/all (Kind).
//
// It owns the listener, its TLS and the server's timeouts; it must not
// know which log it appends to.
package httpingest

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/ingest"
)

// Kind is HTTP ingest's registry entry (connectors/all).
var Kind = connectors.IngestKind{Type: "http", Start: Start}

// Server is a running HTTP ingest endpoint.
type Server struct {
	srv *http.Server
	ln  net.Listener
	app interface{ Close() error }
}

// Start listens on env.Addr and serves /ingest into env.Appender.
func Start(env connectors.IngestEnv) (connectors.Service, error) {
	cfg := ingest.Config{Appender: env.Appender, MaxBodyBytes: env.MaxBodyBytes, MaxInflight: env.MaxInflight,
		BodyTimeout: env.BodyTimeout, Token: env.Token, OnRefused: env.OnRefused}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/ingest", ingest.Handler(cfg))
	ln, err := net.Listen("tcp", env.Addr)
	if err != nil {
		return nil, err
	}
	if env.TLS != nil {
		ln = tls.NewListener(ln, env.TLS)
	}
	body := env.BodyTimeout
	if body <= 0 {
		body = ingest.DefaultBodyTimeout
	}
	// ReadTimeout covers headers and body (the handler's own body deadline
	// answers 408 first); WriteTimeout covers the append to the log.
	h := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10*time.Second + body + time.Second,
		WriteTimeout: 10*time.Second + body + time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}, ln: ln}
	if c, ok := env.Appender.(interface{ Close() error }); ok {
		h.app = c
	}
	go func() {
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener failed; Shutdown reports nothing more
		}
	}()
	return h, nil
}

// Addr is the address the endpoint listens on.
func (h *Server) Addr() string { return h.ln.Addr().String() }

// Shutdown stops the endpoint and closes the appender.
func (h *Server) Shutdown(ctx context.Context) error {
	err := h.srv.Shutdown(ctx)
	if h.app != nil {
		err = errors.Join(err, h.app.Close())
	}
	return err
}
