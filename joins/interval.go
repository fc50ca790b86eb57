package joins

import (
	"fmt"

	"github.com/joinery/joinery/record"
)

// IntervalSpec describes an interval join (Flink's
// keyBy(...).intervalJoin(...).between(lower, upper).process(...)): a left
// element l and a right element r of one key join when
//
//	l.ts + Lower <= r.ts <= l.ts + Upper
//
// (seed flink-joining). Bounds are inclusive unless LowerExclusive or
// UpperExclusive; they may be negative, with Lower <= Upper. A pair is
// emitted as soon as both elements are there, stamped max(l.ts, r.ts).
//
// It is a plain value: fill it, call Validate, then share a pointer to it,
// read-only, among all keys' joins.
type IntervalSpec struct {
	// Left and Right name the sides; without Project, Join or FlatJoin the
	// output row is {Left: left row, Right: right row}.
	Left, Right string
	// Lower and Upper bound r.ts - l.ts (ms).
	Lower, Upper int64
	// LowerExclusive and UpperExclusive exclude a bound (Flink's
	// lowerBoundExclusive, upperBoundExclusive): with integer times they move
	// it inwards by 1.
	LowerExclusive, UpperExclusive bool
	// Join makes one output row per pair; FlatJoin zero or more. At most one
	// may be set.
	Join     JoinFunc
	FlatJoin FlatJoinFunc
	// Project lists the output columns; only without Join and FlatJoin.
	Project []Column
	// Where is the residual condition of a pair, after the key and the
	// range (zero: none). A row failing its own side's part is not buffered.
	Where Condition
	// Late is the late-data rule (zero: ts < watermark, Flink's).
	Late LateRule
}

// Validate reports every problem of the spec, joined with errors.Join, each
// naming its field, e.g. "lower: must be <= upper (5 > 2)".
func (s *IntervalSpec) Validate() error {
	if s == nil {
		return fmt.Errorf("joins: nil interval join spec")
	}
	var c collector
	validateBounds(&c, s.Lower, s.Upper, s.LowerExclusive, s.UpperExclusive)
	validateLate(&c, s.Late, true)
	validateShape(c.bad, s.Left, s.Right, s.Project, s.Join, s.FlatJoin)
	return c.err()
}

func validateBounds(c *collector, lower, upper int64, lowerEx, upperEx bool) {
	if lower > upper {
		c.bad("lower", "must be <= upper (%d > %d)", lower, upper)
		return
	}
	lo, hi := effectiveBounds(lower, upper, lowerEx, upperEx)
	if lo > hi {
		c.bad("upper_exclusive", "the exclusive bounds (%d, %d) leave no time to match", lower, upper)
	}
}

// effectiveBounds turns exclusive bounds into inclusive ones.
func effectiveBounds(lower, upper int64, lowerEx, upperEx bool) (lo, hi int64) {
	lo, hi = lower, upper
	if lowerEx {
		lo = addSat(lo, 1)
	}
	if upperEx {
		hi = addSat(hi, -1)
	}
	return lo, hi
}

// NewInterval returns the empty state of one key of an interval join. spec
// must be valid and must not change while the join is in use.
func NewInterval(spec *IntervalSpec) *Interval {
	lo, hi := effectiveBounds(spec.Lower, spec.Upper, spec.LowerExclusive, spec.UpperExclusive)
	return &Interval{lo: lo, hi: hi, where: spec.Where, rule: spec.Late,
		shape: &pairShape{left: spec.Left, right: spec.Right, project: spec.Project, join: spec.Join, flat: spec.FlatJoin}}
}

// Interval is the per-key state of an interval join: each side's buffered
// elements sorted by time (arrival order among equal times). It implements
// Timed.
//
// An element whose time is below the watermark on arrival is Late
// (LateBehindWatermark), as in Flink (IntervalSpec.Late: at or below it,
// Spark's rule; never, Kafka Streams'). An element failing its own side's
// part of IntervalSpec.Where is dropped (it cannot match); pairs must pass
// the whole condition. An arriving element joins every
// buffered element of the other side in range, in that side's order; each
// pair is one +I (or FlatJoin's rows) stamped max(l.ts, r.ts), with id
// interval|leftPos|rightPos|ts|n. It is then buffered while a later element
// can still match it: a left element until the watermark passes l.ts + upper,
// a right one until it passes r.ts - lower (timers at those times + 1; an
// element already past is not buffered at all). OnTimer(ts) drops whatever
// is due at or before ts.
//
// An Interval is not safe for concurrent use; it keeps the rows it is given
// and shares them with its outputs: treat them as read-only.
type Interval struct {
	lo, hi      int64
	where       Condition
	rule        LateRule
	shape       *pairShape
	left, right []elem
}

// OnElement joins e with the other side's buffer and buffers it.
func (j *Interval) OnElement(e Element, watermark int64, fx *Effects) {
	if e.Side != record.Left && e.Side != record.Right {
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateUnknownSide})
		return
	}
	if j.rule.late(e.Ts, watermark) {
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateBehindWatermark})
		return
	}
	if !j.where.side(e.Side, e.Row) {
		return // early state exclusion: it can never match
	}
	el := elemOf(e)
	if e.Side == record.Left {
		from, to := firstAtLeast(j.right, addSat(e.Ts, j.lo)), firstAbove(j.right, addSat(e.Ts, j.hi))
		for k := from; k < to; k++ {
			if r := &j.right[k]; j.where.pair(el.Row, r.Row) {
				emitPair(fx, j.shape, "interval", max(e.Ts, r.Ts), &el, r, max(e.Ts, r.Ts))
			}
		}
		if end := addSat(e.Ts, j.hi); j.rule.open(end, watermark) {
			j.left = insertByTs(j.left, el)
			fx.SetTimers = append(fx.SetTimers, j.rule.expiry(end))
		}
		return
	}
	from, to := firstAtLeast(j.left, subSat(e.Ts, j.hi)), firstAbove(j.left, subSat(e.Ts, j.lo))
	for k := from; k < to; k++ {
		if l := &j.left[k]; j.where.pair(l.Row, el.Row) {
			emitPair(fx, j.shape, "interval", max(e.Ts, l.Ts), l, &el, max(e.Ts, l.Ts))
		}
	}
	if end := subSat(e.Ts, j.lo); j.rule.open(end, watermark) {
		j.right = insertByTs(j.right, el)
		fx.SetTimers = append(fx.SetTimers, j.rule.expiry(end))
	}
}

// OnTimer drops the left elements with l.ts + upper < ts and the right ones
// with r.ts - lower < ts (<= ts under LateAtWatermark): no element on time at
// ts can match them.
func (j *Interval) OnTimer(ts int64, watermark int64, fx *Effects) {
	n := 0
	for n < len(j.left) && !j.rule.open(addSat(j.left[n].Ts, j.hi), ts) {
		n++
	}
	j.left = trim(j.left, n)
	n = 0
	for n < len(j.right) && !j.rule.open(subSat(j.right[n].Ts, j.lo), ts) {
		n++
	}
	j.right = trim(j.right, n)
}

// trim drops the first n elements, releasing an emptied slice.
func trim(es []elem, n int) []elem {
	if n == len(es) {
		return nil
	}
	if n == 0 {
		return es
	}
	return append(es[:0:0], es[n:]...)
}

// Empty reports whether nothing is buffered.
func (j *Interval) Empty() bool { return len(j.left) == 0 && len(j.right) == 0 }

type sidesSnap struct {
	L []elem `json:"l"`
	R []elem `json:"r"`
}

// Snapshot encodes the state: TimedSnapshotVersion, 'I', then JSON of both
// buffers in order. Equal states encode to equal bytes. The bytes are
// snapshotReflect's, written from the elements' cached JSON.
func (j *Interval) Snapshot() []byte {
	return fastSnap('I', snapSize(snapSize(16, j.left, elemEnc), j.right, elemEnc), func(b []byte) ([]byte, bool) {
		return appendSides(b, "l", "r", j.left, j.right, appendElem)
	}, j.snapshotReflect)
}

// snapshotReflect is Snapshot by encoding/json's reflection: the
// fallback, and what tests compare Snapshot with.
func (j *Interval) snapshotReflect() []byte {
	return encodeSnap('I', sidesSnap{L: j.left, R: j.right})
}

// Restore replaces the state with the one b encodes; on error (a wrapped
// ErrBadTimedSnapshot) the state is unchanged.
func (j *Interval) Restore(b []byte) error {
	var s sidesSnap
	if err := decodeSnap(b, 'I', &s); err != nil {
		return err
	}
	if !sortedByTs(s.L) || !sortedByTs(s.R) {
		return fmt.Errorf("%w: buffer not sorted by time", ErrBadTimedSnapshot)
	}
	j.left, j.right = trim(s.L, 0), trim(s.R, 0)
	if len(j.left) == 0 {
		j.left = nil
	}
	if len(j.right) == 0 {
		j.right = nil
	}
	return nil
}
