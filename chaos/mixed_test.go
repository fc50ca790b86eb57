package chaos

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/internal/testutil"
)

// mixedFrom is the earlier commit the mixed-version scenario runs one node
// on: CHAOS_MIXED_FROM, else 17fa977, a release of protocol 1 (its nodes
// gossip no version and store each key's state in the layout of version 1).
func mixedFrom() string { return envStr("CHAOS_MIXED_FROM", "17fa977") }

// TestChaosMixedVersion runs a fleet mid-upgrade: the three-node fleet of
// the kill scenarios (n1 reads the paced input and writes the changelog,
// n2 and n3 host key actors) with n3 on the joinery binary of an earlier
// commit (mixedFrom, built from `git archive` of it in a temporary
// directory) and n1 and n2 on the current one; n3 is then upgraded as
// `helm upgrade` does: SIGTERM, then started on the current binary. What
// the mixed fleet must do depends on the two protocol versions
// (cluster.Protocol, read from the earlier commit's source):
//
//   - the same version: one fleet. n3 must host keys, reached over
//     remoting, their state read and written in the same store by both
//     versions.
//   - another version: the fleet refuses n3 (its seeds log the refusal,
//     naming both versions) and n3 hosts no key until it runs the current
//     binary.
//
// Either way the changelog replays to the true join: nothing lost, no row
// under two ids.
func TestChaosMixedVersion(t *testing.T) {
	from := mixedFrom()
	old := buildAt(t, from)
	oldProto := protocolAt(t, from)
	same := oldProto == cluster.Protocol
	f := newFleet(t, 2900, withBinary(3, old), withAdmin(), withRate(max(2000, inputChanges/10)))
	f.startReader(t)
	keys := func(n int) int {
		v, err := metric(f.admin[n-1], `joinery_keys_active{job="chaos"}`)
		if err != nil {
			return 0
		}
		return int(v)
	}
	if same {
		testutil.WaitFor(t, scaled(time.Minute), func() error {
			if k := keys(3); k < 10 {
				return fmt.Errorf("n3 (commit %s) hosts %d keys", from, k)
			}
			return nil
		})
	} else {
		refusal := fmt.Sprintf("speaks protocol version %d and this node speaks %d", oldProto, cluster.Protocol)
		testutil.WaitFor(t, scaled(time.Minute), func() error {
			refused := false
			for _, n := range []string{"n1", "n2"} {
				logs, _ := os.ReadFile(filepath.Join(f.dir, n+".log"))
				refused = refused || bytes.Contains(logs, []byte(refusal))
			}
			if !refused {
				return fmt.Errorf("neither n1 nor n2 has logged a refusal of n3 (%q)", refusal)
			}
			if lineCount(f.out) < 500 {
				return fmt.Errorf("%d output lines", lineCount(f.out))
			}
			return nil
		})
		if k := keys(3); k != 0 {
			t.Errorf("n3 (commit %s, protocol %d) hosts %d keys in a fleet of protocol %d", from, oldProto, k, cluster.Protocol)
		}
	}
	t.Logf("n3 on commit %s (protocol %d) hosts %d keys, n1 and n2 on the current tree (protocol %d) %d and %d; %d output lines",
		from, oldProto, keys(3), cluster.Protocol, keys(1), keys(2), lineCount(f.out))
	f.fault()
	at := time.Now()
	f.n3.term()
	stopped := time.Since(at)
	f.opts.bins[3] = ""
	f.n3 = f.start(t, 3)
	t.Logf("n3 upgraded: stopped %s after SIGTERM, started on the current binary %s after it", stopped.Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
	if !f.n1.running() {
		t.Errorf("the input ended before n3 was upgraded: the fleet did not run mixed under load")
	}
	if !same {
		testutil.WaitFor(t, scaled(time.Minute), func() error {
			if k := keys(3); k == 0 {
				return errors.New("n3, upgraded, hosts no key")
			}
			return nil
		})
	}
	f.finish(t)
	if d := dupOutputs(f.out); d > 0 {
		t.Errorf("%d rows written under two ids", d)
	}
}

// protocolAt is the protocol version (cluster.Protocol) the joinery of
// commit speaks: 1 before the constant existed.
func protocolAt(t *testing.T, commit string) int {
	t.Helper()
	out, err := exec.Command("git", "-C", "..", "show", commit+":cluster/version.go").Output()
	if err != nil {
		return 1 // no cluster/version.go: a release that gossips no version
	}
	m := regexp.MustCompile(`(?m)^const Protocol = (\d+)$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("commit %s: cluster/version.go declares no Protocol constant", commit)
	}
	v, err := strconv.Atoi(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// buildAt builds the joinery node of commit (of the repository this
// package is in) into a temporary directory and returns the binary's path.
// A commit the repository does not hold (a shallow clone) fails the test
// with how to fetch it or choose another (CHAOS_MIXED_FROM).
func buildAt(t *testing.T, commit string) string {
	t.Helper()
	if out, err := exec.Command("git", "-C", "..", "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("commit %s is not in this repository (%v %s): fetch the history (git fetch --unshallow) or set CHAOS_MIXED_FROM to an earlier commit it holds", commit, err, out)
	}
	dir := t.TempDir()
	archive := exec.Command("git", "-C", "..", "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var stderr strings.Builder
	archive.Stderr, untar.Stderr = &stderr, &stderr
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar: %v\n%s", err, stderr.String())
	}
	bin := filepath.Join(dir, "joinery-"+commit)
	began := time.Now()
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/node") // as TestMain builds: the unchanged packages come from the cache
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build commit %s: %v\n%s", commit, err, out)
	}
	t.Logf("built commit %s in %s", commit, time.Since(began).Round(time.Millisecond))
	return bin
}

// metric reads the value of one sample (name with its labels, as the
// Prometheus text format writes it) from the admin server at base.
func metric(base, sample string) (float64, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no sample %s", base, sample)
}
