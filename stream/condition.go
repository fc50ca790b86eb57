package stream

import (
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// cond is a residual join condition over the typed values: the pair part
// and the one-sided parts (nil: none). See joins.Condition.
type cond[L, R any] struct {
	pair  func(l L, r R) bool
	left  func(l L) bool
	right func(r R) bool
}

// joins turns c into a joins.Condition over boxed rows.
func (c cond[L, R]) joins() joins.Condition {
	var jc joins.Condition
	if p := c.pair; p != nil {
		jc.Pair = func(l, r record.Row) bool { return p(unbox[L](l).v, unbox[R](r).v) }
	}
	if p := c.left; p != nil {
		jc.Left = func(l record.Row) bool { return p(unbox[L](l).v) }
	}
	if p := c.right; p != nil {
		jc.Right = func(r record.Row) bool { return p(unbox[R](r).v) }
	}
	return jc
}

// Condition adds a residual condition on a pair, applied after the key and
// the window: only pairs for which it holds are joined (an outer side's
// row that matched none is padded). It must be pure.
func (w *WindowJoin[K, O, L, R]) Condition(pair func(l L, r R) bool) *WindowJoin[K, O, L, R] {
	w.cond.pair = pair
	return w
}

// LeftCondition adds a condition on left elements alone: one failing it
// never matches and is not buffered (in a left or full outer join it is
// emitted padded at once: Spark's early state exclusion).
func (w *WindowJoin[K, O, L, R]) LeftCondition(p func(l L) bool) *WindowJoin[K, O, L, R] {
	w.cond.left = p
	return w
}

// RightCondition is LeftCondition for right elements.
func (w *WindowJoin[K, O, L, R]) RightCondition(p func(r R) bool) *WindowJoin[K, O, L, R] {
	w.cond.right = p
	return w
}

// Condition adds a residual condition on a pair, after the key and the
// range: only pairs for which it holds are processed. It must be pure.
func (j *IntervalJoined[O, L, R, K]) Condition(pair func(l L, r R) bool) *IntervalJoined[O, L, R, K] {
	j.cond.pair = pair
	return j
}

// LeftCondition adds a condition on left elements alone: one failing it is
// dropped, never buffered.
func (j *IntervalJoined[O, L, R, K]) LeftCondition(p func(l L) bool) *IntervalJoined[O, L, R, K] {
	j.cond.left = p
	return j
}

// RightCondition is LeftCondition for right elements.
func (j *IntervalJoined[O, L, R, K]) RightCondition(p func(r R) bool) *IntervalJoined[O, L, R, K] {
	j.cond.right = p
	return j
}

// Condition adds a residual condition on a pair, after the key and the
// range: only pairs for which it holds match; a row of an outer side that
// matched none is padded, a row that matched never is (SPARK-26187). It
// must be pure.
func (j *TimeBoundedJoined[O, L, R, K]) Condition(pair func(l L, r R) bool) *TimeBoundedJoined[O, L, R, K] {
	j.cond.pair = pair
	return j
}

// LeftCondition adds a condition on left rows alone: one failing it never
// matches and is never buffered; in a left or full outer join it is emitted
// padded at once (Spark's early state exclusion).
func (j *TimeBoundedJoined[O, L, R, K]) LeftCondition(p func(l L) bool) *TimeBoundedJoined[O, L, R, K] {
	j.cond.left = p
	return j
}

// RightCondition is LeftCondition for right rows.
func (j *TimeBoundedJoined[O, L, R, K]) RightCondition(p func(r R) bool) *TimeBoundedJoined[O, L, R, K] {
	j.cond.right = p
	return j
}
