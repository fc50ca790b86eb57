package joins

import (
	"fmt"
	"math"

	"github.com/joinery/joinery/record"
)

// TimeBoundedSpec describes a stream-stream join with a time-range condition
// and outer variants, as Spark Structured Streaming runs it (seed
// dynamic-joiner-watermarks: attach the ad shown within 2 minutes after a
// page visit, and emit the visit alone when none came — Lower 0, Upper
// 120000, TimedLeftOuter). A left row l and a right row r of one key match
// when
//
//	l.ts + Lower <= r.ts <= l.ts + Upper    (inclusive, Lower <= Upper)
//
// It is a plain value: fill it, call Validate, then share a pointer to it,
// read-only, among all keys' joins.
type TimeBoundedSpec struct {
	Type TimedJoinType
	// Left and Right name the sides; without Project the output row is
	// {Left: left row or null, Right: right row or null}.
	Left, Right string
	// Lower and Upper bound r.ts - l.ts (ms), both inclusive.
	Lower, Upper int64
	// Project lists the output columns; a padded side's columns are null.
	Project []Column
	// Where is the residual condition of a pair, after the key and the
	// range (zero: none). A row failing its own side's part is never
	// buffered: on an outer side it is padded at once (Spark's early state
	// exclusion).
	Where Condition
	// Late is the late-data rule (zero: ts < watermark).
	Late LateRule
	// Open makes the range half-bounded (Spark's leftTime > rightTime with
	// no other bound): OpenLower drops the lower bound (r.ts - l.ts <=
	// Upper only), OpenUpper the upper one (r.ts - l.ts >= Lower only). The
	// open bound's field must be 0. The rows of the side the open bound lets
	// wait for ever — right rows under OpenLower, left rows under OpenUpper
	// — are kept for TTL instead: a right row meets left rows up to
	// r.ts + TTL (OpenLower), a left row right rows up to l.ts + TTL
	// (OpenUpper), and is retired (padded on an outer side) once the
	// watermark passes that. TTL is required with Open (NoTTL: kept for
	// ever, until the input ends) and only with it.
	Open OpenBound
	TTL  int64
}

// OpenBound names the missing bound of a half-bounded time range.
type OpenBound uint8

const (
	// OpenNone: both bounds hold (the zero value).
	OpenNone OpenBound = iota
	// OpenLower: no lower bound.
	OpenLower
	// OpenUpper: no upper bound.
	OpenUpper
)

// NoTTL is a TTL that never expires: state is kept until the input ends
// (the watermark reaches its maximum). Unbounded joins and half-bounded
// time-bounded joins take it.
const NoTTL int64 = math.MaxInt64

// Validate reports every problem of the spec, joined with errors.Join, each
// naming its field.
func (s *TimeBoundedSpec) Validate() error {
	if s == nil {
		return fmt.Errorf("joins: nil time-bounded join spec")
	}
	var c collector
	if !s.Type.valid() {
		c.bad("type", "unknown join type %d (want inner, left, right, full or semi)", int(s.Type))
	}
	validateSemi(&c, s.Type, s.Project)
	switch s.Open {
	case OpenNone:
		validateBounds(&c, s.Lower, s.Upper, false, false)
		if s.TTL != 0 {
			c.bad("ttl", "only for a half-bounded range (open: lower or upper): both bounds retire the rows")
		}
	case OpenLower, OpenUpper:
		open, bound, other := "lower", s.Lower, s.Upper
		if s.Open == OpenUpper {
			open, bound, other = "upper", s.Upper, s.Lower
		}
		if bound != 0 {
			c.bad(open, "must not be set with open: %s (got %d)", open, bound)
		}
		switch {
		case s.TTL <= 0:
			c.bad("ttl", "must be set with open: %s: how long rows wait for a match without an %s bound (a duration, or none: for ever), got %d", open, open, s.TTL)
		case s.Open == OpenLower && subSat(0, s.TTL) > other:
			c.bad("ttl", "must be at least -upper (%d) or no pair could ever match, got %d", subSat(0, other), s.TTL)
		case s.Open == OpenUpper && s.TTL < other:
			c.bad("ttl", "must be at least lower (%d) or no pair could ever match, got %d", other, s.TTL)
		}
	default:
		c.bad("open", "unknown open bound %d (want lower or upper)", s.Open)
	}
	validateLate(&c, s.Late, true)
	validateShape(c.bad, s.Left, s.Right, s.Project, nil, nil)
	return c.err()
}

// NewTimeBounded returns the empty state of one key of a time-bounded join.
// spec must be valid and must not change while the join is in use.
func NewTimeBounded(spec *TimeBoundedSpec) *TimeBounded {
	lo, hi := spec.Lower, spec.Upper
	switch spec.Open {
	case OpenLower:
		lo = subSat(0, spec.TTL) // a right row meets left rows up to r.ts + TTL
	case OpenUpper:
		hi = spec.TTL // a left row meets right rows up to l.ts + TTL
	}
	return &TimeBounded{typ: spec.Type, lo: lo, hi: hi, where: spec.Where, rule: spec.Late, kind: "outer",
		shape: &pairShape{left: spec.Left, right: spec.Right, project: spec.Project, semi: spec.Type.semi()}}
}

// TimeBounded is the per-key state of a time-bounded join: each side's
// buffered rows sorted by time, each with whether it has matched. It
// implements Timed.
//
//   - An element below the watermark on arrival is Late
//     (LateBehindWatermark), and takes no part in the join (TimeBoundedSpec.Late:
//     at or below it, Spark's rule; never, Kafka Streams').
//   - An element failing its own side's part of TimeBoundedSpec.Where is
//     never buffered: on an outer side it is emitted padded at once, stamped
//     with its own time; on an inner side it is dropped.
//   - Only a pair passing the whole condition is a match; a row that matched
//     is never padded (SPARK-26187).
//   - A match is emitted as soon as both rows are there: +I stamped
//     max(l.ts, r.ts), id outer|leftPos|rightPos|ts|0.
//   - A row of an outer side that never matched is emitted padded with nulls,
//     stamped with its own time, id outer|leftPos|-|l.ts|0 (or
//     outer|-|rightPos|r.ts|0), once the watermark passes the end of its
//     range — l.ts + Upper for a left row, r.ts - Lower for a right row — and
//     never earlier: the timer is that end + 1. A row arriving with its range
//     already passed is matched against the buffer and, unmatched, padded at
//     once. Rows are dropped at the same time; a matched row is never padded.
//   - A left semi join (TimedLeftSemi, Spark's left_semi with
//     SymmetricHashJoinStateManager's rules) emits a left row alone, stamped
//     with its own time, id semi|leftPos|-|l.ts|0, once: on arrival when a
//     buffered right row matches it (it is then not buffered: Spark's
//     early state exclusion of a matched left row), or when the first
//     right row matching it arrives (it stays buffered, marked matched, and
//     no later right row emits it again). Right rows are always buffered
//     (they may match later left rows); nothing is ever padded, and a row
//     failing its own side's condition is dropped.
//
// A TimeBounded is not safe for concurrent use; it keeps the rows it is given
// and shares them with its outputs: treat them as read-only.
type TimeBounded struct {
	typ    TimedJoinType
	lo, hi int64
	// all (an unbounded join): every buffered row of the other side is in
	// range; lo = -ttl and hi = ttl then only time the rows' expiry.
	all  bool
	kind string // output id kind

	where       Condition
	rule        LateRule
	shape       *pairShape
	left, right []matchElem
}

type matchElem struct {
	elem
	Matched bool `json:"m,omitempty"`
}

// firstMatchAtLeast and firstMatchAbove are firstAtLeast and firstAbove on
// matchElems.
func firstMatchAbove(es []matchElem, t int64) int {
	lo, hi := 0, len(es)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if es[m].Ts > t {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

func firstMatchAtLeast(es []matchElem, t int64) int {
	if t == math.MinInt64 {
		return 0
	}
	return firstMatchAbove(es, t-1)
}

func insertMatch(es []matchElem, e matchElem) []matchElem {
	i := len(es)
	for i > 0 && es[i-1].Ts > e.Ts {
		i--
	}
	es = append(es, matchElem{})
	copy(es[i+1:], es[i:])
	es[i] = e
	return es
}

// span is the part of a buffer with times in [lo, hi]: all of it in an
// unbounded join.
func (j *TimeBounded) span(es []matchElem, lo, hi int64) (from, to int) {
	if j.all {
		return 0, len(es)
	}
	return firstMatchAtLeast(es, lo), firstMatchAbove(es, hi)
}

// OnElement emits e's matches with the other side's buffer and buffers it
// (or pads it at once when its range has already passed or it fails its
// side's condition).
func (j *TimeBounded) OnElement(e Element, watermark int64, fx *Effects) {
	if e.Side != record.Left && e.Side != record.Right {
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateUnknownSide})
		return
	}
	if j.rule.late(e.Ts, watermark) {
		fx.Late = append(fx.Late, Late{Element: e, Reason: LateBehindWatermark})
		return
	}
	me := matchElem{elem: elemOf(e)}
	if !j.where.side(e.Side, e.Row) {
		// Early state exclusion: it can never match.
		switch {
		case e.Side == record.Left && j.typ.padLeft():
			emitPair(fx, j.shape, j.kind, e.Ts, &me.elem, nil, e.Ts)
		case e.Side == record.Right && j.typ.padRight():
			emitPair(fx, j.shape, j.kind, e.Ts, nil, &me.elem, e.Ts)
		}
		return
	}
	if j.typ.semi() {
		j.onSemi(e.Side, me, watermark, fx)
		return
	}
	if e.Side == record.Left {
		from, to := j.span(j.right, addSat(e.Ts, j.lo), addSat(e.Ts, j.hi))
		for k := from; k < to; k++ {
			r := &j.right[k]
			if !j.where.pair(me.Row, r.Row) {
				continue
			}
			r.Matched, me.Matched = true, true
			ts := max(e.Ts, r.Ts)
			emitPair(fx, j.shape, j.kind, ts, &me.elem, &r.elem, ts)
		}
		if end := addSat(e.Ts, j.hi); j.rule.open(end, watermark) {
			j.left = insertMatch(j.left, me)
			fx.SetTimers = append(fx.SetTimers, j.rule.expiry(end))
		} else if !me.Matched && j.typ.padLeft() {
			emitPair(fx, j.shape, j.kind, e.Ts, &me.elem, nil, e.Ts)
		}
		return
	}
	from, to := j.span(j.left, subSat(e.Ts, j.hi), subSat(e.Ts, j.lo))
	for k := from; k < to; k++ {
		l := &j.left[k]
		if !j.where.pair(l.Row, me.Row) {
			continue
		}
		l.Matched, me.Matched = true, true
		ts := max(e.Ts, l.Ts)
		emitPair(fx, j.shape, j.kind, ts, &l.elem, &me.elem, ts)
	}
	if end := subSat(e.Ts, j.lo); j.rule.open(end, watermark) {
		j.right = insertMatch(j.right, me)
		fx.SetTimers = append(fx.SetTimers, j.rule.expiry(end))
	} else if !me.Matched && j.typ.padRight() {
		emitPair(fx, j.shape, j.kind, e.Ts, nil, &me.elem, e.Ts)
	}
}

// onSemi applies an element of a left semi join that passed its side's
// condition.
func (j *TimeBounded) onSemi(side record.Side, me matchElem, watermark int64, fx *Effects) {
	if side == record.Left {
		from, to := j.span(j.right, addSat(me.Ts, j.lo), addSat(me.Ts, j.hi))
		for k := from; k < to; k++ {
			if j.where.pair(me.Row, j.right[k].Row) {
				// Matched on arrival: emitted once and never buffered.
				emitSemi(fx, j.shape, &me.elem)
				return
			}
		}
		if end := addSat(me.Ts, j.hi); j.rule.open(end, watermark) {
			j.left = insertMatch(j.left, me)
			fx.SetTimers = append(fx.SetTimers, j.rule.expiry(end))
		}
		return
	}
	from, to := j.span(j.left, subSat(me.Ts, j.hi), subSat(me.Ts, j.lo))
	for k := from; k < to; k++ {
		if l := &j.left[k]; !l.Matched && j.where.pair(l.Row, me.Row) {
			l.Matched = true
			emitSemi(fx, j.shape, &l.elem)
		}
	}
	if end := subSat(me.Ts, j.lo); j.rule.open(end, watermark) {
		j.right = insertMatch(j.right, me)
		fx.SetTimers = append(fx.SetTimers, j.rule.expiry(end))
	}
}

// OnTimer retires the left rows with l.ts + upper < ts, then the right rows
// with r.ts - lower < ts, each in time order, padding the unmatched rows of
// an outer side.
func (j *TimeBounded) OnTimer(ts int64, watermark int64, fx *Effects) {
	n := 0
	for ; n < len(j.left) && !j.rule.open(addSat(j.left[n].Ts, j.hi), ts); n++ {
		if l := &j.left[n]; !l.Matched && j.typ.padLeft() {
			emitPair(fx, j.shape, j.kind, l.Ts, &l.elem, nil, l.Ts)
		}
	}
	j.left = trimMatch(j.left, n)
	n = 0
	for ; n < len(j.right) && !j.rule.open(subSat(j.right[n].Ts, j.lo), ts); n++ {
		if r := &j.right[n]; !r.Matched && j.typ.padRight() {
			emitPair(fx, j.shape, j.kind, r.Ts, nil, &r.elem, r.Ts)
		}
	}
	j.right = trimMatch(j.right, n)
}

func trimMatch(es []matchElem, n int) []matchElem {
	if n == len(es) {
		return nil
	}
	if n == 0 {
		return es
	}
	return append(es[:0:0], es[n:]...)
}

// Empty reports whether nothing is buffered.
func (j *TimeBounded) Empty() bool { return len(j.left) == 0 && len(j.right) == 0 }

type matchSnap struct {
	L []matchElem `json:"l"`
	R []matchElem `json:"r"`
}

// Snapshot encodes the state: TimedSnapshotVersion, 'O', then JSON of both
// buffers in order with their matched flags. Equal states encode to equal
// bytes. The bytes are snapshotReflect's, written from the elements'
// cached JSON.
func (j *TimeBounded) Snapshot() []byte {
	return fastSnap('O', snapSize(snapSize(16, j.left, matchElemEnc), j.right, matchElemEnc), func(b []byte) ([]byte, bool) {
		return appendSides(b, "l", "r", j.left, j.right, appendMatchElem)
	}, j.snapshotReflect)
}

// snapshotReflect is Snapshot by encoding/json's reflection: the
// fallback, and what tests compare Snapshot with.
func (j *TimeBounded) snapshotReflect() []byte {
	return encodeSnap('O', matchSnap{L: j.left, R: j.right})
}

// Restore replaces the state with the one b encodes; on error (a wrapped
// ErrBadTimedSnapshot) the state is unchanged.
func (j *TimeBounded) Restore(b []byte) error {
	var s matchSnap
	if err := decodeSnap(b, 'O', &s); err != nil {
		return err
	}
	for _, es := range [][]matchElem{s.L, s.R} {
		for i := 1; i < len(es); i++ {
			if es[i].Ts < es[i-1].Ts {
				return fmt.Errorf("%w: buffer not sorted by time", ErrBadTimedSnapshot)
			}
		}
	}
	j.left, j.right = trimMatch(s.L, 0), trimMatch(s.R, 0)
	if len(j.left) == 0 {
		j.left = nil
	}
	if len(j.right) == 0 {
		j.right = nil
	}
	return nil
}
