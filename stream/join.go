package stream

import (
	"time"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// Join starts a window join of a and b (Flink's a.join(b)): finish it with
// Where, EqualTo, Window and Apply. K is the key type and O the result
// type; L and R are inferred: stream.Join[string, string](orange, green).
func Join[K comparable, O, L, R any](a *Stream[L], b *Stream[R]) *JoinedStreams[K, O, L, R] {
	sameEnv("join", a.env, b.env)
	return &JoinedStreams[K, O, L, R]{a: a, b: b}
}

// JoinedStreams is a window join waiting for its left key (Where).
type JoinedStreams[K comparable, O, L, R any] struct {
	a *Stream[L]
	b *Stream[R]
}

// Where sets the left key.
func (j *JoinedStreams[K, O, L, R]) Where(key func(L) K) *JoinWhere[K, O, L, R] {
	return &JoinWhere[K, O, L, R]{j: j, kl: key}
}

// JoinWhere is a window join waiting for its right key (EqualTo).
type JoinWhere[K comparable, O, L, R any] struct {
	j  *JoinedStreams[K, O, L, R]
	kl func(L) K
}

// EqualTo sets the right key: elements join when their keys are equal.
func (w *JoinWhere[K, O, L, R]) EqualTo(key func(R) K) *JoinEqualTo[K, O, L, R] {
	return &JoinEqualTo[K, O, L, R]{w: w, kr: key}
}

// JoinEqualTo is a window join waiting for its window assigner.
type JoinEqualTo[K comparable, O, L, R any] struct {
	w  *JoinWhere[K, O, L, R]
	kr func(R) K
}

// Window sets the window assigner.
func (e *JoinEqualTo[K, O, L, R]) Window(a WindowAssigner) *WindowJoin[K, O, L, R] {
	return &WindowJoin[K, O, L, R]{a: e.w.j.a, b: e.w.j.b, kl: e.w.kl, kr: e.kr, assigner: a,
		late: newStream[Late[L, R]](e.w.j.a.env)}
}

// WindowJoin is a window join ready to apply (seed flink-joining): the
// elements of both sides of one key that share a window are joined
// pairwise when the watermark reaches the window's MaxTimestamp, each
// result stamped with it. Pairs come in left arrival order × right arrival
// order, windows of a key in (end, start) order. It runs joins.Windowed.
type WindowJoin[K comparable, O, L, R any] struct {
	a        *Stream[L]
	b        *Stream[R]
	kl       func(L) K
	kr       func(R) K
	assigner WindowAssigner
	lateness time.Duration
	late     *Stream[Late[L, R]]
	cond     cond[L, R]
}

// AllowedLateness keeps each window d after it fired; an element for it in
// that time fires it again, whole (every pair again, as Flink does).
func (w *WindowJoin[K, O, L, R]) AllowedLateness(d time.Duration) *WindowJoin[K, O, L, R] {
	w.lateness = d
	return w
}

// Late is the late-data side output: the elements that came after all their
// windows were gone (joins.LateWindowClosed).
func (w *WindowJoin[K, O, L, R]) Late() *Stream[Late[L, R]] { return w.late }

// Apply makes one result per pair (Flink's JoinFunction).
func (w *WindowJoin[K, O, L, R]) Apply(fn func(l L, r R) O) *Stream[O] {
	return w.build(joins.TimedInner, func(l *L, r *R, emit func(O)) { emit(fn(*l, *r)) })
}

// ApplyFlat makes zero or more results per pair, passed to emit (Flink's
// FlatJoinFunction).
func (w *WindowJoin[K, O, L, R]) ApplyFlat(fn func(l L, r R, emit func(O))) *Stream[O] {
	return w.build(joins.TimedInner, func(l *L, r *R, emit func(O)) { fn(*l, *r, emit) })
}

// LeftOuterApply is a left outer window join: a window that holds left
// elements but no right one emits each left element with r nil; a window
// holding both sides emits its pairs only (built, as in Flink, on the
// coGroup).
func (w *WindowJoin[K, O, L, R]) LeftOuterApply(fn func(l L, r *R) O) *Stream[O] {
	return w.build(joins.TimedLeftOuter, func(l *L, r *R, emit func(O)) { emit(fn(*l, r)) })
}

// RightOuterApply is the right outer window join: see LeftOuterApply.
func (w *WindowJoin[K, O, L, R]) RightOuterApply(fn func(l *L, r R) O) *Stream[O] {
	return w.build(joins.TimedRightOuter, func(l *L, r *R, emit func(O)) { emit(fn(l, *r)) })
}

// FullOuterApply is the full outer window join: a window holding one side
// only emits each of its elements with the other side nil.
func (w *WindowJoin[K, O, L, R]) FullOuterApply(fn func(l *L, r *R) O) *Stream[O] {
	return w.build(joins.TimedFullOuter, fn2flat(fn))
}

// LeftSemiApply is a left semi window join (a job's mode: semi): each left
// element of a window that holds at least one right element is emitted
// once, alone, stamped with the window's MaxTimestamp; right elements are
// never emitted.
func (w *WindowJoin[K, O, L, R]) LeftSemiApply(fn func(l L) O) *Stream[O] {
	env := w.a.env
	spec := &joins.WindowJoinSpec{
		Type:            joins.TimedLeftSemi,
		Left:            leftCol,
		Right:           rightCol,
		Assigner:        w.assigner.assigner(env, "window join"),
		AllowedLateness: env.millis("window join: allowed lateness", w.lateness),
		Where:           w.cond.joins(),
	}
	if err := spec.Validate(); err != nil {
		env.fail("window join", err)
	}
	op := newKeyedOp[K](env, 2, func() joins.Timed { return joins.NewWindowJoin(spec) })
	return twoInput(op, w.a, w.b, w.kl, w.kr, boxRow[L], boxRow[R], pairConv(func(l *L, _ *R) O { return fn(*l) }), w.late)
}

func fn2flat[L, R, O any](fn func(l *L, r *R) O) func(l *L, r *R, emit func(O)) {
	return func(l *L, r *R, emit func(O)) { emit(fn(l, r)) }
}

// build runs a WindowJoinSpec whose FlatJoin calls fn with the typed pair.
func (w *WindowJoin[K, O, L, R]) build(t joins.TimedJoinType, fn func(l *L, r *R, emit func(O))) *Stream[O] {
	env := w.a.env
	spec := &joins.WindowJoinSpec{
		Type:            t,
		Assigner:        w.assigner.assigner(env, "window join"),
		AllowedLateness: env.millis("window join: allowed lateness", w.lateness),
		FlatJoin:        flatJoin(fn),
		Where:           w.cond.joins(),
	}
	if err := spec.Validate(); err != nil {
		env.fail("window join", err)
	}
	op := newKeyedOp[K](env, 2, func() joins.Timed { return joins.NewWindowJoin(spec) })
	return twoInput(op, w.a, w.b, w.kl, w.kr, boxRow[L], boxRow[R], emitValues[O], w.late)
}

// flatJoin adapts a typed pair function to a joins.FlatJoinFunc: each
// result is a row holding the typed value.
func flatJoin[L, R, O any](fn func(l *L, r *R, emit func(O))) joins.FlatJoinFunc {
	return func(lr, rr record.Row) []record.Row {
		var l *L
		var r *R
		if lr != nil {
			v := unbox[L](lr).v
			l = &v
		}
		if rr != nil {
			v := unbox[R](rr).v
			r = &v
		}
		var rows []record.Row
		fn(l, r, func(o O) { rows = append(rows, record.Row{valueCol: o}) })
		return rows
	}
}

// emitValues emits the typed value of an output row, at the output's time.
func emitValues[O any](o record.Output, emit func(O, int64)) { emit(o.Row[valueCol].(O), o.Ts) }

// CoGroup starts a window coGroup of a and b (Flink's a.coGroup(b)):
// finish it with Where, EqualTo, Window and Apply. K is the key type and O
// the result type; L and R are inferred.
func CoGroup[K comparable, O, L, R any](a *Stream[L], b *Stream[R]) *CoGroupedStreams[K, O, L, R] {
	sameEnv("coGroup", a.env, b.env)
	return &CoGroupedStreams[K, O, L, R]{a: a, b: b}
}

// CoGroupedStreams is a window coGroup waiting for its left key (Where).
type CoGroupedStreams[K comparable, O, L, R any] struct {
	a *Stream[L]
	b *Stream[R]
}

// Where sets the left key.
func (c *CoGroupedStreams[K, O, L, R]) Where(key func(L) K) *CoGroupWhere[K, O, L, R] {
	return &CoGroupWhere[K, O, L, R]{c: c, kl: key}
}

// CoGroupWhere is a window coGroup waiting for its right key (EqualTo).
type CoGroupWhere[K comparable, O, L, R any] struct {
	c  *CoGroupedStreams[K, O, L, R]
	kl func(L) K
}

// EqualTo sets the right key.
func (w *CoGroupWhere[K, O, L, R]) EqualTo(key func(R) K) *CoGroupEqualTo[K, O, L, R] {
	return &CoGroupEqualTo[K, O, L, R]{w: w, kr: key}
}

// CoGroupEqualTo is a window coGroup waiting for its window assigner.
type CoGroupEqualTo[K comparable, O, L, R any] struct {
	w  *CoGroupWhere[K, O, L, R]
	kr func(R) K
}

// Window sets the window assigner.
func (e *CoGroupEqualTo[K, O, L, R]) Window(a WindowAssigner) *WindowCoGroup[K, O, L, R] {
	c := e.w.c
	return &WindowCoGroup[K, O, L, R]{a: c.a, b: c.b, kl: e.w.kl, kr: e.kr, assigner: a,
		late: newStream[Late[L, R]](c.a.env)}
}

// WindowCoGroup is a window coGroup ready to apply: per key and window, a
// function sees both sides' elements, either list possibly empty (never
// both). It runs the joins coGroup machine.
type WindowCoGroup[K comparable, O, L, R any] struct {
	a        *Stream[L]
	b        *Stream[R]
	kl       func(L) K
	kr       func(R) K
	assigner WindowAssigner
	lateness time.Duration
	late     *Stream[Late[L, R]]
}

// AllowedLateness keeps each window d after it fired; an element for it in
// that time fires it again, whole.
func (w *WindowCoGroup[K, O, L, R]) AllowedLateness(d time.Duration) *WindowCoGroup[K, O, L, R] {
	w.lateness = d
	return w
}

// Late is the late-data side output.
func (w *WindowCoGroup[K, O, L, R]) Late() *Stream[Late[L, R]] { return w.late }

// Apply calls fn once per key and window firing with both sides' elements
// in arrival order (Flink's CoGroupFunction); what fn emits is stamped with
// the window's MaxTimestamp. fn must not keep the slices.
func (w *WindowCoGroup[K, O, L, R]) Apply(fn func(key K, lefts []L, rights []R, emit func(O))) *Stream[O] {
	env := w.a.env
	spec := &joins.CoGroupSpec{
		Assigner:        w.assigner.assigner(env, "coGroup"),
		AllowedLateness: env.millis("coGroup: allowed lateness", w.lateness),
		Func: func(left, right []record.Row) []record.Row {
			return []record.Row{{leftCol: left, rightCol: right}}
		},
	}
	if err := spec.Validate(); err != nil {
		env.fail("coGroup", err)
	}
	op := newKeyedOp[K](env, 2, func() joins.Timed { return joins.NewCoGroup(spec) })
	var lefts []L
	var rights []R
	conv := func(o record.Output, emit func(O, int64)) {
		lrows, rrows := o.Row[leftCol].([]record.Row), o.Row[rightCol].([]record.Row)
		lefts, rights = lefts[:0], rights[:0]
		var key K
		for _, r := range lrows {
			lefts = append(lefts, unbox[L](r).v)
			key = r[keyCol].(K)
		}
		for _, r := range rrows {
			rights = append(rights, unbox[R](r).v)
			key = r[keyCol].(K)
		}
		fn(key, lefts, rights, func(v O) { emit(v, o.Ts) })
	}
	rowL := func(v L, ts int64) record.Row { return boxKeyRow(v, ts, w.kl(v)) }
	rowR := func(v R, ts int64) record.Row { return boxKeyRow(v, ts, w.kr(v)) }
	return twoInput(op, w.a, w.b, w.kl, w.kr, rowL, rowR, conv, w.late)
}
