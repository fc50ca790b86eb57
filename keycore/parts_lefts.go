package keycore

import (
	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/record"
)

// The parts of a changelog join whose left side holds many rows per key
// (joins.CDCSpec.LeftMany): each left row is a part l:<pk>, as each right
// row is r:<pk> (parts.go), and the join snapshot assembled from them holds
// them under "lr".

// markRows marks the parts prefix+pk of e's before and after rows (pk:
// the side's primary-key column).
func (p *partsState) markRows(prefix, pk string, e *record.Event) {
	for _, row := range []record.Row{e.Before, e.After} {
		if k, ok := rowKey(row, pk); ok {
			p.markRow(prefix, k)
		}
	}
}

// rowAdder returns a function that adds a row as the part prefix+pk.
func rowAdder(prefix string, add func(string, []byte)) func(string, record.Row) error {
	return func(k string, r record.Row) error {
		b, err := rowPart(r)
		if err != nil {
			return err
		}
		add(prefix+k, b)
		return nil
	}
}

// appendRowParts appends the snapshot field that opens with head holding
// rows by primary key, nothing when there are none.
func appendRowParts(b []byte, head string, rows []stateparts.Part) []byte {
	if len(rows) == 0 {
		return b
	}
	b = append(b, head...)
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, r.Name)
		b = append(b, ':')
		b = append(b, r.Value...)
	}
	return append(b, '}')
}
