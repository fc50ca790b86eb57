package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// RemoteTLS are the PEM files of actor remoting's mutual TLS: every node
// serves CertFile and presents it as its client certificate, and accepts
// a peer — dialling or dialled — only if the peer's certificate chains to
// CAFile. Use a CA dedicated to the fleet: any certificate it signs is a
// member. The files are read again when they change (checked at each new
// connection), so a renewed certificate or CA (cert-manager, a rotated
// Secret) is used without a restart; connections already open stay up.
type RemoteTLS struct {
	CAFile, CertFile, KeyFile string
	// ServerName, when set, must also be a DNS name of the certificate a
	// dialled peer presents. Default: the chain alone is checked, since
	// peers are dialled by pod IP, which certificates rarely name.
	ServerName string
	// Logger receives reload failures (the previous files stay in use).
	Logger *slog.Logger
}

// RemoteOptions returns protoactor remote options that replace its
// default insecure gRPC transport with mutual TLS from t. It fails with a
// clear error when a file cannot be read or the certificate does not
// match its key.
func RemoteOptions(t RemoteTLS) ([]remote.ConfigOption, error) {
	r, err := newTLSReloader(t)
	if err != nil {
		return nil, err
	}
	server, client := r.serverConfig(), r.clientConfig()
	return []remote.ConfigOption{
		remote.WithServerOptions(grpc.Creds(credentials.NewTLS(server))),
		remote.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(client))),
	}, nil
}

// ClientTLSConfig returns the client side of t's mutual TLS, with the
// same reloading: for tools and tests that dial a node's remoting port.
func ClientTLSConfig(t RemoteTLS) (*tls.Config, error) {
	r, err := newTLSReloader(t)
	if err != nil {
		return nil, err
	}
	return r.clientConfig(), nil
}

// tlsReloader holds the current certificate and CA pool, re-reading the
// files when one of them changed since the last read.
type tlsReloader struct {
	files RemoteTLS
	log   *slog.Logger

	mu    sync.Mutex
	stamp [3]fileStamp
	cert  *tls.Certificate
	pool  *x509.CertPool
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func newTLSReloader(t RemoteTLS) (*tlsReloader, error) {
	var missing []error
	for _, f := range []struct{ name, v string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
		if f.v == "" {
			missing = append(missing, fmt.Errorf("cluster: remoting tls: %s must be set", f.name))
		}
	}
	if err := errors.Join(missing...); err != nil {
		return nil, err
	}
	r := &tlsReloader{files: t, log: t.Logger}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	stamp, err := r.stamps()
	if err != nil {
		return nil, err
	}
	if err := r.load(stamp); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *tlsReloader) stamps() ([3]fileStamp, error) {
	var s [3]fileStamp
	for i, p := range []string{r.files.CAFile, r.files.CertFile, r.files.KeyFile} {
		fi, err := os.Stat(p)
		if err != nil {
			return s, fmt.Errorf("cluster: remoting tls: %w", err)
		}
		s[i] = fileStamp{fi.ModTime(), fi.Size()}
	}
	return s, nil
}

// load reads the three files; the caller holds mu or owns r.
func (r *tlsReloader) load(stamp [3]fileStamp) error {
	ca, err := os.ReadFile(r.files.CAFile)
	if err != nil {
		return fmt.Errorf("cluster: remoting tls: ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("cluster: remoting tls: ca_file %s: no PEM certificate in it", r.files.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(r.files.CertFile, r.files.KeyFile)
	if err != nil {
		return fmt.Errorf("cluster: remoting tls: cert_file/key_file: %w", err)
	}
	r.cert, r.pool, r.stamp = &cert, pool, stamp
	return nil
}

// current returns the certificate and pool, reloading changed files first.
// A failed reload (a file half-written by a rotation) keeps the previous
// ones and is retried at the next connection.
func (r *tlsReloader) current() (*tls.Certificate, *x509.CertPool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stamp, err := r.stamps()
	if err == nil && stamp != r.stamp {
		err = r.load(stamp)
		if err == nil {
			r.log.Info("remoting tls: certificate files reloaded", "cert_file", r.files.CertFile)
		}
	}
	if err != nil {
		r.log.Warn("remoting tls: reload failed; keeping the previous certificate", "error", err)
	}
	return r.cert, r.pool
}

func (r *tlsReloader) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, _ := r.current()
			return c, nil
		},
		// The chain is checked in VerifyConnection against the current
		// CA pool (it may have been reloaded), so the handshake itself
		// only requires that a certificate be sent.
		ClientAuth: tls.RequireAnyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return r.verify(cs, x509.ExtKeyUsageClientAuth, "")
		},
	}
}

func (r *tlsReloader) clientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, _ := r.current()
			return c, nil
		},
		// Verified in VerifyConnection instead: against the current pool,
		// and by name only when ServerName is set (see RemoteTLS).
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return r.verify(cs, x509.ExtKeyUsageServerAuth, r.files.ServerName)
		},
	}
}

func (r *tlsReloader) verify(cs tls.ConnectionState, usage x509.ExtKeyUsage, name string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("cluster: remoting tls: the peer sent no certificate")
	}
	_, pool := r.current()
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: name}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("cluster: remoting tls: peer certificate %q: %w", cs.PeerCertificates[0].Subject.CommonName, err)
	}
	return nil
}
