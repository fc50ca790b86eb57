package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/failpoint"
)

// TestChaosKillReaderNodeAfterStateWrite kills the reading node n1 (it
// also hosts key actors) exactly between a state write and the offset
// commit that would cover it: JOINERY_FAILPOINT=exit-after-state-write:N
// makes it exit (status 137, like kill -9) right after its N-th successful
// state write batch reached Redis, before that batch's answers were sent —
// so its outputs were never written and its offsets never committed. n1 is
// started again without the failpoint: it resumes from the committed
// offsets, the key actors that already applied the replayed inputs skip
// them and re-send the outputs their outbox kept, and the result equals
// the fault-free one with nothing lost and no output written twice under
// different ids. N is random per trial, in about the first seventh of n1's
// batches, so the input is far from done (the test fails if n1 finished
// without hitting it).
func TestChaosKillReaderNodeAfterStateWrite(t *testing.T) {
	for trial := range trials(1) {
		seed := uint64(1000 + trial)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed))
			n := 20 + r.IntN(2000*inputChanges/20000) // n1 writes ~14000 batches per 20000 changes
			f := newFleet(t, seed, inTrial(trial, trials(1)))
			f.n1 = startProc(t, f.dir, "n1", "n1.yaml", "env", fmt.Sprintf("%s=exit-after-state-write:%d", failpoint.Env, n))
			err := f.n1.wait(scaled(2 * time.Minute))
			f.fault()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != failpoint.ExitCode {
				logs, _ := os.ReadFile(filepath.Join(f.dir, "n1.log"))
				t.Fatalf("n1 ended with %v, want exit status %d at the failpoint after state write batch %d\n%s", err, failpoint.ExitCode, n, tail(logs, 2000))
			}
			logs, _ := os.ReadFile(filepath.Join(f.dir, "n1.log"))
			if !bytes.Contains(logs, []byte("failpoint "+failpoint.Env)) {
				t.Fatalf("n1 exited %d without the failpoint's message", failpoint.ExitCode)
			}
			t.Logf("n1 exited at the failpoint after state write batch %d with %d output lines written", n, lineCount(f.out))
			f.startReader(t)
			f.finish(t)
		})
	}
}
