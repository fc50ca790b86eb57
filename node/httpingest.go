package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connectors/all"
	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/job"
)

// httpIngest is the node's HTTP ingest endpoint (job.Ingest).
type httpIngest struct {
	srv *http.Server
	ln  net.Listener
	app interface{ Close() error }
}

// startIngest serves spec.Ingest; refused is called with the reason of each
// request refused for its contents (may be nil).
func startIngest(spec *job.Spec, refused func(source, reason string)) (*httpIngest, error) {
	var src job.Source
	for _, s := range spec.Sources {
		if s.Name == spec.Ingest.Source {
			src = s
		}
	}
	k, entry, err := all.Sources.Decode("ingest.source", src.Type, src)
	if err != nil {
		return nil, err
	}
	if k.Append == nil {
		return nil, fmt.Errorf("ingest.source: %q is not a %s source", src.Name, all.Sources.Where(func(k connectors.SourceKind) bool { return k.Append != nil }))
	}
	app, err := k.Append(context.Background(), entry, connectors.Env{Resolve: spec.Resolve})
	if err != nil {
		return nil, fmt.Errorf("ingest source %s: %w", src.Name, err)
	}
	in := spec.Ingest
	cfg := ingest.Config{Appender: app, MaxBodyBytes: in.MaxBodyBytes, MaxInflight: in.MaxInflight,
		BodyTimeout: in.BodyTimeout, Token: in.Token}
	if refused != nil {
		cfg.OnRefused = func(reason string) { refused(src.Name, reason) }
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tc, err := spec.ServerTLSConfig(in.TLS)
	if err != nil {
		return nil, fmt.Errorf("ingest.tls: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ingest", ingest.Handler(cfg))
	ln, err := net.Listen("tcp", in.Addr)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	body := in.BodyTimeout
	if body <= 0 {
		body = ingest.DefaultBodyTimeout
	}
	// ReadTimeout covers headers and body (the handler's own body deadline
	// answers 408 first); WriteTimeout covers the append to the log.
	h := &httpIngest{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10*time.Second + body + time.Second,
		WriteTimeout: 10*time.Second + body + time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}, ln: ln}
	if c, ok := app.(interface{ Close() error }); ok {
		h.app = c
	}
	go func() {
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener failed; Shutdown reports nothing more
		}
	}()
	return h, nil
}

func (h *httpIngest) addr() string { return h.ln.Addr().String() }

func (h *httpIngest) shutdown(ctx context.Context) error {
	err := h.srv.Shutdown(ctx)
	if h.app != nil {
		err = errors.Join(err, h.app.Close())
	}
	return err
}
