package keycore

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/internal/rowcodec"
	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// decodeParts decodes a packed state (stateparts): the base's keyState
// with the parts folded in, and whether the join's rows were parts. Outbox
// entries keep their ids and JSON (their outputs are decoded when
// re-sent).
func decodeParts(b []byte, sch *schemas) (keyState, int, error) {
	base, parts, err := stateparts.Unpack(b)
	if err != nil {
		return keyState{}, 0, fmt.Errorf("%w: %v", errBadState, err)
	}
	if stateparts.IsPacked(base) {
		return keyState{}, 0, fmt.Errorf("%w: a packed base", errBadState)
	}
	s, err := decodeState(base, nil)
	if err != nil {
		return keyState{}, 0, err
	}
	var left []byte
	var lefts, rights []stateparts.Part
	rows := 0
	var srcParts map[string]string // s: parts by id
	setSrc := func(id, pos string) {
		if s.Src == nil {
			s.Src = map[string]string{}
		}
		s.Src[id] = pos
	}
	for _, p := range parts {
		switch {
		case p.Name == partLeft:
			pos, row, err := splitPos(p.Value)
			if err != nil || len(row) == 0 {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %v", errBadState, p.Name, err)
			}
			left, rows, s.leftPos = row, rows+1, pos
		case strings.HasPrefix(p.Name, partLefts):
			pos, row, err := splitPos(p.Value)
			if err != nil {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %v", errBadState, p.Name, err)
			}
			k := p.Name[len(partLefts):]
			if pos != "" {
				setSrc(record.Left.String()+"/"+k, pos)
			}
			if len(row) > 0 {
				lefts, rows = append(lefts, stateparts.Part{Name: k, Value: row}), rows+1
			}
		case strings.HasPrefix(p.Name, partRight):
			pos, row, err := splitPos(p.Value)
			if err != nil {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %v", errBadState, p.Name, err)
			}
			k := p.Name[len(partRight):]
			if pos != "" {
				setSrc(record.Right.String()+"/"+k, pos)
			}
			if len(row) > 0 {
				rights, rows = append(rights, stateparts.Part{Name: k, Value: row}), rows+1
			}
		case strings.HasPrefix(p.Name, partOutbox):
			id, err := strconv.ParseUint(p.Name[len(partOutbox):], 16, 64)
			var e struct {
				P  string `json:"p"`
				N  int64  `json:"n"`
				To string `json:"to"`
			}
			if err == nil {
				err = json.Unmarshal(p.Value, &e)
			}
			if err != nil {
				return keyState{}, 0, fmt.Errorf("%w: outbox part %q: %v", errBadState, p.Name, err)
			}
			s.Outbox = append(s.Outbox, outboxEntry{Part: e.P, Offset: e.N, SentTo: e.To, id: id, enc: []byte(string(p.Value))})
		case strings.HasPrefix(p.Name, partSrc):
			pos, ok := srcPos(p.Value)
			if !ok {
				return keyState{}, 0, fmt.Errorf("%w: source position part %q: % x", errBadState, p.Name, p.Value)
			}
			if srcParts == nil {
				srcParts = map[string]string{}
			}
			srcParts[p.Name[len(partSrc):]] = pos
		default:
			return keyState{}, 0, fmt.Errorf("%w: unknown part %q", errBadState, p.Name)
		}
	}
	// An s: part of a position a row part holds too is older than the
	// row's (it was written before positions went with the rows): the
	// next Write is whole, in the folded form (as for the other s: parts
	// of that layout, which Restore finds in srcParts).
	for id, pos := range srcParts {
		if _, ok := s.Src[id]; ok {
			s.unfolded = true
			continue
		}
		setSrc(id, pos)
		s.srcParts = append(s.srcParts, id)
	}
	if rows > 0 {
		if len(s.Join) > 0 {
			return keyState{}, 0, fmt.Errorf("%w: join rows both whole and in parts", errBadState)
		}
		if left, err = rowJSON(left, sch.side(record.Left)); err != nil {
			return keyState{}, 0, fmt.Errorf("%w: part %q: %w", errBadState, partLeft, err)
		}
		for i := range lefts {
			if lefts[i].Value, err = rowJSON(lefts[i].Value, sch.side(record.Left)); err != nil {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %w", errBadState, partLefts+lefts[i].Name, err)
			}
		}
		for i := range rights {
			if rights[i].Value, err = rowJSON(rights[i].Value, sch.side(record.Right)); err != nil {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %w", errBadState, partRight+rights[i].Name, err)
			}
		}
		s.Join = cdcSnapshot(left, lefts, rights)
	}
	return s, rows, nil
}

// rowJSON is a row part's JSON: a compact row's (rowcodec.AppendJSON),
// or the part itself when it is JSON. A row written under a schema needs
// the same schema (s): the job's columns of that side as the writer kept
// them.
func rowJSON(b []byte, s *rowcodec.Schema) ([]byte, error) {
	if rowcodec.IsSchemaRow(b) {
		if s == nil {
			return nil, fmt.Errorf("%w; the job now keeps whole rows of this side: %s", rowcodec.ErrSchema, schemaChange)
		}
		x, err := s.Expand(b)
		if errors.Is(err, rowcodec.ErrSchema) {
			return nil, fmt.Errorf("%w: %s", err, schemaChange)
		}
		if err != nil {
			return nil, err
		}
		b = x
	}
	if !rowcodec.IsCompact(b) {
		return b, nil
	}
	return rowcodec.AppendJSON(make([]byte, 0, 2*len(b)), b)
}

// schemaChange is what an error about a row written under other kept
// columns tells the operator.
const schemaChange = "the columns the job keeps of a side changed since the row was stored " +
	"(its projection, join or key columns); state written under the old columns cannot serve it: " +
	"run the changed job under a new name from the sources' beginning " +
	"(docs/operations/upgrades.md, \"Changing a job's columns\")"

// cdcSnapshot assembles a changelog join's snapshot (joins' version 1)
// from its left row (value state) or left rows by primary key (a left side
// of many rows) and its right rows by primary key.
func cdcSnapshot(left []byte, lefts, rights []stateparts.Part) []byte {
	n := 16 + len(left)
	for _, r := range lefts {
		n += len(r.Name) + len(r.Value) + 4
	}
	for _, r := range rights {
		n += len(r.Name) + len(r.Value) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, joins.SnapshotVersion)
	b = append(b, `{"l":`...)
	if left == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, left...)
	}
	b = appendRowParts(b, `,"lr":{`, lefts)
	b = appendRowParts(b, `,"r":{`, rights)
	return append(b, '}')
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
