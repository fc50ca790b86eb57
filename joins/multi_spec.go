package joins

import (
	"errors"
	"fmt"
	"strings"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

// MaxMultiTables bounds the tables of a multi-way join (record.Side, the
// table's index in events, is a byte).
const MaxMultiTables = 32

// MultiTable describes one input of a multi-way changelog join.
type MultiTable struct {
	// Name names the table (sources bind to it; without a projection it is
	// the output column holding the table's row).
	Name string
	// PK is the primary-key column; every table's rows are kept by it.
	PK string
	// JoinOn is the column holding the join key (the same key for every
	// table: users.id, domains.user_id, settings.user_id).
	JoinOn string
	// Kind is how the table joins the driving (first) table: Inner or
	// LeftOuter. The first table's Kind must be Inner (the zero value).
	Kind JoinType
}

// MultiColumn is one output column of a multi-way join: Name =
// row of Tables[Table][Field] (null when that table is padded), or, for a
// computed column, Compute(rows) with rows[i] table i's row (nil when
// padded). Compute must be deterministic and must not keep or modify rows.
type MultiColumn struct {
	Name    string
	Table   int
	Field   string
	Compute func(rows []record.Row) any
}

// MultiSpec describes a multi-way changelog join on one key, as Flink's
// multi-way join operator (FLIP-516): Tables[0] is the driving side, each
// further table is inner or left joined to it, every table on the same join
// key, and one key's state holds each table's rows by primary key and no
// intermediate join result. Fill it, call Validate, then share a pointer
// read-only among all keys' Multi.
type MultiSpec struct {
	Tables []MultiTable
	// Project lists the output columns. When empty, the output row is
	// {table name: row or null, …} for every table.
	Project []MultiColumn
}

// Validate reports every problem of the spec, joined, each naming its
// field, e.g. "tables[1].pk: must not be empty".
func (s *MultiSpec) Validate() error {
	if s == nil {
		return errors.New("joins: nil multi-way spec")
	}
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	if len(s.Tables) < 2 || len(s.Tables) > MaxMultiTables {
		bad("tables", "must list 2 to %d tables (got %d)", MaxMultiTables, len(s.Tables))
	}
	names := map[string]int{}
	for i, t := range s.Tables {
		f := fmt.Sprintf("tables[%d]", i)
		if t.Name == "" {
			bad(f+".name", "must not be empty")
		} else if j, dup := names[t.Name]; dup {
			bad(f+".name", "duplicate %q (also tables[%d])", t.Name, j)
		} else {
			names[t.Name] = i
		}
		if t.PK == "" {
			bad(f+".pk", "must not be empty")
		}
		if t.JoinOn == "" {
			bad(f+".join_on", "must not be empty")
		}
		switch {
		case i == 0 && t.Kind != Inner:
			bad(f+".kind", "the first table is the driving side: its kind must be empty or inner (got %s)", t.Kind)
		case t.Kind != Inner && t.Kind != LeftOuter:
			bad(f+".kind", "must be inner or left (got %s)", t.Kind)
		}
	}
	checkColumns(bad, s.Project, func(f string, c MultiColumn) {
		if c.Table < 0 || c.Table >= len(s.Tables) {
			bad(f+".table", "must be a table index 0 to %d, got %d", len(s.Tables)-1, c.Table)
		}
	})
	return errors.Join(errs...)
}

// KeyInPK reports whether outputs' primary keys start with the join key:
// when the driving table's join column is not its primary key. Its rows
// can then move between join keys, and the same tables' primary keys
// could name a result at two keys; but every output primary key must
// belong to one join key (sinks order a row's changes by its key's
// sequence, record.Output.Seq). Otherwise the key is the driving row's
// primary key, already in the array.
func (s *MultiSpec) KeyInPK() bool { return s.Tables[0].JoinOn != s.Tables[0].PK }

// TableIndex returns the index of the table named name.
func (s *MultiSpec) TableIndex(name string) (int, bool) {
	for i, t := range s.Tables {
		if t.Name == name {
			return i, true
		}
	}
	return 0, false
}

// Route turns one change of table (an index into Tables) into the events
// for the join keys it touches, exactly as CDCSpec.Route does for one side
// (a row whose join column changes becomes a retraction at the old key and
// an insert at the new one). Events carry Side = record.Side(table); a
// *RouteError's Side is the table index too. A driving row whose join
// column is null is kept at its own key (NullRowKey), where it matches
// nothing: emitted padded when every other table is left joined, not
// emitted otherwise, as SQL has it; another table's row with a null join
// column matches nothing and is never emitted: ErrUnmatched.
func (s *MultiSpec) Route(table int, c record.Change) ([]record.Event, error) {
	if table < 0 || table >= len(s.Tables) {
		return nil, &RouteError{Reason: reason.UnknownSide, Side: record.Side(table), Op: c.Op, Pos: c.Pos}
	}
	t := &s.Tables[table]
	one := CDCSpec{Left: SideSpec{Name: t.Name, PK: t.PK, JoinOn: t.JoinOn}}
	if table == 0 {
		one.Type = LeftOuter // the driving table's rows are kept
	}
	evs, err := one.Route(record.Left, c)
	if err != nil {
		var re *RouteError
		if errors.As(err, &re) {
			re.Side = record.Side(table)
		}
		return nil, err
	}
	for i := range evs {
		evs[i].Side = record.Side(table)
	}
	return evs, nil
}

// outputPK is the result's primary key: the JSON array of every table's
// primary key, null for a padded table, after the join key when the
// driving table is not keyed by its primary key (see KeyInPK).
func (s *MultiSpec) outputPK(rows []record.Row) string {
	var b strings.Builder
	b.Grow(16 * (len(rows) + 1))
	b.WriteByte('[')
	if s.KeyInPK() {
		writePKValue(&b, rows[0], s.Tables[0].JoinOn) // the driving row is never padded
		b.WriteByte(',')
	}
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		writePKValue(&b, r, s.Tables[i].PK)
	}
	b.WriteByte(']')
	return b.String()
}

// outputRow projects one result; a nil row is a padded table.
func (s *MultiSpec) outputRow(rows []record.Row) record.Row {
	if len(s.Project) == 0 {
		out := make(record.Row, len(rows))
		for i, r := range rows {
			out[s.Tables[i].Name] = rowValue(r)
		}
		return out
	}
	out := make(record.Row, len(s.Project))
	for _, c := range s.Project {
		if c.Compute != nil {
			out[c.Name] = c.Compute(rows)
			continue
		}
		var v any
		if r := rows[c.Table]; r != nil {
			v = r[c.Field]
		}
		out[c.Name] = v
	}
	return out
}
