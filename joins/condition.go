package joins

import (
	"fmt"
	"math"

	"github.com/joinery/joinery/record"
)

// Condition is the residual (non-equi) part of a stream-stream join's
// condition, applied after the key match (and, for interval and time-bounded
// joins, after the time range): a left row l and a right row r of one key
// match only when
//
//	Left(l) && Right(r) && Pair(l, r)
//
// each nil function counting as true. The zero Condition matches every pair,
// which is the join without a residual condition.
//
// Left and Right are the conjuncts that read one side only (Spark's
// JoinConditionSplitPredicates leftSideOnly / rightSideOnly). They allow
// Spark's early state exclusion: a row that fails its own side's condition
// can never match, so it is never buffered; on an outer side it is emitted
// padded with nulls at once, on an inner side it is dropped (it is not late:
// it is filtered, as by the condition). A row that matched is never also
// emitted padded (SPARK-26187): "matched" means matched a pair that passes
// the whole condition.
//
// The functions must be pure and deterministic (replays re-evaluate them),
// must not keep or modify the rows, and must not panic; one that cannot
// decide (a runtime error in an expression) returns false.
type Condition struct {
	Pair  func(l, r record.Row) bool
	Left  func(l record.Row) bool
	Right func(r record.Row) bool
}

// IsZero reports whether c has no function: every pair matches.
func (c Condition) IsZero() bool { return c.Pair == nil && c.Left == nil && c.Right == nil }

// side reports whether row passes its own side's condition.
func (c *Condition) side(s record.Side, row record.Row) bool {
	if s == record.Left {
		return c.Left == nil || c.Left(row)
	}
	return c.Right == nil || c.Right(row)
}

// pair reports whether the pair passes the two-sided condition; both rows
// are assumed to pass their own sides'.
func (c *Condition) pair(l, r record.Row) bool { return c.Pair == nil || c.Pair(l, r) }

// match reports whether the pair passes the whole condition.
func (c *Condition) match(l, r record.Row) bool {
	return c.side(record.Left, l) && c.side(record.Right, r) && c.pair(l, r)
}

// LateRule decides when an element is behind the watermark and is refused
// as late. The zero value is LateBeforeWatermark.
type LateRule uint8

const (
	// LateBeforeWatermark ("ts<wm", the default) is Flink's and Kafka's
	// processor rule: an element is late iff ts < watermark; a window closes
	// when the watermark reaches end - 1 (+ allowed lateness).
	LateBeforeWatermark LateRule = iota
	// LateAtWatermark ("ts<=wm") is Spark's: the watermark is the largest
	// time that is already complete, so an element with ts <= watermark is
	// late, a buffered row is dropped as soon as the watermark reaches the
	// end of its range, and a window closes (and fires) when its end <=
	// watermark (+ allowed lateness).
	LateAtWatermark
	// LateNever ("none") is Kafka Streams' stream-stream join rule: the
	// watermark drops nothing. An element behind it is still joined with
	// what is buffered (and, on an outer side, padded at once when unmatched
	// and its range has passed); only the buffers' retention bounds what it
	// can meet. Write the watermark as stream time - grace: a buffered row is
	// kept, and an unmatched one padded, once stream time passes ts + after +
	// grace. For interval and time-bounded joins only.
	LateNever
)

var lateRuleNames = [...]string{"ts<wm", "ts<=wm", "none"}

func (r LateRule) String() string {
	if r.valid() {
		return lateRuleNames[r]
	}
	return fmt.Sprintf("LateRule(%d)", uint8(r))
}

func (r LateRule) valid() bool { return r <= LateNever }

// ParseLateRule parses "ts<wm", "ts<=wm" or "none"; "" is the default,
// "ts<wm".
func ParseLateRule(s string) (LateRule, error) {
	if s == "" {
		return LateBeforeWatermark, nil
	}
	for i, n := range lateRuleNames {
		if n == s {
			return LateRule(i), nil
		}
	}
	return 0, fmt.Errorf("joins: unknown late rule %q (want ts<wm, ts<=wm or none)", s)
}

// late reports whether an element at ts is late at watermark wm.
func (r LateRule) late(ts, wm int64) bool {
	switch r {
	case LateAtWatermark:
		return ts <= wm
	case LateNever:
		return false
	}
	return ts < wm
}

// open reports whether a buffered row whose range ends at end (the last
// time of the other side it can match) may still meet an on-time element at
// watermark wm. Under LateNever it is the same as the default: the
// watermark (stream time - grace) still bounds the buffers.
func (r LateRule) open(end, wm int64) bool {
	if wm == math.MaxInt64 {
		return false // the input has ended (a NoTTL row's end saturates there)
	}
	if r == LateAtWatermark {
		return end > wm
	}
	return end >= wm
}

// expiry is the timer that retires a row whose range ends at end: the
// first watermark at which open(end, wm) is false.
func (r LateRule) expiry(end int64) int64 {
	if r == LateAtWatermark {
		return end
	}
	return addSat(end, 1)
}

func validateLate(c *collector, r LateRule, never bool) {
	switch {
	case !r.valid():
		c.bad("late", "unknown late rule %d (want ts<wm, ts<=wm or none)", uint8(r))
	case r == LateNever && !never:
		c.bad("late", "rule none is for interval, time-bounded and unbounded joins (Kafka Streams' stream-stream join)")
	}
}
