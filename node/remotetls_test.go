package node_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/joinery/joinery/actors"
	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node"
)

// outsider is what the report's intruder wrote: a bare protoactor actor
// system with remoting (options as given), no cluster membership, that
// asks a node's partition-activator for a key's actor and then inspects it.
func outsider(t *testing.T, nodeAddr, kind, key string, opts ...remote.ConfigOption) (*keypb.KeyState, error) {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", testutil.FreePort(t), opts...))
	r.Start()
	defer r.Shutdown(false)
	pid := actor.NewPID(nodeAddr, "partition-activator")
	res, err := sys.Root.RequestFuture(pid, &pcluster.ActivationRequest{
		ClusterIdentity: pcluster.NewClusterIdentity(key, kind), RequestId: "outsider",
	}, 5*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("activation request: %w", err)
	}
	ar, ok := res.(*pcluster.ActivationResponse)
	if !ok || ar.Pid == nil {
		return nil, fmt.Errorf("activation answer %T %v", res, res)
	}
	res, err = sys.Root.RequestFuture(ar.Pid, &keypb.Inspect{}, 5*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	ks, ok := res.(*keypb.KeyState)
	if !ok {
		return nil, fmt.Errorf("inspect answer %T", res)
	}
	return ks, nil
}

// TestNodeRemotingMutualTLS runs the example join on a node whose remoting
// has mutual TLS, then plays the outsider against its remoting port: in
// the clear, over TLS without a client certificate, and with a certificate
// of another CA, it neither activates nor inspects key 1; with a
// certificate of the fleet's CA (the sanity check) it reads key 1's state.
func TestNodeRemotingMutualTLS(t *testing.T) {
	fleetCA := testutil.WriteTLSFiles(t, t.TempDir())
	otherCA := testutil.WriteTLSFiles(t, t.TempDir())
	spec, err := job.Load("../examples/users-domains/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec.Sources[0].Rate = 0
	spec.Cluster.Remote = "127.0.0.1:0"
	spec.Cluster.TLS = job.ClusterTLS{CAFile: fleetCA.CA, CertFile: fleetCA.Cert, KeyFile: fleetCA.Key}
	n := start(t, spec)
	run(t, n)
	kind := actors.KindName(spec.Name)
	before, err := n.Inspect("1")
	if err != nil {
		t.Fatalf("the node's own inspect over its TLS remoting: %v", err)
	}

	tlsOpts := func(files testutil.TLSFiles) []remote.ConfigOption {
		opts, err := cluster.RemoteOptions(cluster.RemoteTLS{CAFile: files.CA, CertFile: files.Cert, KeyFile: files.Key})
		if err != nil {
			t.Fatal(err)
		}
		return opts
	}
	noClientCert := append(tlsOpts(otherCA), remote.WithDialOptions(grpc.WithTransportCredentials(
		credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})))) // trusts anything, presents nothing
	for _, c := range []struct {
		name string
		opts []remote.ConfigOption
		ok   bool
	}{
		{"in the clear", nil, false},
		{"TLS without a client certificate", noClientCert, false},
		{"a certificate of another CA", tlsOpts(otherCA), false},
		{"a certificate of the fleet's CA", tlsOpts(fleetCA), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ks, err := outsider(t, n.Address(), kind, "1", c.opts...)
			switch {
			case c.ok && err != nil:
				t.Fatalf("a peer with the fleet's certificate: %v", err)
			case c.ok && (ks.Key != "1" || len(ks.Left) == 0):
				t.Fatalf("inspected %+v, want key 1's users row", ks)
			case !c.ok && err == nil:
				t.Fatalf("the outsider read key 1's state: %v", ks)
			}
		})
	}
	after, err := n.Inspect("1")
	if err != nil {
		t.Fatal(err)
	}
	if after.Epoch != before.Epoch {
		t.Errorf("key 1's owner epoch moved from %d to %d", before.Epoch, after.Epoch)
	}
}

// TestNodeRefusesExposedBind: a node bound off loopback without remoting
// TLS or without a gossip key does not start, and says what to set;
// loopback needs neither (make demo).
func TestNodeRefusesExposedBind(t *testing.T) {
	ip := nonLoopbackIP(t)
	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	certs := testutil.WriteTLSFiles(t, t.TempDir())
	for _, c := range []struct {
		name, cluster, what, want string
	}{
		{"remoting without tls", fmt.Sprintf("{remote: %q, secret_key: %s}", net.JoinHostPort(ip, "0"), key), "remoting", "cluster.tls"},
		{"gossip without a key", fmt.Sprintf("{gossip: %q, tls: {ca_file: %q, cert_file: %q, key_file: %q}}", net.JoinHostPort(ip, "0"), certs.CA, certs.Cert, certs.Key), "gossip", "secret_key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := parse(t, t.TempDir(), "name: exposed\n"+joinYAML+"cluster: "+c.cluster+"\nsinks: [{type: table}]\n")
			_, err := node.Start(context.Background(), spec, node.Options{Logger: testLogger(t)})
			var ee *cluster.ExposureError
			if !errors.As(err, &ee) || ee.What != c.what || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("start: %v, want a %s ExposureError naming %s", err, c.what, c.want)
			}
		})
	}
}

// nonLoopbackIP is an address of this machine that is not loopback (the
// node must refuse before it listens, so nothing is exposed), or
// 0.0.0.0 when the machine has none.
func nonLoopbackIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return "0.0.0.0"
}
