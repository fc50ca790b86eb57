package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/job"
	srckafka "github.com/joinery/joinery/sources/kafka"
)

// kafkaTLS is the TLS configuration of a Kafka block (nil without TLS):
// system roots or ca_file, and a client certificate (job.KafkaTLS).
func kafkaTLS(spec *job.Spec, k job.Kafka) (*tls.Config, error) {
	tc, err := spec.KafkaTLSConfig(k)
	if err != nil {
		return nil, fmt.Errorf("kafka.tls: %w", err)
	}
	return tc, nil
}

func kafkaSASL(k job.Kafka) *srckafka.SASL {
	if k.SASL.Mechanism == "" {
		return nil
	}
	return &srckafka.SASL{Mechanism: k.SASL.Mechanism, User: k.SASL.User, Password: k.SASL.Password}
}

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
	var app ingest.Appender
	switch src.Type {
	case "redis-stream":
		tc, err := spec.RedisTLSConfig(src.Redis)
		if err != nil {
			return nil, fmt.Errorf("ingest source %s: redis.tls: %w", src.Name, err)
		}
		a, err := ingest.RedisStream(src.Redis.Addr, src.Stream, ingest.RedisAuth(src.Redis.Username, src.Redis.Password),
			ingest.RedisDB(src.Redis.DB), ingest.RedisTLS(tc))
		if err != nil {
			return nil, err
		}
		app = a
	case "kafka":
		opts := []ingest.KafkaOption{}
		t, err := kafkaTLS(spec, src.Kafka)
		if err != nil {
			return nil, fmt.Errorf("ingest source %s: %w", src.Name, err)
		}
		if t != nil {
			opts = append(opts, ingest.KafkaTLS(t))
		}
		if s := kafkaSASL(src.Kafka); s != nil {
			opts = append(opts, ingest.KafkaSASL(s))
		}
		a, err := ingest.Kafka(src.Kafka.Brokers, src.Kafka.Topic, opts...)
		if err != nil {
			return nil, err
		}
		app = a
	default:
		return nil, fmt.Errorf("ingest.source: %q is not a redis-stream or kafka source", src.Name)
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
