package joins

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/joinery/joinery/record"
)

// Table materializes a changelog into rows by primary key, strictly: it
// refuses a record that does not follow from what it already holds, so a
// changelog that applies cleanly never retracted what it did not emit. It is
// pure and not safe for concurrent use; a job's table sink, tests and the
// oracle use it.
type Table struct {
	rows map[string]record.Row
}

// TableRow is one materialized row.
type TableRow struct {
	PK  string
	Row record.Row
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{rows: make(map[string]record.Row)} }

// Apply applies one changelog record:
//
//   - +I and +U add o.Row at o.PK, which must be absent (a +U follows the -U
//     that removed the old row);
//   - -U and -D remove the row at o.PK, which must be present and equal to
//     o.Row (reflect.DeepEqual).
//
// On error the table is unchanged.
func (t *Table) Apply(o record.Output) error {
	stored, present := t.rows[o.PK]
	switch o.Kind {
	case record.Insert, record.UpdateAfter:
		if present {
			return fmt.Errorf("joins: table: %s %s %s: primary key already present", o.Kind, o.PK, o.ID)
		}
		t.rows[o.PK] = o.Row
	case record.UpdateBefore, record.Delete:
		if !present {
			return fmt.Errorf("joins: table: %s %s %s: primary key absent", o.Kind, o.PK, o.ID)
		}
		if !reflect.DeepEqual(stored, o.Row) {
			return fmt.Errorf("joins: table: %s %s %s: retracts %v but holds %v", o.Kind, o.PK, o.ID, o.Row, stored)
		}
		delete(t.rows, o.PK)
	default:
		return fmt.Errorf("joins: table: %s %s: unknown kind", o.Kind, o.ID)
	}
	return nil
}

// Put applies o without checking it against the table: +I and +U set the
// row, -U and -D remove it. For outputs ordered by Seq, where a later change
// of a row may arrive before an earlier one and the newest decides.
func (t *Table) Put(o record.Output) {
	switch o.Kind {
	case record.Insert, record.UpdateAfter:
		t.rows[o.PK] = o.Row
	default:
		delete(t.rows, o.PK)
	}
}

// Rows returns the rows sorted by primary key (as strings).
func (t *Table) Rows() []TableRow {
	out := make([]TableRow, 0, len(t.rows))
	for pk, row := range t.rows {
		out = append(out, TableRow{PK: pk, Row: row})
	}
	slices.SortFunc(out, func(a, b TableRow) int { return strings.Compare(a.PK, b.PK) })
	return out
}

// Len returns the number of rows.
func (t *Table) Len() int { return len(t.rows) }
