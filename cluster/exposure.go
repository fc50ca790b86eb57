package cluster

import (
	"fmt"
	"net"
)

// ExposureError refuses a node that would listen in the clear where others
// can reach it: gossip without a secret key, or actor remoting without
// TLS, on an address that is not loopback. Anyone who reaches such a port
// joins the fleet or reads and changes key state. Loopback binds (the
// demo, tests) need nothing; an explicit insecure: true allows the rest.
type ExposureError struct {
	What string // "gossip" or "remoting"
	Addr string // the bind address
	Need string // what would make it start
}

func (e *ExposureError) Error() string {
	return fmt.Sprintf("cluster: %s would listen unprotected on %s, which is not a loopback address: set %s", e.What, e.Addr, e.Need)
}

// IsLoopback reports whether host (an IP address or "localhost") is only
// reachable from this machine. "", 0.0.0.0 and :: are every address: not
// loopback.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckRemoteExposure refuses actor remoting bound to a non-loopback host
// without mutual TLS, unless insecure says so explicitly. An empty host
// listens on every interface: it is refused too.
func CheckRemoteExposure(host string, tls bool, insecure bool) error {
	if tls || insecure || IsLoopback(host) {
		return nil
	}
	return &ExposureError{What: "remoting", Addr: host,
		Need: "cluster.tls {ca_file, cert_file, key_file} (mutual TLS), or cluster.insecure: true to run in the clear"}
}
