package job

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/joinery/joinery/connectors/all"
	"github.com/joinery/joinery/connopts/kafkaopts"
	"github.com/joinery/joinery/internal/bindaddr"
)

// AdminSecurity is the access control of the admin endpoint (inlined in
// Admin): who may read, who may act, who may scrape, and TLS. Off loopback
// (bindaddr.Loopback of addr) a node refuses to start without a token unless
// Insecure is set.
type AdminSecurity struct {
	// ReadToken is the read-scope bearer token (inspect, locate, why,
	// watermarks, hot, members). ${VAR} is expanded; JOINERY_READ_TOKEN
	// overrides it; ReadTokenFile reads it from a file.
	ReadToken     string `yaml:"read_token,omitempty"`
	ReadTokenFile string `yaml:"read_token_file,omitempty"`
	// MetricsToken, when set, is required on /metrics (open otherwise).
	MetricsToken     string `yaml:"metrics_token,omitempty"`
	MetricsTokenFile string `yaml:"metrics_token_file,omitempty"`
	// Insecure lets the admin API serve reads without a token off loopback.
	Insecure bool `yaml:"insecure,omitempty"`
	// TLS serves HTTPS.
	TLS ServerTLS `yaml:"tls,omitempty"`
}

// IngestSecurity is the access control and limits of HTTP ingest (inlined
// in Ingest). Off loopback a node refuses to start without a token or
// client certificates (tls.client_ca_file) unless Insecure is set.
type IngestSecurity struct {
	// Token is the bearer token a POST must carry. ${VAR} is expanded;
	// TokenFile reads it from a file.
	Token     string `yaml:"token,omitempty"`
	TokenFile string `yaml:"token_file,omitempty"`
	// Insecure lets ingest accept unauthenticated posts off loopback.
	Insecure bool `yaml:"insecure,omitempty"`
	// TLS serves HTTPS; with client_ca_file, clients must present a
	// certificate signed by it (mTLS), which authenticates them.
	TLS ServerTLS `yaml:"tls,omitempty"`
	// MaxBodyBytes bounds a request body (default 1 MiB).
	MaxBodyBytes int64 `yaml:"max_body_bytes,omitempty"`
	// MaxInflight bounds the requests being appended at once (default 64);
	// more get 429.
	MaxInflight int `yaml:"max_inflight,omitempty"`
	// BodyTimeout is how long a client has to send its whole body (default
	// 10s); a slower one gets 408 without taking an in-flight slot.
	BodyTimeout time.Duration `yaml:"body_timeout,omitempty"`
}

// ServerTLS is a server certificate and, for mutual TLS, the CA its clients'
// certificates must chain to. Paths are relative to the job file.
type ServerTLS struct {
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
	// ClientCAFile, when set, requires and verifies client certificates.
	ClientCAFile string `yaml:"client_ca_file,omitempty"`
}

// On reports whether TLS is configured.
func (t ServerTLS) On() bool { return t.CertFile != "" || t.KeyFile != "" || t.ClientCAFile != "" }

// ServerTLSConfig builds the server TLS configuration of t: nil when t is
// off, an error naming what is wrong otherwise.
func (s *Spec) ServerTLSConfig(t ServerTLS) (*tls.Config, error) {
	if !t.On() {
		return nil, nil
	}
	if t.CertFile == "" || t.KeyFile == "" {
		return nil, errors.New("cert_file and key_file are both needed")
	}
	cert, err := tls.LoadX509KeyPair(s.Resolve(t.CertFile), s.Resolve(t.KeyFile))
	if err != nil {
		return nil, fmt.Errorf("cert_file/key_file: %w", err)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if t.ClientCAFile != "" {
		pool, err := s.certPool(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client_ca_file: %w", err)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

func (s *Spec) certPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(s.Resolve(path))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", path)
	}
	return pool, nil
}

// KafkaTLS is TLS to Kafka brokers: `tls: true` (system roots) or a mapping
// with the same fields as RedisTLS (kafkaopts.TLS).
type KafkaTLS = kafkaopts.TLS

// KafkaTLSConfig builds the TLS configuration of a Kafka block: nil without
// TLS, an error naming what is wrong (as RedisTLSConfig).
func (s *Spec) KafkaTLSConfig(k Kafka) (*tls.Config, error) {
	return k.TLS.Config(s.Resolve)
}

// GossipKey decodes cluster.secret_key: nil without one, an error unless it
// is base64 of 16, 24 or 32 bytes.
func (c Cluster) GossipKey() ([]byte, error) {
	if c.SecretKey == "" {
		return nil, nil
	}
	return decodeGossipKey(c.SecretKey)
}

// secret is one secret setting of the job: its field path, its value and
// its *_file sibling (nil when it has none).
type secret struct {
	field string
	val   *string
	file  *string
}

// secrets lists every secret setting of s, with pointers into s.
func (s *Spec) secrets() []secret {
	var out []secret
	// A connector's secrets (its redis or kafka block's password) are its
	// configuration's (connectors.Secrets), expanded when it is decoded
	// (expandConn).
	out = append(out, secret{"state.redis.password", &s.State.Redis.Password, &s.State.Redis.PasswordFile})
	for i := range s.Cluster.SecretKeys {
		out = append(out, secret{fmt.Sprintf("cluster.secret_keys[%d]", i), &s.Cluster.SecretKeys[i], nil})
	}
	out = append(out,
		secret{"cluster.secret_key", &s.Cluster.SecretKey, &s.Cluster.SecretKeyFile},
		secret{"admin.token", &s.Admin.Token, &s.Admin.TokenFile},
		secret{"admin.read_token", &s.Admin.ReadToken, &s.Admin.ReadTokenFile},
		secret{"admin.metrics_token", &s.Admin.MetricsToken, &s.Admin.MetricsTokenFile},
		secret{"ingest.token", &s.Ingest.Token, &s.Ingest.TokenFile},
	)
	return out
}

// expandSecrets fills every secret: ${VAR} and ${VAR:-default} from the
// environment (lookup), $$ as a literal $, or the contents of its *_file
// (one trailing newline trimmed, not expanded). Every problem is reported,
// each naming its field; the fields it could not fill are marked
// unresolved, so that Validate does not report a second, misleading cause.
func (s *Spec) expandSecrets(lookup func(string) (string, bool)) error {
	var errs []error
	fail := func(field string, err error) {
		errs = append(errs, err)
		if s.unresolved == nil {
			s.unresolved = map[string]bool{}
		}
		s.unresolved[field] = true
	}
	for _, sec := range s.secrets() {
		if err := s.expandSecret(sec, lookup); err != nil {
			fail(sec.field, err)
		}
	}
	return errors.Join(errs...)
}

// expandSecret fills sec from the environment (lookup) or its file; the
// error names its field.
func (s *Spec) expandSecret(sec secret, lookup func(string) (string, bool)) error {
	if sec.file != nil && *sec.file != "" {
		if *sec.val != "" {
			return fmt.Errorf("%s: set %s or %s_file, not both", sec.field, lastName(sec.field), lastName(sec.field))
		}
		v, err := readSecretFile(s.Resolve(*sec.file))
		if err != nil {
			return fmt.Errorf("%s_file: %w", sec.field, err)
		}
		*sec.val = v
		return nil
	}
	v, err := ExpandSecret(*sec.val, lookup)
	if err != nil {
		return fmt.Errorf("%s: %w", sec.field, err)
	}
	*sec.val = v
	return nil
}

func lastName(field string) string {
	return field[strings.LastIndexByte(field, '.')+1:]
}

// readSecretFile reads a secret from a file (a Kubernetes Secret volume):
// one trailing "\n" or "\r\n" is trimmed; an empty secret is an error.
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return v, nil
}

// ErrUnsetVar is wrapped by ExpandSecret's error for a ${VAR} that is not
// set (or empty) and has no default.
var ErrUnsetVar = errors.New("environment variable not set")

// ExpandSecret expands s: ${VAR} is VAR's value (an error wrapping
// ErrUnsetVar when it is unset or empty), ${VAR:-default} is VAR's value or
// default when it is unset or empty, $$ is a literal $, and any other $ is
// itself (so "pa$word" stays as written). An unterminated ${ or a bad name
// is an error.
func ExpandSecret(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c != '$' || i+1 == len(s):
			b.WriteByte(c)
			i++
		case s[i+1] == '$':
			b.WriteByte('$')
			i += 2
		case s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("unterminated ${ at byte %d (write $$ for a literal $)", i)
			}
			inner := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(inner, ":-")
			if !validVarName(name) {
				return "", fmt.Errorf("${%s}: not a variable name (write $$ for a literal $)", inner)
			}
			v, ok := lookup(name)
			if !ok || v == "" {
				if !hasDef {
					return "", fmt.Errorf("${%s}: %w (or empty); use ${%s:-default} for an optional value", name, ErrUnsetVar, name)
				}
				v = def
			}
			b.WriteString(v)
			i += 2 + end + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

func validVarName(n string) bool {
	if n == "" {
		return false
	}
	for i, c := range n {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Redacted is what `joinery check` prints: a copy of s whose every secret
// set is replaced by "<redacted>" (the *_file paths stay). s is unchanged.
func (s *Spec) Redacted() *Spec {
	c := *s
	c.Sources = append([]Source(nil), s.Sources...)
	c.Sinks = append([]Sink(nil), s.Sinks...)
	for i, src := range c.Sources {
		c.Sources[i].Conn = redactConn(all.Sources, src.Type, src.Conn)
	}
	for i, sk := range c.Sinks {
		c.Sinks[i].Conn = redactConn(all.Sinks, sk.Type, sk.Conn)
	}
	if c.DeadLetter.Enabled() {
		c.DeadLetter.Conn = redactConn(all.DeadLetters, c.DeadLetter.Type, c.DeadLetter.Conn)
	}
	for _, sec := range c.secrets() {
		if *sec.val != "" {
			*sec.val = Redacted
		}
	}
	return &c
}

// Redacted replaces a secret in Spec.Redacted.
const Redacted = "<redacted>"

// validateSecurity adds the security checks to Validate: the ones a node
// would otherwise only hit when it starts (gossip key, TLS files, an admin
// or ingest endpoint off loopback without credentials).
func (s *Spec) validateSecurity(p *Plan, bad func(field, format string, a ...any)) {
	// cluster.secret_key is checked once, by validateClusterSecurity.
	var err error
	if s.Admin.Addr != "" {
		if p.AdminTLS, err = s.ServerTLSConfig(s.Admin.TLS); err != nil {
			bad("admin.tls", "%v", err)
		}
		if s.Admin.Token == "" && s.Admin.ReadToken == "" && !s.Admin.Insecure && !bindaddr.Loopback(s.Admin.Addr) {
			bad("admin", "%s is not a loopback address: set token and/or read_token (or token_file, read_token_file, %s), or insecure: true to serve reads to anyone who can reach it",
				s.Admin.Addr, EnvToken)
		}
	}
	if s.Ingest.Addr != "" {
		if p.IngestTLS, err = s.ServerTLSConfig(s.Ingest.TLS); err != nil {
			bad("ingest.tls", "%v", err)
		}
		if s.Ingest.Token == "" && s.Ingest.TLS.ClientCAFile == "" && !s.Ingest.Insecure && !bindaddr.Loopback(s.Ingest.Addr) {
			bad("ingest", "%s is not a loopback address: set token (or token_file) or tls.client_ca_file, or insecure: true to accept posts from anyone who can reach it", s.Ingest.Addr)
		}
		if s.Ingest.MaxBodyBytes < 0 {
			bad("ingest.max_body_bytes", "must not be negative")
		}
		if s.Ingest.MaxInflight < 0 {
			bad("ingest.max_inflight", "must not be negative")
		}
		if s.Ingest.BodyTimeout < 0 {
			bad("ingest.body_timeout", "must not be negative")
		}
	}
}
