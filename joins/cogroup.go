package joins

import (
	"fmt"

	"github.com/joinery/joinery/record"
)

// CoGroupFunc sees, per key and window, both sides' rows in arrival order,
// either list possibly empty, and returns the output rows (Flink's
// CoGroupFunction). It must be pure and must not keep the slices.
type CoGroupFunc func(left, right []record.Row) []record.Row

// CoGroupSpec describes a window coGroup (Flink's
// coGroup(...).where(...).equalTo(...).window(...).apply(...)). For left,
// right and full outer window joins use WindowJoinSpec with an outer Type,
// which is built on the same coGroup state.
type CoGroupSpec struct {
	Assigner Assigner
	// AllowedLateness as in WindowJoinSpec.
	AllowedLateness int64
	// Func is called once per window firing, even when one side is empty.
	Func CoGroupFunc
	// Late as in WindowJoinSpec (LateBeforeWatermark or LateAtWatermark).
	Late LateRule
}

// Validate reports every problem of the spec, joined, each naming its field.
func (s *CoGroupSpec) Validate() error {
	if s == nil {
		return fmt.Errorf("joins: nil coGroup spec")
	}
	var c collector
	s.Assigner.validate(&c, "assigner.")
	if s.AllowedLateness < 0 {
		c.bad("allowed_lateness", "must not be negative, got %d", s.AllowedLateness)
	}
	validateLate(&c, s.Late, false)
	if s.Func == nil {
		c.bad("func", "must be set")
	}
	return c.err()
}

// NewCoGroup returns the empty state of one key of a window coGroup. spec
// must be valid and must not change while the state is in use.
//
// Each firing calls Func(left rows, right rows) and emits its rows as +I
// stamped MaxTimestamp, with id cogroup|firstPos|-|end|n: the position of
// the window's first element (either side, in arrival order; for a merged
// session, that of its earliest part) and n the row's index. A late firing
// calls Func on the whole window again and emits its rows with the same ids
// for the same indexes (a firing with fewer rows leaves the extra ones of the
// earlier firing standing downstream, as in Flink).
func NewCoGroup(spec *CoGroupSpec) *Windowed {
	f := spec.Func
	return &Windowed{
		assigner: spec.Assigner,
		lateness: spec.AllowedLateness,
		rule:     spec.Late,
		fire: func(w *winState, fx *Effects) {
			left, right := make([]record.Row, len(w.L)), make([]record.Row, len(w.R))
			for i := range w.L {
				left[i] = w.L[i].Row
			}
			for i := range w.R {
				right[i] = w.R[i].Row
			}
			ts := w.W.MaxTimestamp()
			for n, row := range f(left, right) {
				id, pk := outputID("cogroup", &w.First, nil, w.W.End, n)
				fx.Out = append(fx.Out, record.Output{ID: id, Kind: record.Insert, PK: pk, Row: row, Ts: ts})
			}
		},
	}
}
