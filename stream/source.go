package stream

import (
	"math"
	"time"

	"github.com/joinery/joinery/timers"
)

// Item is one item of a FromItems source: an element at an event time, or
// a watermark. Build items with At and Watermark.
type Item[T any] struct {
	v    T
	ts   int64
	mark bool
}

// At is the element v at event time ts (ms).
func At[T any](ts int64, v T) Item[T] { return Item[T]{v: v, ts: ts} }

// Watermark is the watermark w (ms): the source declares that no element
// at or below w follows (one that does is late downstream). A watermark not
// above the source's previous one changes nothing.
func Watermark[T any](w int64) Item[T] { return Item[T]{ts: w, mark: true} }

// FromItems is a source of the given elements and explicit watermarks, in
// order. It emits no other watermark until it runs out (then math.MaxInt64).
func FromItems[T any](env *Env, items ...Item[T]) *Stream[T] {
	out := newStream[T](env)
	env.sources = append(env.sources, &itemSource[T]{out: out, items: items})
	return out
}

type itemSource[T any] struct {
	out   *Stream[T]
	items []Item[T]
	i     int
	wm    *timers.Watermarks // nil: explicit watermarks only
}

func (s *itemSource[T]) step() bool {
	if s.i == len(s.items) {
		return false
	}
	it := s.items[s.i]
	s.i++
	if it.mark {
		s.out.emitWatermark(it.ts)
		return true
	}
	s.out.emit(it.v, it.ts)
	if s.wm != nil {
		s.wm.Observe("", it.ts, zeroTime)
		if w := s.wm.Current(); w != math.MinInt64 {
			s.out.emitWatermark(w)
		}
	}
	return true
}

// zeroTime is the processing time given to timers.Watermarks: sources here
// have no idleness, so it is never read.
var zeroTime time.Time

func (s *itemSource[T]) finish() { s.out.emitWatermark(math.MaxInt64) }

// SourceOption configures FromSlice.
type SourceOption interface{ apply(*sourceConfig) }

type sourceConfig struct {
	outOfOrder int64
	none       bool
}

type sourceOpt func(*sourceConfig)

func (f sourceOpt) apply(c *sourceConfig) { f(c) }

// BoundedOutOfOrderness makes FromSlice emit, after each element, the
// watermark maxTs - d - 1, where maxTs is the greatest event time so far
// (Flink's WatermarkStrategy.forBoundedOutOfOrderness, computed by
// timers.Watermarks): an element may arrive up to d behind the greatest time
// seen and still be on time. The default is 0 (Flink's
// forMonotonousTimestamps). d must be whole milliseconds, >= 0.
func BoundedOutOfOrderness(d time.Duration) SourceOption {
	return sourceOpt(func(c *sourceConfig) { c.outOfOrder = int64(d) })
}

// NoWatermarks makes FromSlice emit no watermark until it runs out: every
// element is on time and everything fires at the end.
func NoWatermarks() SourceOption { return sourceOpt(func(c *sourceConfig) { c.none = true }) }

// FromSlice is a source of elems, in order, each at event time ts(elem)
// (ms), with generated watermarks: bounded out-of-orderness 0 unless an
// option says otherwise.
func FromSlice[T any](env *Env, elems []T, ts func(T) int64, opts ...SourceOption) *Stream[T] {
	var c sourceConfig
	for _, o := range opts {
		o.apply(&c)
	}
	items := make([]Item[T], len(elems))
	for i, v := range elems {
		items[i] = At(ts(v), v)
	}
	out := newStream[T](env)
	src := &itemSource[T]{out: out, items: items}
	if !c.none {
		ooo := env.millis("source: bounded out-of-orderness", time.Duration(c.outOfOrder))
		wm, err := timers.NewWatermarks(timers.WatermarkConfig{MaxOutOfOrderness: ooo})
		if err != nil {
			env.fail("source", err)
		} else {
			src.wm = wm
		}
	}
	env.sources = append(env.sources, src)
	return out
}
