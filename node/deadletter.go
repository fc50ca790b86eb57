package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter"
	"github.com/joinery/joinery/sinks/deadletter/reason"
	"github.com/joinery/joinery/sources"
)

// DeadLetterRecord is one dead letter: see sinks/deadletter.
type DeadLetterRecord = deadletter.Record

// BadInputError stops a source whose on_bad_input (or on_truncate) is fail:
// it names the source, the record's position and the reason. No offset at or
// past the record is committed.
type BadInputError struct {
	Source   string
	Position record.Position
	Reason   string
	Err      error
}

func (e *BadInputError) Error() string {
	return fmt.Sprintf("bad input in source %s at %s: %s: %v (on_bad_input: fail)", e.Source, e.Position, e.Reason, e.Err)
}

func (e *BadInputError) Unwrap() error { return e.Err }

// openDeadLetter opens the plan's dead-letter output (its kind's Open with
// the configuration compiled); nil when it names none.
func openDeadLetter(ctx context.Context, plan *job.Plan, env connectors.Env) (deadletter.Writer, error) {
	dl := plan.DeadLetter
	if dl == nil {
		return nil, nil
	}
	var w deadletter.Writer
	var err error
	if dl.Kind.Open != nil {
		w, err = dl.Kind.Open(ctx, dl.Config, env)
	}
	if err == nil && w == nil {
		err = fmt.Errorf("type %q opens nothing", dl.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("dead_letter: %w", err)
	}
	return w, nil
}

// badLogLimit is how many bad records a source logs at warn level per
// badLogWindow; the rest are logged at debug level and summed up in the next
// warning.
const (
	badLogLimit  = 10
	badLogWindow = 10 * time.Second
)

// logLimiter rate-limits the warnings of one source.
type logLimiter struct {
	mu         sync.Mutex
	start      time.Time
	n          int
	suppressed int
}

// allow reports whether a warning may be logged now, and how many were
// suppressed since the last one that was.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= badLogWindow {
		l.start, l.n = now, 0
	}
	if l.n >= badLogLimit {
		l.suppressed++
		return false, 0
	}
	l.n++
	s := l.suppressed
	l.suppressed = 0
	return true, s
}

// bad handles a record the source cannot use, by policy: dead-letter (count,
// log, and add a dead letter to the batch), skip (count, log) or fail (the
// returned error stops the source).
func (r *reader) bad(b *batch, m sources.Message, policy string, why reason.Reason, err error) error {
	n, reason := r.n, string(why)
	n.stats.addBad(r.cfg.Name, reason)
	if policy == job.PolicyFail {
		n.log.Error("bad input record; stopping the source", "source", r.cfg.Name, "position", m.Pos.String(), "reason", reason, "err", err)
		return &BadInputError{Source: r.cfg.Name, Position: m.Pos, Reason: reason, Err: err}
	}
	if policy == job.PolicySkip || policy == job.PolicyIgnore {
		n.stats.SkippedBad.Add(1)
	}
	now := time.Now()
	if ok, suppressed := r.logs.allow(now); ok {
		args := []any{"source", r.cfg.Name, "position", m.Pos.String(), "reason", reason, "policy", policy, "err", err}
		if suppressed > 0 {
			args = append(args, "suppressed", suppressed)
		}
		n.log.Warn("bad input record", args...)
	} else {
		n.log.Debug("bad input record", "source", r.cfg.Name, "position", m.Pos.String(), "reason", reason, "policy", policy, "err", err)
	}
	if policy == job.PolicyDeadLetter && r.dl != nil {
		b.dead = append(b.dead, deadletter.New(reason, err, m.Pos, m.Value, now))
	}
	return nil
}
