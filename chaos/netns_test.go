package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// netLab is a small routed network of Linux network namespaces that a test
// builds for itself (root and iproute2 required): namespace i (1-based)
// holds one node on 10.B.i.2/24, connected to the root namespace by a veth
// pair whose root end is 10.B.i.1, its default route; the root namespace
// forwards between them (net.ipv4.ip_forward=1) and holds Redis's address
// 10.B.0.1/32 on its loopback, so every namespace reaches Redis through its
// own link only. The test process, in the root namespace, reaches every
// node's admin endpoint directly.
//
// partition(v) cuts namespace v off from every other node's subnet with
// policy rules in the root namespace (ip rule ... blackhole: forwarded
// packets are dropped silently, like a real partition, in both
// directions) while v keeps its route to Redis and to the test; heal
// deletes them.
//
// Names carry a per-run prefix "jc<pid>" (namespaces jc<pid>nI, root-side
// links jc<pid>nIr, the loopback address labelled lo:jc<pid>); B is chosen
// so no route or address of the machine is in 10.B.0.0/16. Everything is
// removed in t.Cleanup, after the fleet's processes are killed (they were
// started later, so their cleanups run first); leftovers of an earlier run
// that died without its cleanups (its pid gone) are removed at start.
type netLab struct {
	t      *testing.T
	prefix string
	b      int // the second octet: 10.b.0.0/16
	nodes  int
	fwd    string // net.ipv4.ip_forward before the lab

	mu    sync.Mutex
	rules [][]string // active partition rules (ip rule add ARGS)
}

// newNetLab builds namespaces 1..nodes; it fails the test (never skips) when
// it cannot: not root, or iproute2 missing or refusing.
func newNetLab(t *testing.T, nodes int) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("the partition scenario builds network namespaces and needs root (uid %d); run the chaos suite as root (CI does)", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("the partition scenario needs iproute2's ip (Debian: apt-get install iproute2, or scripts/ensure-deps.sh): %v", err)
	}
	sweepNetLabs(t)
	l := &netLab{t: t, prefix: fmt.Sprintf("jc%d", os.Getpid()), nodes: nodes}
	l.b = l.pickOctet()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		t.Fatalf("read ip_forward: %v", err)
	}
	l.fwd = strings.TrimSpace(string(b))
	t.Cleanup(l.close)
	for i := 1; i <= nodes; i++ {
		ns, root, peer := l.ns(i), l.link(i), l.prefix+"p"
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s failed (the partition scenario needs root and network namespaces): %v: %s", ns, err, out)
		}
		l.must("link", "add", root, "type", "veth", "peer", "name", peer, "netns", ns)
		l.must("addr", "add", fmt.Sprintf("10.%d.%d.1/24", l.b, i), "dev", root)
		l.must("link", "set", root, "up")
		l.must("-n", ns, "link", "set", "lo", "up")
		l.must("-n", ns, "addr", "add", l.nodeIP(i)+"/24", "dev", peer)
		l.must("-n", ns, "link", "set", peer, "up")
		l.must("-n", ns, "route", "add", "default", "via", fmt.Sprintf("10.%d.%d.1", l.b, i))
	}
	l.must("addr", "add", l.redisIP()+"/32", "dev", "lo", "label", "lo:"+l.prefix)
	if l.fwd != "1" {
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
			t.Fatalf("enable ip_forward: %v", err)
		}
	}
	return l
}

func (l *netLab) ns(i int) string     { return fmt.Sprintf("%sn%d", l.prefix, i) }
func (l *netLab) link(i int) string   { return fmt.Sprintf("%sn%dr", l.prefix, i) }
func (l *netLab) subnet(i int) string { return fmt.Sprintf("10.%d.%d.0/24", l.b, i) }
func (l *netLab) nodeIP(i int) string { return fmt.Sprintf("10.%d.%d.2", l.b, i) }
func (l *netLab) redisIP() string     { return fmt.Sprintf("10.%d.0.1", l.b) }
func (l *netLab) exec(i int) []string { return []string{"ip", "netns", "exec", l.ns(i)} }
func (l *netLab) ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (l *netLab) must(args ...string) {
	l.t.Helper()
	if err := l.ip(args...); err != nil {
		l.t.Fatal(err)
	}
}

// pickOctet returns a B in 200..249 such that nothing on the machine
// (addresses, routes, rules) is in 10.B.0.0/16, starting at one derived
// from the pid so concurrent runs tend to differ.
func (l *netLab) pickOctet() int {
	var used strings.Builder
	for _, args := range [][]string{{"-4", "addr"}, {"-4", "route", "show", "table", "all"}, {"-4", "rule"}} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		used.Write(out)
	}
	for k := range 50 {
		b := 200 + (os.Getpid()+k)%50
		if !regexp.MustCompile(fmt.Sprintf(`(?m)(^|\s)10\.%d\.`, b)).MatchString(used.String()) {
			return b
		}
	}
	l.t.Fatalf("no free 10.B.0.0/16 (B in 200..249) for the test's namespaces")
	return 0
}

// partition cuts the nodes of side off from every other node (both
// directions); the nodes of side still reach each other, Redis and the
// test process.
func (l *netLab) partition(side ...int) {
	l.t.Helper()
	for _, v := range side {
		for i := 1; i <= l.nodes; i++ {
			if slices.Contains(side, i) {
				continue
			}
			for _, r := range [][]string{
				{"from", l.subnet(v), "to", l.subnet(i), "blackhole"},
				{"from", l.subnet(i), "to", l.subnet(v), "blackhole"},
			} {
				l.must(append([]string{"rule", "add"}, r...)...)
				l.mu.Lock()
				l.rules = append(l.rules, r)
				l.mu.Unlock()
			}
		}
	}
}

// heal deletes the partition's rules.
func (l *netLab) heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first error
	for _, r := range l.rules {
		if err := l.ip(append([]string{"rule", "del"}, r...)...); err != nil && first == nil {
			first = err
		}
	}
	l.rules = nil
	return first
}

func (l *netLab) close() {
	if err := l.heal(); err != nil {
		l.t.Errorf("netns cleanup: %v", err)
	}
	removeNetLab(l.prefix, l.b)
	if l.fwd != "" && l.fwd != "1" {
		_ = os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte(l.fwd), 0o644)
	}
}

// removeNetLab deletes what a lab with prefix made (b < 0: unknown, then
// the loopback address is found by its label): errors are ignored, some
// parts may not exist.
func removeNetLab(prefix string, b int) {
	if b < 0 {
		out, _ := exec.Command("ip", "-4", "-o", "addr", "show", "dev", "lo", "label", "lo:"+prefix).Output()
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, "10.") && strings.HasSuffix(f, ".0.1/32") {
				_ = exec.Command("ip", "addr", "del", f, "dev", "lo").Run()
			}
		}
	} else {
		_ = exec.Command("ip", "addr", "del", fmt.Sprintf("10.%d.0.1/32", b), "dev", "lo").Run()
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix+"n") {
			_ = exec.Command("ip", "link", "del", f[0]+"r").Run() // also removes the peer
			_ = exec.Command("ip", "netns", "del", f[0]).Run()
		}
	}
}

var labNS = regexp.MustCompile(`^jc(\d+)n\d+$`)

// sweepNetLabs removes the namespaces (and links, addresses) of earlier
// runs whose process is gone: a killed `go test` runs no cleanups. Their
// blackhole rules, if any were active, stay: they name only 10.B subnets,
// and pickOctet avoids a B that any rule mentions.
func sweepNetLabs(t *testing.T) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	done := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		m := labNS.FindStringSubmatch(f[0])
		if m == nil || done[m[1]] {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue // its run is alive (or the pid was reused: leave it)
		}
		done[m[1]] = true
		t.Logf("removing network namespaces left by an earlier run (pid %d)", pid)
		removeNetLab("jc"+m[1], -1)
	}
}
