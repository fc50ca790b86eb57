// Package failpoint holds Joinery's deterministic fault points, for the
// chaos suite, chosen by JOINERY_FAILPOINT, read once at startup:
//
//   - exit-after-state-write:N makes the process exit with status 137 (as
//     kill -9 would leave it, without running deferred calls or flushing
//     anything) right after its N-th successful state write batch
//     (actors.Writer: one Store.Save) and before any callback of that batch
//     runs. The key actors' answers for the batch are therefore never sent,
//     so no sink sees its outputs and no offset commit covers its inputs:
//     the crash lands between a state write and the offset commit that
//     would cover it.
//   - delay-state-write:D (a Go duration) makes every state write batch
//     wait D before it is sent, so that under load the node always has a
//     write on its way: a node paused at any moment then holds one, which
//     it sends when it continues (the pause scenario's stale write).
//
// Unset (production), StateWritten and BeforeStateWrite are each one load
// and compare of a package variable. An unparsable value fails startup
// loudly (panic in init), so a misspelt failpoint is never silently
// ignored.
package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Env is the environment variable read at startup.
const Env = "JOINERY_FAILPOINT"

// ExitCode is the status the process exits with at the failpoint (128+9,
// what a shell reports for kill -9).
const ExitCode = 137

var (
	exitAfter  int64         // N of exit-after-state-write:N; 0 = off
	writeDelay time.Duration // D of delay-state-write:D; 0 = off
	writes     atomic.Int64  // successful state write batches so far
)

func init() {
	v := os.Getenv(Env)
	if v == "" {
		return
	}
	p, err := parse(v)
	if err != nil {
		panic(err)
	}
	exitAfter, writeDelay = p.exitAfter, p.delay
}

// point is a parsed failpoint.
type point struct {
	exitAfter int64
	delay     time.Duration
}

func parse(v string) (point, error) {
	if rest, ok := strings.CutPrefix(v, "exit-after-state-write:"); ok {
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n < 1 {
			return point{}, fmt.Errorf("%s=%q: N must be a positive integer", Env, v)
		}
		return point{exitAfter: n}, nil
	}
	if rest, ok := strings.CutPrefix(v, "delay-state-write:"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil || d <= 0 {
			return point{}, fmt.Errorf("%s=%q: D must be a positive duration", Env, v)
		}
		return point{delay: d}, nil
	}
	return point{}, fmt.Errorf("%s=%q: want exit-after-state-write:N or delay-state-write:D", Env, v)
}

// BeforeStateWrite is called before each state write batch is sent;
// armed with delay-state-write, it waits.
func BeforeStateWrite() {
	if writeDelay == 0 {
		return
	}
	time.Sleep(writeDelay)
}

// StateWritten is called after each successful state write batch, before
// its callbacks; armed with exit-after-state-write, it exits the process
// at the N-th.
func StateWritten() {
	if exitAfter == 0 {
		return
	}
	if writes.Add(1) == exitAfter {
		fmt.Fprintf(os.Stderr, "failpoint %s=exit-after-state-write:%d: exiting with status %d after state write batch %d\n", Env, exitAfter, ExitCode, exitAfter)
		os.Exit(ExitCode)
	}
}
