package chaos

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/testutil"
)

// TestChaosPassivateEveryKey runs the three-node fleet with a tiny idle
// timeout (state.passivate_after: 50ms) on every node, so key actors
// passivate and reactivate from Redis constantly while events flow (about
// 20 events a second per key): every reactivation loads the snapshot and
// takes a new epoch, and events that raced a passivation are retried. The
// result equals the fault-free one, and once the input is done every key
// passivates (joinery_keys_active falls to 0 on the actor nodes).
//
// It found two bugs, both fixed: a key whose join state emptied was
// deleted from the store with its applied offsets, so after a passivation
// its new activation refused every retry as a gap (reading stalled for
// ever); and a retry after a dead letter (the actor had just passivated)
// waited out the backoff, making the run ten times slower.
func TestChaosPassivateEveryKey(t *testing.T) {
	for trial := range trials(1) {
		seed := uint64(800 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			f := newFleet(t, seed, withState("passivate_after: "+envStr("CHAOS_PASSIVATE", "50ms")), withAdmin(), inTrial(trial, trials(1)))
			f.startReader(t)
			// Until the input is done, the output must not stall.
			// Meanwhile sample the active keys: with passivation they stay
			// under the 300 join keys.
			last, since, samples, minActive := -1, time.Now(), 0, -1
			for f.n1.cmd != nil {
				if samples < 20 && lineCount(f.out) > 0 {
					samples++
					n := keysActive(t, f.admin[0]) + keysActive(t, f.admin[1]) + keysActive(t, f.admin[2])
					if minActive < 0 || n < minActive {
						minActive = n
					}
					if samples == 20 {
						t.Logf("n1+n2+n3: at least %d keys active mid-stream (of 300)", minActive)
					}
				}
				if f.n1.wait(100*time.Millisecond) == nil && f.n1.cmd == nil {
					break
				}
				if c := lineCount(f.out); c != last {
					last, since = c, time.Now()
				} else if f.n1.cmd != nil && time.Since(since) > 20*time.Second {
					f.dumpGoroutines(t)
					t.Errorf("output stalled at %d lines (none new for 20s) with passivate_after %s; stopping the reading node", c, envStr("CHAOS_PASSIVATE", "50ms"))
					f.n1.kill()
					f.finish(t) // records the summary row
					return
				}
			}
			// All keys passivate once idle (with the default, never).
			testutil.WaitFor(t, 10*time.Second, func() error {
				for _, i := range []int{1, 2} {
					if n := keysActive(t, f.admin[i]); n != 0 {
						return fmt.Errorf("n%d: %d keys active after the input, want 0 (passivate_after 50ms)", i+1, n)
					}
				}
				return nil
			})
			f.finish(t)
		})
	}
}

// keysActive reads joinery_keys_active from a node's /metrics (0 when the
// series does not exist yet).
func keysActive(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "joinery_keys_active{") {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

func envStr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// dumpGoroutines saves every node's goroutine dump (admin pprof) in the
// fleet's directory as nN.goroutines.
func (f *fleet) dumpGoroutines(t *testing.T) {
	for i, base := range f.admin {
		if base == "" {
			continue
		}
		resp, err := http.Get(base + "/debug/pprof/goroutine?debug=2")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("n%d.goroutines", i+1)), b, 0o644)
	}
}
