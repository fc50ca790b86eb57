package joins

import (
	"fmt"

	"github.com/joinery/joinery/record"
)

// WindowJoinSpec describes a window join (Flink's
// join(...).where(...).equalTo(...).window(...).apply(...)): the elements of
// both sides of one key that share a window are joined pairwise when the
// watermark reaches the window's MaxTimestamp, and every result is stamped
// with it (seed flink-joining: window [5,10) → 9).
//
// Type TimedInner is the seed's inner window join. The outer types are built
// on the coGroup: a window that holds only one side's elements emits each of
// them padded with nulls when that side is an outer side; a window holding
// both sides emits its pairs only.
//
// It is a plain value: fill it, call Validate, then share a pointer to it,
// read-only, among all keys' joins.
type WindowJoinSpec struct {
	Type TimedJoinType
	// Left and Right name the sides; without Project, Join or FlatJoin the
	// output row is {Left: left row, Right: right row} (null when padded).
	Left, Right string
	Assigner    Assigner
	// AllowedLateness (ms, >= 0) keeps a window's state after it fired, until
	// the watermark reaches MaxTimestamp + AllowedLateness; an element for it
	// in between fires the window again (a late firing). Zero by default.
	AllowedLateness int64
	// Join makes one output row per pair; FlatJoin zero or more. At most one
	// may be set; with neither, the row is the projection (or the pair).
	Join     JoinFunc
	FlatJoin FlatJoinFunc
	// Project lists the output columns; only without Join and FlatJoin.
	Project []Column
	// Where is the residual condition of a pair, after the key and the
	// window (zero: none). With one, a window emits the pairs that pass it
	// and, on an outer side, pads each row that matched none of the
	// window's other-side rows. A row failing its own side's part is not
	// buffered (tumbling and sliding windows): on an outer side it is
	// emitted padded at once for each of its open windows, stamped end - 1;
	// in session windows it is buffered, since it still shapes the session,
	// and padded when the window fires.
	Where Condition
	// Late is the late-data rule: LateBeforeWatermark (zero; a window fires
	// when the watermark reaches end - 1, Flink's) or LateAtWatermark (it
	// fires when the watermark reaches end, Spark's: a window is complete
	// once end <= watermark). Outputs are stamped end - 1 either way.
	Late LateRule
	// OnArrival emits as Spark's windowed stream-stream join does (an
	// equi-join on the window column): a pair as soon as both rows of one
	// window are there, stamped end - 1, and at the window's close only the
	// rows of an outer side that matched nothing, padded. Without it
	// (Flink's), a window's pairs and padded rows all come out at its close.
	// Tumbling and sliding windows only, without AllowedLateness (Spark has
	// neither session windows in joins nor late firings).
	OnArrival bool
}

// Validate reports every problem of the spec, joined with errors.Join, each
// naming its field, e.g. "assigner.size: must be positive, got 0".
func (s *WindowJoinSpec) Validate() error {
	if s == nil {
		return fmt.Errorf("joins: nil window join spec")
	}
	var c collector
	if !s.Type.valid() {
		c.bad("type", "unknown join type %d (want inner, left, right, full or semi)", int(s.Type))
	}
	validateSemi(&c, s.Type, s.Project)
	if s.Type.semi() && (s.Join != nil || s.FlatJoin != nil) {
		c.bad("type", "a left semi join outputs the left row: no join function")
	}
	s.Assigner.validate(&c, "assigner.")
	if s.AllowedLateness < 0 {
		c.bad("allowed_lateness", "must not be negative, got %d", s.AllowedLateness)
	}
	validateLate(&c, s.Late, false)
	if s.OnArrival {
		if s.Assigner.merging() {
			c.bad("emit", "on-arrival is for tumbling and sliding windows, not session windows")
		}
		if s.AllowedLateness != 0 {
			c.bad("allowed_lateness", "must be 0 with emit on-arrival (a window never fires again), got %d", s.AllowedLateness)
		}
	}
	validateShape(c.bad, s.Left, s.Right, s.Project, s.Join, s.FlatJoin)
	return c.err()
}

// NewWindowJoin returns the empty state of one key of a window join. spec
// must be valid and must not change while the join is in use.
//
// Outputs: the pairs of a window in left arrival order × right arrival
// order (with a Where condition, each left row's pairs followed by the row
// padded when it matched none, then the unmatched right rows padded),
// windows in (end, start) order, each +I stamped MaxTimestamp, with
// id window|leftPos|rightPos|end|n (n: index among FlatJoin's rows; see
// outputID). A late firing re-emits every pair of the window, old and new,
// with the same ids as before, as Flink re-fires the whole window; a
// downstream upsert or dedup by id keeps one copy. A session window that
// grows by a merge has a new end, hence new ids.
func NewWindowJoin(spec *WindowJoinSpec) *Windowed {
	shape := &pairShape{left: spec.Left, right: spec.Right, project: spec.Project, join: spec.Join, flat: spec.FlatJoin, semi: spec.Type.semi()}
	t := spec.Type
	j := &Windowed{
		assigner: spec.Assigner,
		lateness: spec.AllowedLateness,
		rule:     spec.Late,
		typ:      t,
		shape:    shape,
	}
	if spec.OnArrival {
		where := spec.Where
		j.where, j.onArrival = &where, true
		j.fire = func(w *winState, fx *Effects) {
			ts, end := w.W.MaxTimestamp(), w.W.End
			if t.padLeft() {
				for i := range w.L {
					if !w.matched(record.Left, i) {
						emitPair(fx, shape, "window", ts, &w.L[i], nil, end)
					}
				}
			}
			if t.padRight() {
				for k := range w.R {
					if !w.matched(record.Right, k) {
						emitPair(fx, shape, "window", ts, nil, &w.R[k], end)
					}
				}
			}
		}
		return j
	}
	if spec.Where.IsZero() {
		j.fire = func(w *winState, fx *Effects) {
			ts, end := w.W.MaxTimestamp(), w.W.End
			switch {
			case t.semi():
				if len(w.R) > 0 {
					for i := range w.L {
						emitPair(fx, shape, "window", ts, &w.L[i], nil, end)
					}
				}
			case len(w.L) > 0 && len(w.R) > 0:
				for i := range w.L {
					for k := range w.R {
						emitPair(fx, shape, "window", ts, &w.L[i], &w.R[k], end)
					}
				}
			case len(w.R) == 0 && t.padLeft():
				for i := range w.L {
					emitPair(fx, shape, "window", ts, &w.L[i], nil, end)
				}
			case len(w.L) == 0 && t.padRight():
				for k := range w.R {
					emitPair(fx, shape, "window", ts, nil, &w.R[k], end)
				}
			}
		}
		return j
	}
	where := spec.Where
	j.where = &where
	j.fire = func(w *winState, fx *Effects) {
		ts, end := w.W.MaxTimestamp(), w.W.End
		matchedR := make([]bool, len(w.R))
		for i := range w.L {
			if t.semi() {
				for k := range w.R {
					if where.match(w.L[i].Row, w.R[k].Row) {
						emitPair(fx, shape, "window", ts, &w.L[i], nil, end)
						break
					}
				}
				continue
			}
			matched := false
			for k := range w.R {
				if where.match(w.L[i].Row, w.R[k].Row) {
					matched, matchedR[k] = true, true
					emitPair(fx, shape, "window", ts, &w.L[i], &w.R[k], end)
				}
			}
			if !matched && t.padLeft() {
				emitPair(fx, shape, "window", ts, &w.L[i], nil, end)
			}
		}
		if t.padRight() {
			for k := range w.R {
				if !matchedR[k] {
					emitPair(fx, shape, "window", ts, nil, &w.R[k], end)
				}
			}
		}
	}
	return j
}
