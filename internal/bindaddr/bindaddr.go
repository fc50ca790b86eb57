// Package bindaddr decides whether a configured listen address keeps a
// server on loopback: the one question the admin and ingest servers ask
// before they agree to serve without credentials. It looks only at the
// configured host:port string (never at interfaces or DNS), so the answer is
// the same on every machine and in tests. It must not open sockets.
package bindaddr

import (
	"net"
	"net/netip"
	"strings"
)

// Loopback reports whether a server listening on addr (host:port, as given to
// net.Listen) is reachable from this machine only: the host is "localhost"
// or a loopback IP (127.0.0.0/8, ::1). An empty host, 0.0.0.0, ::, any other
// IP or any other name is off loopback; so is an address that does not parse.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	return ip.Unmap().IsLoopback()
}
