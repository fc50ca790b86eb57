package cluster

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/testutil"
)

// handshake connects a client with cc to a server with sc over loopback
// and reports whether both sides accepted the other.
func handshake(t *testing.T, sc, cc *tls.Config) error {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if err := c.(*tls.Conn).Handshake(); err != nil {
			srvErr <- err
			return
		}
		_, err = c.Write([]byte("ok"))
		srvErr <- err
	}()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), cc)
	if err != nil {
		<-srvErr
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 2)
	_, rerr := io.ReadFull(c, b)
	return errors.Join(<-srvErr, rerr)
}

// TestRemoteTLSReload: both sides check the peer against the fleet CA; a
// peer of another CA is refused either way; when the files are replaced
// (a rotation to a new CA and certificate) the next connection uses them
// without a restart, and a broken replacement keeps the previous files.
func TestRemoteTLSReload(t *testing.T) {
	dir := t.TempDir()
	fleet := testutil.WriteTLSFiles(t, dir)
	other := testutil.WriteTLSFiles(t, t.TempDir())
	files := func(f testutil.TLSFiles) RemoteTLS { return RemoteTLS{CAFile: f.CA, CertFile: f.Cert, KeyFile: f.Key} }
	node, err := newTLSReloader(files(fleet))
	if err != nil {
		t.Fatal(err)
	}
	outsider, err := newTLSReloader(files(other))
	if err != nil {
		t.Fatal(err)
	}
	peerFiles := copyFiles(t, fleet) // a member that keeps the old CA
	peer, err := newTLSReloader(files(peerFiles))
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, node.serverConfig(), peer.clientConfig()); err != nil {
		t.Fatalf("two fleet members: %v", err)
	}
	if err := handshake(t, node.serverConfig(), outsider.clientConfig()); err == nil {
		t.Fatal("the node accepted a client certificate of another CA")
	}
	if err := handshake(t, outsider.serverConfig(), node.clientConfig()); err == nil {
		t.Fatal("the node accepted a server certificate of another CA")
	}
	noCert := &tls.Config{InsecureSkipVerify: true}
	if err := handshake(t, node.serverConfig(), noCert); err == nil {
		t.Fatal("the node accepted a client without a certificate")
	}

	// Rotate the node's files to the other CA: the outsider's certificate
	// is now the fleet's, the old peer's is not.
	time.Sleep(10 * time.Millisecond) // a distinct modification time
	for _, p := range [][2]string{{other.CA, fleet.CA}, {other.Cert, fleet.Cert}, {other.Key, fleet.Key}} {
		b, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := handshake(t, node.serverConfig(), outsider.clientConfig()); err != nil {
		t.Fatalf("after rotating to the new CA, its certificate is refused: %v", err)
	}
	if err := handshake(t, node.serverConfig(), peer.clientConfig()); err == nil {
		t.Fatal("after rotation, a certificate of the retired CA is still accepted")
	}
	// A half-written rotation keeps the previous (new) files in use.
	if err := os.WriteFile(fleet.Cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, node.serverConfig(), outsider.clientConfig()); err != nil {
		t.Fatalf("a broken certificate file replaced the working one: %v", err)
	}

	// Startup errors name what is wrong.
	for _, c := range []struct {
		cfg  RemoteTLS
		want string
	}{
		{RemoteTLS{CertFile: fleet.Cert, KeyFile: fleet.Key}, "ca_file must be set"},
		{RemoteTLS{CAFile: fleet.Key, CertFile: other.Cert, KeyFile: other.Key}, "no PEM certificate"},
		{RemoteTLS{CAFile: other.CA, CertFile: other.Cert, KeyFile: "/nope/key.pem"}, "/nope/key.pem"},
	} {
		if _, err := RemoteOptions(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
}

func copyFiles(t *testing.T, f testutil.TLSFiles) testutil.TLSFiles {
	dir := t.TempDir()
	out := testutil.TLSFiles{CA: dir + "/ca.pem", Cert: dir + "/cert.pem", Key: dir + "/key.pem"}
	for _, p := range [][2]string{{f.CA, out.CA}, {f.Cert, out.Cert}, {f.Key, out.Key}} {
		b, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
