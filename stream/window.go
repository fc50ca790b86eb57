package stream

import (
	"errors"
	"time"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// Window is an event-time window [Start, End) in ms; its results are
// stamped MaxTimestamp, End-1 (seed flink-joining: [5,10) → 9).
type Window = joins.Window

// WindowAssigner says which windows an event time belongs to: build one
// with TumblingEventTime, SlidingEventTime or SessionEventTime. It is
// checked when a join or window is built; a bad one makes Execute fail.
type WindowAssigner struct {
	kind                     joins.AssignerKind
	size, slide, gap, offset time.Duration
}

// TumblingEventTime is Flink's TumblingEventTimeWindows.of(size): windows
// [n*size, (n+1)*size).
func TumblingEventTime(size time.Duration) WindowAssigner {
	return WindowAssigner{kind: joins.TumblingWindows, size: size}
}

// SlidingEventTime is Flink's SlidingEventTimeWindows.of(size, slide):
// windows of size starting every slide; a time is in ceil(size/slide) of
// them.
func SlidingEventTime(size, slide time.Duration) WindowAssigner {
	return WindowAssigner{kind: joins.SlidingWindows, size: size, slide: slide}
}

// SessionEventTime is Flink's EventTimeSessionWindows.withGap(gap): per
// key, elements (of both sides, for a join) closer than the gap share a
// window.
func SessionEventTime(gap time.Duration) WindowAssigner {
	return WindowAssigner{kind: joins.SessionWindows, gap: gap}
}

// WithOffset shifts the window starts of a tumbling or sliding assigner by
// offset (Flink's of(size, offset)); |offset| < size (tumbling) or slide
// (sliding).
func (w WindowAssigner) WithOffset(offset time.Duration) WindowAssigner {
	w.offset = offset
	return w
}

// assigner converts w, recording problems in env.
func (w WindowAssigner) assigner(env *Env, what string) joins.Assigner {
	ms := func(field string, d time.Duration) int64 { return env.millis(what+": window "+field, d) }
	var a joins.Assigner
	switch w.kind {
	case joins.TumblingWindows:
		a = joins.Tumbling(ms("size", w.size), ms("offset", w.offset))
	case joins.SlidingWindows:
		a = joins.Sliding(ms("size", w.size), ms("slide", w.slide), ms("offset", w.offset))
	case joins.SessionWindows:
		if w.offset != 0 {
			env.fail(what, errWindowOffsetSession)
		}
		a = joins.Session(ms("gap", w.gap))
	default:
		a = joins.Assigner{Kind: w.kind}
	}
	if err := a.Validate(); err != nil {
		env.fail(what+": window", err)
	}
	return a
}

var errWindowOffsetSession = errors.New("a session window takes no offset")

// windowOf rebuilds the window of a firing from its MaxTimestamp: tumbling
// and sliding windows have the assigner's size; a session window starts at
// its earliest element's time.
func windowOf(a joins.Assigner, maxTs, earliest int64) Window {
	end := maxTs + 1
	if a.Kind == joins.SessionWindows {
		return Window{Start: earliest, End: end}
	}
	return Window{Start: end - a.Size, End: end}
}

// WindowedStream is a keyed stream with a window assigner (Flink's
// WindowedStream). Finish it with Reduce, WindowApply or WindowAggregate.
type WindowedStream[T any, K comparable] struct {
	k        *KeyedStream[T, K]
	assigner WindowAssigner
	lateness time.Duration
	late     *Stream[T]
}

// Window groups each key's elements into windows. A window fires once when
// the watermark reaches its MaxTimestamp; its results are stamped with it.
func (k *KeyedStream[T, K]) Window(a WindowAssigner) *WindowedStream[T, K] {
	return &WindowedStream[T, K]{k: k, assigner: a, late: newStream[T](k.s.env)}
}

// AllowedLateness keeps each window d after it fired; an element for it in
// that time fires it again, whole (Flink's allowedLateness).
func (w *WindowedStream[T, K]) AllowedLateness(d time.Duration) *WindowedStream[T, K] {
	w.lateness = d
	return w
}

// Late is the late-data side output (Flink's sideOutputLateData): the
// elements that came after all their windows were gone, at their own times.
func (w *WindowedStream[T, K]) Late() *Stream[T] { return w.late }

// Reduce emits, per key and window firing, the elements of the window
// combined with fn in arrival order.
func (w *WindowedStream[T, K]) Reduce(fn func(acc, v T) T) *Stream[T] {
	return WindowApply(w, func(_ K, _ Window, elems []T, emit func(T)) {
		acc := elems[0]
		for _, v := range elems[1:] {
			acc = fn(acc, v)
		}
		emit(acc)
	})
}

// WindowAggregate folds each key's window with add, from zero, in arrival
// order, and emits result(key, window, acc) per firing.
func WindowAggregate[A, O, T any, K comparable](w *WindowedStream[T, K], zero A, add func(acc A, v T) A, result func(key K, win Window, acc A) O) *Stream[O] {
	return WindowApply(w, func(key K, win Window, elems []T, emit func(O)) {
		acc := zero
		for _, v := range elems {
			acc = add(acc, v)
		}
		emit(result(key, win, acc))
	})
}

// WindowApply calls fn per key and window firing with the window's
// elements in arrival order (Flink's WindowFunction); what fn emits is
// stamped with the window's MaxTimestamp. It runs the joins coGroup machine
// with one side.
func WindowApply[O, T any, K comparable](w *WindowedStream[T, K], fn func(key K, win Window, elems []T, emit func(O))) *Stream[O] {
	env := w.k.s.env
	spec := &joins.CoGroupSpec{
		Assigner:        w.assigner.assigner(env, "window"),
		AllowedLateness: env.millis("window: allowed lateness", w.lateness),
		Func:            func(left, right []record.Row) []record.Row { return []record.Row{{leftCol: left}} },
	}
	if err := spec.Validate(); err != nil {
		env.fail("window", err)
	}
	op := newKeyedOp[K](env, 1, func() joins.Timed { return joins.NewCoGroup(spec) })
	out := newStream[O](env)
	var elems []T
	op.out = func(o record.Output) {
		rows := o.Row[leftCol].([]record.Row)
		elems = elems[:0]
		earliest := int64(0)
		for i, r := range rows {
			b := unbox[T](r)
			elems = append(elems, b.v)
			if i == 0 || b.ts < earliest {
				earliest = b.ts
			}
		}
		key := rows[0][keyCol].(K)
		fn(key, windowOf(spec.Assigner, o.Ts, earliest), elems, func(v O) { out.emit(v, o.Ts) })
	}
	op.late = func(l joins.Late) { w.late.emit(unbox[T](l.Element.Row).v, l.Element.Ts) }
	op.forward = func(wm int64) {
		out.emitWatermark(wm)
		w.late.emitWatermark(wm)
	}
	w.k.s.subscribe(func(v T, ts int64) {
		key := w.k.key(v)
		op.element(record.Left, key, boxKeyRow(v, ts, key), ts)
	}, func(wm int64) { op.watermark(0, wm) })
	return out
}
