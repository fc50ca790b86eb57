package job

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// RedisTLS configures TLS to a Redis server (Redis 6+ `tls-port`, managed
// Redis services). Paths are relative to the job file.
type RedisTLS struct {
	// Enabled turns TLS on; the other fields imply it.
	Enabled bool `yaml:"enabled,omitempty"`
	// CAFile is a PEM bundle of the CAs that sign the server's certificate
	// (default: the system roots).
	CAFile string `yaml:"ca_file,omitempty"`
	// CertFile and KeyFile are a client certificate and key (PEM), for
	// servers that require them (tls-auth-clients yes).
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
	// ServerName overrides the name checked in the server's certificate
	// (default: the host of addr).
	ServerName string `yaml:"server_name,omitempty"`
	// InsecureSkipVerify skips verifying the server's certificate: tests
	// only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify,omitempty"`
}

func (t RedisTLS) on() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify
}

// RedisTLSConfig builds the TLS configuration of r: nil when r does not use
// TLS, an error naming what is wrong (an unreadable file, a bad PEM, a
// certificate without its key).
func (s *Spec) RedisTLSConfig(r Redis) (*tls.Config, error) {
	t := r.TLS
	if !t.on() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(s.Resolve(t.CAFile))
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s: no PEM certificate in it", t.CAFile)
		}
		c.RootCAs = pool
	}
	switch {
	case t.CertFile != "" && t.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(s.Resolve(t.CertFile), s.Resolve(t.KeyFile))
		if err != nil {
			return nil, fmt.Errorf("cert_file/key_file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	case t.CertFile != "" || t.KeyFile != "":
		return nil, errors.New("cert_file and key_file go together")
	}
	return c, nil
}

// redisBlock is one Redis connection setting of the job and its field path.
type redisBlock struct {
	field string
	cfg   Redis
}

// redisBlocks lists every Redis setting the job uses.
func (s *Spec) redisBlocks() []redisBlock {
	var bs []redisBlock
	if s.State.Store == "redis" {
		bs = append(bs, redisBlock{"state.redis", s.State.Redis})
	}
	for i, src := range s.Sources {
		if src.Type == "redis-stream" {
			bs = append(bs, redisBlock{fmt.Sprintf("sources[%d].redis", i), src.Redis})
		}
	}
	for i, sk := range s.Sinks {
		if sk.Type == "redis-stream" || sk.Type == "redis-hash" {
			bs = append(bs, redisBlock{fmt.Sprintf("sinks[%d].redis", i), sk.Redis})
		}
	}
	if s.DeadLetter.Type == "redis-stream" {
		bs = append(bs, redisBlock{"dead_letter.redis", s.DeadLetter.Redis})
	}
	return bs
}
