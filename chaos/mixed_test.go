package chaos

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/testutil"
)

// mixedFrom is the earlier commit the mixed-version scenario runs one node
// on: CHAOS_MIXED_FROM, else 17fa977, whose nodes gossip no protocol
// version (they speak protocol 1).
func mixedFrom() string { return envStr("CHAOS_MIXED_FROM", "17fa977") }

// TestChaosMixedVersion runs a fleet mid-upgrade: the three-node fleet of
// the kill scenarios (n1 reads the paced input and writes the changelog,
// n2 and n3 host key actors) with n3 on the joinery binary of an earlier
// commit (mixedFrom, built from `git archive` of it in a temporary
// directory) and n1 and n2 on the current one. n3 must host keys — reached
// over remoting, their state read and written in the same store by both
// versions — and is then upgraded as `helm upgrade` does: SIGTERM, then
// started on the current binary. Both versions speak one protocol, so they
// form one fleet; the changelog replays to the true join: nothing lost, no
// row under two ids. (Nodes of incompatible protocols refuse each other at
// start instead: cluster's TestClusterProtocolRefused.)
func TestChaosMixedVersion(t *testing.T) {
	old := buildAt(t, mixedFrom())
	f := newFleet(t, 2900, withBinary(3, old), withAdmin(), withRate(max(2000, inputChanges/10)))
	f.startReader(t)
	keys := func(n int) int {
		v, err := metric(f.admin[n-1], `joinery_keys_active{job="chaos"}`)
		if err != nil {
			return 0
		}
		return int(v)
	}
	testutil.WaitFor(t, scaled(time.Minute), func() error {
		if k := keys(3); k < 10 {
			return fmt.Errorf("n3 (commit %s) hosts %d keys", mixedFrom(), k)
		}
		return nil
	})
	t.Logf("n3 on commit %s hosts %d keys, n1 and n2 on the current tree %d and %d; %d output lines",
		mixedFrom(), keys(3), keys(1), keys(2), lineCount(f.out))
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
	f.finish(t)
	if d := dupOutputs(f.out); d > 0 {
		t.Errorf("%d rows written under two ids", d)
	}
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
