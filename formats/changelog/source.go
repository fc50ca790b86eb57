package changelog

import (
	"fmt"

	"github.com/joinery/joinery/record"
)

// PKColumn is the column DecodeChange adds to every row: the line's pk.
const PKColumn = "_pk"

// DecodeChange reads one Changelog line, another job's output, as a change
// of a table whose rows are the output's rows, so a job can join a
// previous job's result (a chain of joins with different keys): +I is an
// insert (op c) and +U an update without a before image (op u); -U and -D
// are deletes of the row they carry (op d). A -U/+U pair thus retracts the
// old row at its join key and upserts the new one at its own: a row whose
// join column changed moves, which a partial before could not say.
//
// The row gets one column more, PKColumn, holding the line's "pk" (its
// JSON text, e.g. "[1,7]"): the identity of the row in the job that wrote
// it, the primary key to give the table in the next job. A column of the
// row is not enough in general: a result row of the first job that moves
// between its join keys is a delete of one primary key and an insert of
// another, which may reach the sink in either order.
//
// The id, ts and seq of the line are not used. A line without a row or pk,
// a row that already has a PKColumn, and anything DecodeChangelog refuses
// are errors.
func DecodeChange(line []byte, pos record.Position) (record.Change, error) {
	o, err := DecodeChangelog(line)
	if err != nil {
		return record.Change{}, err
	}
	if o.Row == nil {
		return record.Change{}, fmt.Errorf("changelog: decode: %s without a row", o.Kind)
	}
	if o.PK == "" {
		return record.Change{}, fmt.Errorf("changelog: decode: %s without a pk", o.Kind)
	}
	if _, ok := o.Row[PKColumn]; ok {
		return record.Change{}, fmt.Errorf("changelog: decode: the row already has a %q column", PKColumn)
	}
	o.Row[PKColumn] = o.PK
	c := record.Change{Pos: pos}
	switch o.Kind {
	case record.Insert:
		c.Op, c.After = record.OpCreate, o.Row
	case record.UpdateAfter:
		c.Op, c.After = record.OpUpdate, o.Row
	default:
		c.Op, c.Before = record.OpDelete, o.Row
	}
	return c, nil
}
