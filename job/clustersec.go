package job

import (
	"encoding/base64"
	"errors"
	"fmt"
)

// ClusterTLS are the PEM files of actor remoting's mutual TLS (paths
// relative to the job file): every node serves cert_file, presents it when
// it dials a peer, and accepts only peers whose certificate chains to
// ca_file. The files are read again when they change.
type ClusterTLS struct {
	CAFile   string `yaml:"ca_file,omitempty"`
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
	// ServerName, when set, must be a DNS name of every peer's certificate.
	ServerName string `yaml:"server_name,omitempty"`
}

// On reports whether remoting TLS is configured.
func (t ClusterTLS) On() bool { return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" }

// GossipKeys decodes cluster.secret_key (nil when unset) and
// cluster.secret_keys.
func (c Cluster) GossipKeys() (primary []byte, extra [][]byte, err error) {
	if c.SecretKey != "" {
		if primary, err = decodeGossipKey(c.SecretKey); err != nil {
			return nil, nil, fmt.Errorf("cluster.secret_key: %w", err)
		}
	}
	for i, k := range c.SecretKeys {
		b, err := decodeGossipKey(k)
		if err != nil {
			return nil, nil, fmt.Errorf("cluster.secret_keys[%d]: %w", i, err)
		}
		extra = append(extra, b)
	}
	if len(extra) > 0 && primary == nil {
		return nil, nil, errors.New("cluster.secret_keys: needs cluster.secret_key (the key gossip is encrypted with)")
	}
	return primary, extra, nil
}

func decodeGossipKey(v string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	if n := len(b); n != 16 && n != 24 && n != 32 {
		return nil, fmt.Errorf("decodes to %d bytes, want 16, 24 or 32 (AES-128/192/256)", n)
	}
	return b, nil
}

// validateClusterSecurity checks cluster.secret_key(s) and cluster.tls,
// decoding the gossip keys into p.
func (s *Spec) validateClusterSecurity(p *Plan, bad func(field, format string, a ...any)) {
	if s.Cluster.SecretKey != "" {
		var err error
		if p.GossipKey, err = decodeGossipKey(s.Cluster.SecretKey); err != nil {
			bad("cluster.secret_key", "%v", err)
		}
	}
	for i, k := range s.Cluster.SecretKeys {
		b, err := decodeGossipKey(k)
		if err != nil {
			bad(fmt.Sprintf("cluster.secret_keys[%d]", i), "%v", err)
		}
		p.GossipExtra = append(p.GossipExtra, b)
	}
	if len(s.Cluster.SecretKeys) > 0 && s.Cluster.SecretKey == "" {
		bad("cluster.secret_keys", "needs cluster.secret_key (the key gossip is encrypted with)")
	}
	if t := s.Cluster.TLS; t.On() && (t.CAFile == "" || t.CertFile == "" || t.KeyFile == "") {
		bad("cluster.tls", "ca_file, cert_file and key_file go together (mutual TLS)")
	}
}
