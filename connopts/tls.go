// Package connopts holds the connection settings the connectors share:
// the TLS files of a Redis or Kafka block here, the Redis connection
// (connopts/redisopts) and the Kafka client (connopts/kafkaopts). Each
// is one type decoded from the job file and one constructor, so a source,
// a sink, the dead-letter output, HTTP ingest and the state store connect
// the same way.
//
// It reads certificate files when asked to build a configuration; it opens
// no connection.
package connopts

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLS configures TLS to a server (Redis 6+ `tls-port`, managed Redis
// services, Kafka brokers). Paths are relative to the job file.
type TLS struct {
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

// On reports whether t asks for TLS.
func (t TLS) On() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify
}

// Config builds the TLS configuration of t: nil when t does not use TLS,
// an error naming what is wrong (an unreadable file, a bad PEM, a
// certificate without its key). resolve maps a file name to its path (the
// job file's directory); nil leaves names as they are.
func (t TLS) Config(resolve func(string) string) (*tls.Config, error) {
	if !t.On() {
		return nil, nil
	}
	if resolve == nil {
		resolve = func(p string) string { return p }
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(resolve(t.CAFile))
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
		cert, err := tls.LoadX509KeyPair(resolve(t.CertFile), resolve(t.KeyFile))
		if err != nil {
			return nil, fmt.Errorf("cert_file/key_file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	case t.CertFile != "" || t.KeyFile != "":
		return nil, errors.New("cert_file and key_file go together")
	}
	return c, nil
}
