// Package failpoint holds Joinery's one deterministic crash point, for the
// chaos suite: JOINERY_FAILPOINT=exit-after-state-write:N, read once at
// startup, makes the process exit with status 137 (as kill -9 would leave
// it, without running deferred calls or flushing anything) right after its
// N-th successful state write batch (actors.Writer: one Store.Save) and
// before any callback of that batch runs. The key actors' answers for the
// batch are therefore never sent, so no sink sees its outputs and no offset
// commit covers its inputs: the crash lands between a state write and the
// offset commit that would cover it.
//
// Unset (production), StateWritten is one load and compare of a package
// variable. An unparsable value fails startup loudly (panic in init), so a
// misspelt failpoint is never silently ignored.
package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// Env is the environment variable read at startup.
const Env = "JOINERY_FAILPOINT"

// ExitCode is the status the process exits with at the failpoint (128+9,
// what a shell reports for kill -9).
const ExitCode = 137

var (
	exitAfter int64        // N of exit-after-state-write:N; 0 = off
	writes    atomic.Int64 // successful state write batches so far
)

func init() {
	v := os.Getenv(Env)
	if v == "" {
		return
	}
	n, err := parse(v)
	if err != nil {
		panic(err)
	}
	exitAfter = n
}

func parse(v string) (int64, error) {
	rest, ok := strings.CutPrefix(v, "exit-after-state-write:")
	if !ok {
		return 0, fmt.Errorf("%s=%q: want exit-after-state-write:N", Env, v)
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: N must be a positive integer", Env, v)
	}
	return n, nil
}

// StateWritten is called after each successful state write batch, before
// its callbacks; armed, it exits the process at the N-th.
func StateWritten() {
	if exitAfter == 0 {
		return
	}
	if writes.Add(1) == exitAfter {
		fmt.Fprintf(os.Stderr, "failpoint %s=exit-after-state-write:%d: exiting with status %d after state write batch %d\n", Env, exitAfter, ExitCode, exitAfter)
		os.Exit(ExitCode)
	}
}
