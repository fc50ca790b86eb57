package stream

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalid is wrapped by every error Execute returns for a pipeline built
// wrongly (bad bounds, bad window, a duration that is not whole
// milliseconds, streams of different Envs).
var ErrInvalid = errors.New("stream: invalid pipeline")

// ErrExecuted is returned by a second call of Execute.
var ErrExecuted = errors.New("stream: pipeline already executed")

// Env is one pipeline: its sources, operators and sinks, and the problems
// found while building it. Build it and Execute it on one goroutine.
type Env struct {
	sources  []source
	errs     []error
	executed bool
	late     int
}

// NewEnv returns an empty pipeline.
func NewEnv() *Env { return &Env{} }

// source is what Execute drives: step delivers the next item (an element or
// a watermark) downstream and reports false, delivering nothing, once the
// source is exhausted; finish delivers the final watermark.
type source interface {
	step() bool
	finish()
}

// fail records a problem found while building; Execute returns it.
func (e *Env) fail(what string, err error) {
	e.errs = append(e.errs, fmt.Errorf("%w: %s: %w", ErrInvalid, what, err))
}

// Err returns the problems found so far while building, joined, or nil.
// Each wraps ErrInvalid.
func (e *Env) Err() error { return errors.Join(e.errs...) }

// Execute runs the pipeline to the end on the calling goroutine: it takes
// one item from each source in turn (round robin in creation order) and
// pushes it through the operators; a source that runs out sends the final
// watermark math.MaxInt64. It returns the build problems (wrapping
// ErrInvalid) without running anything, and ErrExecuted when called again.
func (e *Env) Execute() error {
	if e.executed {
		return ErrExecuted
	}
	e.executed = true
	if err := e.Err(); err != nil {
		return err
	}
	live := append([]source(nil), e.sources...)
	for len(live) > 0 {
		next := live[:0]
		for _, s := range live {
			if s.step() {
				next = append(next, s)
			} else {
				s.finish()
			}
		}
		live = next
	}
	return nil
}

// LateCount returns the number of elements that joins and windows reported
// late so far, whether or not a Late stream was consumed.
func (e *Env) LateCount() int { return e.late }

// sameEnv records a problem when streams of different Envs are combined.
func sameEnv(what string, e, other *Env) {
	if e != other {
		e.fail(what, errors.New("the streams belong to different Envs"))
	}
}

// millis converts a duration to milliseconds; it must be whole
// milliseconds.
func (e *Env) millis(what string, d time.Duration) int64 {
	if d%time.Millisecond != 0 {
		e.fail(what, fmt.Errorf("%v is not a whole number of milliseconds", d))
	}
	return d.Milliseconds()
}

// noWatermark is the watermark before any.
const noWatermark = math.MinInt64

// combiner combines the watermarks of n inputs: the minimum, never going
// backwards.
type combiner struct {
	in  []int64
	cur int64
}

func newCombiner(n int) *combiner {
	c := &combiner{in: make([]int64, n), cur: noWatermark}
	for i := range c.in {
		c.in[i] = noWatermark
	}
	return c
}

// update records input i's watermark w and reports whether the combined
// watermark rose.
func (c *combiner) update(i int, w int64) bool {
	if w <= c.in[i] {
		return false
	}
	c.in[i] = w
	m := c.in[0]
	for _, x := range c.in[1:] {
		m = min(m, x)
	}
	if m > c.cur {
		c.cur = m
		return true
	}
	return false
}
