package stream

import (
	"time"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// IntervalJoin starts an interval join of two keyed streams (Flink's
// a.keyBy(k).intervalJoin(b.keyBy(k))): finish it with Between and Process.
// O is the result type; L, R and K are inferred:
// stream.IntervalJoin[string](stream.KeyBy(orange, k), stream.KeyBy(green, k)).
func IntervalJoin[O, L, R any, K comparable](a *KeyedStream[L, K], b *KeyedStream[R, K]) *IntervalJoinBuilder[O, L, R, K] {
	sameEnv("interval join", a.s.env, b.s.env)
	return &IntervalJoinBuilder[O, L, R, K]{a: a, b: b}
}

// IntervalJoinBuilder is an interval join waiting for its bounds.
type IntervalJoinBuilder[O, L any, R any, K comparable] struct {
	a *KeyedStream[L, K]
	b *KeyedStream[R, K]
}

// Between sets the bounds: l and r join when
// l.ts + lower <= r.ts <= l.ts + upper (seed flink-joining). Bounds may be
// negative; lower > upper makes Execute fail (wrapping ErrInvalid).
func (j *IntervalJoinBuilder[O, L, R, K]) Between(lower, upper time.Duration) *IntervalJoined[O, L, R, K] {
	return &IntervalJoined[O, L, R, K]{a: j.a, b: j.b, lower: lower, upper: upper,
		late: newStream[Late[L, R]](j.a.s.env)}
}

// IntervalJoined is an interval join ready to process. It runs
// joins.Interval: a pair is emitted as soon as both elements are there,
// stamped max(l.ts, r.ts); an element behind the watermark on arrival is
// late (joins.LateBehindWatermark).
type IntervalJoined[O, L any, R any, K comparable] struct {
	a                *KeyedStream[L, K]
	b                *KeyedStream[R, K]
	lower, upper     time.Duration
	lowerEx, upperEx bool
	late             *Stream[Late[L, R]]
	cond             cond[L, R]
}

// LowerBoundExclusive excludes the lower bound.
func (j *IntervalJoined[O, L, R, K]) LowerBoundExclusive() *IntervalJoined[O, L, R, K] {
	j.lowerEx = true
	return j
}

// UpperBoundExclusive excludes the upper bound.
func (j *IntervalJoined[O, L, R, K]) UpperBoundExclusive() *IntervalJoined[O, L, R, K] {
	j.upperEx = true
	return j
}

// Late is the late-data side output.
func (j *IntervalJoined[O, L, R, K]) Late() *Stream[Late[L, R]] { return j.late }

// PairContext gives a ProcessJoinFunction the times of a pair (Flink's
// ProcessJoinFunction.Context): each side's and the result's, max of both.
type PairContext struct {
	LeftTs, RightTs, Ts int64
}

// Process calls fn for every pair (Flink's ProcessJoinFunction); what fn
// emits is stamped max(l.ts, r.ts).
func (j *IntervalJoined[O, L, R, K]) Process(fn func(l L, r R, c PairContext, emit func(O))) *Stream[O] {
	env := j.a.s.env
	spec := &joins.IntervalSpec{
		Lower:          env.millis("interval join: lower bound", j.lower),
		Upper:          env.millis("interval join: upper bound", j.upper),
		LowerExclusive: j.lowerEx,
		UpperExclusive: j.upperEx,
		Where:          j.cond.joins(),
		FlatJoin: func(lr, rr record.Row) []record.Row {
			l, r := unbox[L](lr), unbox[R](rr)
			var rows []record.Row
			fn(l.v, r.v, PairContext{LeftTs: l.ts, RightTs: r.ts, Ts: max(l.ts, r.ts)},
				func(o O) { rows = append(rows, record.Row{valueCol: o}) })
			return rows
		},
	}
	if err := spec.Validate(); err != nil {
		env.fail("interval join", err)
	}
	op := newKeyedOp[K](env, 2, func() joins.Timed { return joins.NewInterval(spec) })
	return twoInput(op, j.a.s, j.b.s, j.a.key, j.b.key, boxRow[L], boxRow[R], emitValues[O], j.late)
}

// TimeBoundedJoin starts a stream-stream join with a time-range condition
// and outer variants, as Spark Structured Streaming runs it (seed
// dynamic-joiner-watermarks): finish it with Between, optionally an outer
// type, and Process. The watermark delay of Spark's withWatermark is the
// sources' BoundedOutOfOrderness. O is the result type; L, R and K are
// inferred.
func TimeBoundedJoin[O, L, R any, K comparable](a *KeyedStream[L, K], b *KeyedStream[R, K]) *TimeBoundedBuilder[O, L, R, K] {
	sameEnv("time-bounded join", a.s.env, b.s.env)
	return &TimeBoundedBuilder[O, L, R, K]{a: a, b: b}
}

// TimeBoundedBuilder is a time-bounded join waiting for its range.
type TimeBoundedBuilder[O, L any, R any, K comparable] struct {
	a *KeyedStream[L, K]
	b *KeyedStream[R, K]
}

// Between sets the range: l and r match when
// l.ts + lower <= r.ts <= l.ts + upper, both inclusive, lower <= upper.
func (j *TimeBoundedBuilder[O, L, R, K]) Between(lower, upper time.Duration) *TimeBoundedJoined[O, L, R, K] {
	return &TimeBoundedJoined[O, L, R, K]{a: j.a, b: j.b, lower: lower, upper: upper,
		late: newStream[Late[L, R]](j.a.s.env)}
}

// AtLeast sets a half-bounded range with no upper bound (a job's
// open: upper): l and r match when r.ts >= l.ts + lower (Spark's
// rightTime >= leftTime + lower and no other bound). A left row would wait
// for ever; it waits for right rows up to l.ts + TTL instead — TTL or NoTTL
// is required (Execute fails without one, wrapping ErrInvalid).
func (j *TimeBoundedBuilder[O, L, R, K]) AtLeast(lower time.Duration) *TimeBoundedJoined[O, L, R, K] {
	return &TimeBoundedJoined[O, L, R, K]{a: j.a, b: j.b, lower: lower, open: joins.OpenUpper,
		late: newStream[Late[L, R]](j.a.s.env)}
}

// AtMost sets a half-bounded range with no lower bound (a job's
// open: lower): l and r match when r.ts <= l.ts + upper. A right row would
// wait for ever; it waits for left rows up to r.ts + TTL instead — TTL or
// NoTTL is required.
func (j *TimeBoundedBuilder[O, L, R, K]) AtMost(upper time.Duration) *TimeBoundedJoined[O, L, R, K] {
	return &TimeBoundedJoined[O, L, R, K]{a: j.a, b: j.b, upper: upper, open: joins.OpenLower,
		late: newStream[Late[L, R]](j.a.s.env)}
}

// TimeBoundedJoined is a time-bounded join ready to process; inner unless
// LeftOuter, RightOuter, FullOuter or LeftSemi says otherwise. It runs
// joins.TimeBounded: a match is emitted as soon as both rows are there,
// stamped max(l.ts, r.ts); an unmatched row of an outer side is emitted
// with the other side nil, stamped with its own time, once the watermark
// passes the end of its range, never earlier.
type TimeBoundedJoined[O, L any, R any, K comparable] struct {
	a            *KeyedStream[L, K]
	b            *KeyedStream[R, K]
	lower, upper time.Duration
	open         joins.OpenBound // AtLeast, AtMost: the range's missing bound
	ttl          time.Duration   // with open: how long the waiting side's rows wait
	noTTL        bool            // with open: they wait until the input ends
	typ          joins.TimedJoinType
	late         *Stream[Late[L, R]]
	cond         cond[L, R]
}

// LeftOuter pads unmatched left rows.
func (j *TimeBoundedJoined[O, L, R, K]) LeftOuter() *TimeBoundedJoined[O, L, R, K] {
	j.typ = joins.TimedLeftOuter
	return j
}

// RightOuter pads unmatched right rows.
func (j *TimeBoundedJoined[O, L, R, K]) RightOuter() *TimeBoundedJoined[O, L, R, K] {
	j.typ = joins.TimedRightOuter
	return j
}

// FullOuter pads unmatched rows of both sides.
func (j *TimeBoundedJoined[O, L, R, K]) FullOuter() *TimeBoundedJoined[O, L, R, K] {
	j.typ = joins.TimedFullOuter
	return j
}

// LeftSemi makes it a left semi join (a job's mode: semi; Spark's
// left_semi): each left row that matches at least one right row is emitted
// once, alone — Process's r is always nil — stamped with its own time, as
// soon as its first match is there; right rows are never emitted.
func (j *TimeBoundedJoined[O, L, R, K]) LeftSemi() *TimeBoundedJoined[O, L, R, K] {
	j.typ = joins.TimedLeftSemi
	return j
}

// TTL is how long the rows of a half-bounded range's waiting side wait for
// a match (AtLeast: left rows, up to l.ts + d; AtMost: right rows, up to
// r.ts + d): once the watermark passes that they are dropped (padded on an
// outer side). Only with AtLeast or AtMost.
func (j *TimeBoundedJoined[O, L, R, K]) TTL(d time.Duration) *TimeBoundedJoined[O, L, R, K] {
	j.ttl, j.noTTL = d, false
	return j
}

// NoTTL keeps a half-bounded range's waiting rows until the input ends (a
// job's ttl: none): state grows with the input.
func (j *TimeBoundedJoined[O, L, R, K]) NoTTL() *TimeBoundedJoined[O, L, R, K] {
	j.ttl, j.noTTL = 0, true
	return j
}

// Late is the late-data side output.
func (j *TimeBoundedJoined[O, L, R, K]) Late() *Stream[Late[L, R]] { return j.late }

// Process makes one result per match and per padded row: l or r is nil for
// a padded row (r always, for LeftSemi).
func (j *TimeBoundedJoined[O, L, R, K]) Process(fn func(l *L, r *R) O) *Stream[O] {
	env := j.a.s.env
	spec := &joins.TimeBoundedSpec{
		Type:  j.typ,
		Left:  leftCol,
		Right: rightCol,
		Lower: env.millis("time-bounded join: lower bound", j.lower),
		Upper: env.millis("time-bounded join: upper bound", j.upper),
		Where: j.cond.joins(),
		Open:  j.open,
	}
	switch {
	case j.noTTL:
		spec.TTL = joins.NoTTL
	case j.ttl != 0:
		spec.TTL = env.millis("time-bounded join: ttl", j.ttl)
	}
	if err := spec.Validate(); err != nil {
		env.fail("time-bounded join", err)
	}
	op := newKeyedOp[K](env, 2, func() joins.Timed { return joins.NewTimeBounded(spec) })
	return twoInput(op, j.a.s, j.b.s, j.a.key, j.b.key, boxRow[L], boxRow[R], pairConv(fn), j.late)
}

// pairConv turns a {l, r} pair row into fn's result.
func pairConv[L, R, O any](fn func(l *L, r *R) O) func(o record.Output, emit func(O, int64)) {
	return func(o record.Output, emit func(O, int64)) {
		lb, rb := pairOf[L, R](o.Row)
		var l *L
		var r *R
		if lb != nil {
			l = &lb.v
		}
		if rb != nil {
			r = &rb.v
		}
		emit(fn(l, r), o.Ts)
	}
}
