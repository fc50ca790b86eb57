package joins

import (
	"slices"
	"sync"

	"github.com/joinery/joinery/internal/rowcodec"
	"github.com/joinery/joinery/record"
)

// Kept returns the columns of side's rows that the join reads, sorted:
// the side's primary-key and join columns and the projection's columns of
// that side. all is true (and cols nil) when the join reads whole rows:
// without a projection the output holds them, and a computed column or a
// residual condition (Where) may read any column. A key's state keeps only these columns of its rows, so
// a runner drops the others as it decodes a change (projection pushdown,
// as Flink's planner prunes the columns a query never reads).
func (s *CDCSpec) Kept(side record.Side) (cols []string, all bool) {
	sd := s.side(side)
	return ReadColumns(s.Project, s.Where, side, sd.PK, sd.JoinOn)
}

// Kept is CDCSpec.Kept for a multi-way join's table (an index into
// Tables).
func (s *MultiSpec) Kept(table int) (cols []string, all bool) {
	if len(s.Project) == 0 || table < 0 || table >= len(s.Tables) {
		return nil, true
	}
	t := s.Tables[table]
	cols = []string{t.PK, t.JoinOn}
	for _, c := range s.Project {
		if c.Compute != nil {
			return nil, true
		}
		if c.Table == table {
			cols = append(cols, c.Field)
		}
	}
	slices.Sort(cols)
	return slices.Compact(cols), false
}

// rowSchemas caches RowSchemas by spec.
var rowSchemas sync.Map // *CDCSpec -> *[2]*rowcodec.Schema

// RowSchemas are the schemas a key's state stores each side's rows under
// (rowcodec.Schema): the side's kept columns, nil for a side whose whole
// rows are kept. Made once per spec, so a spec must not change after its
// first call.
func (s *CDCSpec) RowSchemas() *[2]*rowcodec.Schema {
	if v, ok := rowSchemas.Load(s); ok {
		return v.(*[2]*rowcodec.Schema)
	}
	var sch [2]*rowcodec.Schema
	for _, side := range []record.Side{record.Left, record.Right} {
		if cols, all := s.Kept(side); !all {
			sch[side] = rowcodec.NewSchema(cols)
		}
	}
	v, _ := rowSchemas.LoadOrStore(s, &sch)
	return v.(*[2]*rowcodec.Schema)
}

// ReadColumns returns the columns of side's rows that a join with this
// projection and residual condition reads, sorted: keep (the side's key
// columns: primary-key and join columns, or an event-time input's key,
// time and kind columns; "" ignored) and the projection's columns of that
// side. all is true (and cols nil) when the join reads whole rows: without
// a projection, with a computed column or with a residual condition.
// CDCSpec.Kept is it for a changelog join's side.
func ReadColumns(project []Column, where Condition, side record.Side, keep ...string) (cols []string, all bool) {
	if len(project) == 0 || !where.IsZero() {
		return nil, true
	}
	for _, c := range keep {
		if c != "" {
			cols = append(cols, c)
		}
	}
	for _, c := range project {
		if c.Compute != nil {
			return nil, true
		}
		if c.Side == side {
			cols = append(cols, c.Field)
		}
	}
	slices.Sort(cols)
	return slices.Compact(cols), false
}
