package debeziumavro

import (
	"crypto/tls"
	"errors"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// ClientConfig is how to reach a Schema Registry.
type ClientConfig struct {
	// URLs of the registry (tried in order).
	URLs []string
	// Username and Password: HTTP basic auth (Confluent Cloud: the API key
	// and secret).
	Username, Password string
	// Token: a bearer token (instead of basic auth).
	Token string
	// TLS: nil for the system defaults (https URLs still use TLS).
	TLS *tls.Config
	// Timeout of one request (default 10s).
	Timeout time.Duration
}

// NewClient returns a franz-go registry client for cfg.
func NewClient(cfg ClientConfig) (*sr.Client, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("debeziumavro: no schema registry URL")
	}
	if cfg.Username != "" && cfg.Token != "" {
		return nil, errors.New("debeziumavro: set username/password or token, not both")
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	opts := []sr.ClientOpt{sr.URLs(cfg.URLs...), sr.HTTPClient(&http.Client{Timeout: timeout}), sr.UserAgent("joinery")}
	if cfg.TLS != nil {
		opts = append(opts, sr.DialTLSConfig(cfg.TLS))
	}
	if cfg.Username != "" || cfg.Password != "" {
		opts = append(opts, sr.BasicAuth(cfg.Username, cfg.Password))
	}
	if cfg.Token != "" {
		opts = append(opts, sr.BearerToken(cfg.Token))
	}
	return sr.NewClient(opts...)
}
