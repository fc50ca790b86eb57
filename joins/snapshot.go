package joins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
)

// SnapshotVersion is the first byte of every CDC snapshot.
const SnapshotVersion byte = 1

// ErrBadSnapshot is wrapped by every error Restore returns.
var ErrBadSnapshot = errors.New("joins: bad CDC snapshot")

// cdcSnap is the body of a version 1 snapshot, JSON after the version byte:
// the left row (null when absent) and the right rows by primary key (key form).
// encoding/json sorts map keys, so the encoding is deterministic.
//
// A left side of many rows (CDCSpec.LeftMany) has "l" null and its rows by
// primary key in "lr".
//
// With CDCSpec.MaxTs the rows' source times follow, where not 0: "lt" the
// left row's, "lrt" the many left rows' and "rt" the right rows' by
// primary key. A state without times encodes without them.
type cdcSnap struct {
	L   record.Row            `json:"l"`
	LR  map[string]record.Row `json:"lr,omitempty"`
	R   map[string]record.Row `json:"r,omitempty"`
	LT  int64                 `json:"lt,omitempty"`
	LRT map[string]int64      `json:"lrt,omitempty"`
	RT  map[string]int64      `json:"rt,omitempty"`
}

// Snapshot encodes the state: one version byte (SnapshotVersion) then JSON,
// exactly as encoding/json encodes a cdcSnap (sorted keys, no HTML
// escaping). Equal states encode to equal bytes. Each row's JSON is cached
// until the row changes, so a snapshot after one change encodes one row,
// not the whole key. Rows must be JSON-encodable, as rows decoded from JSON
// always are; Snapshot panics otherwise (a broken invariant).
func (j *CDC) Snapshot() []byte {
	size := 16 + len(j.leftEnc)
	for _, rs := range [2][]*rightRow{j.lefts, j.rights} {
		for i := range rs {
			size += len(rs[i].pk) + len(rs[i].enc) + 4
		}
	}
	buf := make([]byte, 0, size)
	buf = append(buf, SnapshotVersion)
	buf = append(buf, `{"l":`...)
	if j.left == nil {
		buf = append(buf, "null"...)
	} else {
		if j.leftEnc == nil {
			j.leftEnc = mustJSON(j.left)
		}
		buf = append(buf, j.leftEnc...)
	}
	buf = appendRows(buf, `,"lr":{`, j.lefts)
	buf = appendRows(buf, `,"r":{`, j.rights)
	if j.leftTs != 0 {
		buf = append(buf, `,"lt":`...)
		buf = strconv.AppendInt(buf, j.leftTs, 10)
	}
	buf = appendTimes(buf, `,"lrt":{`, j.lefts)
	buf = appendTimes(buf, `,"rt":{`, j.rights)
	return append(buf, '}')
}

// appendRows appends the field that opens with head (its name and "{")
// holding rows by primary key, nothing when there are none.
func appendRows(buf []byte, head string, rows []*rightRow) []byte {
	if len(rows) == 0 {
		return buf
	}
	buf = append(buf, head...)
	for i, r := range rows {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = jsonenc.AppendString(buf, r.pk)
		buf = append(buf, ':')
		if r.enc == nil {
			r.enc = mustJSON(r.row)
		}
		buf = append(buf, r.enc...)
	}
	return append(buf, '}')
}

// appendTimes appends the field that opens with head holding the rows'
// source times by primary key where not 0, nothing when all are.
func appendTimes(buf []byte, head string, rows []*rightRow) []byte {
	n := 0
	for _, r := range rows {
		if r.ts == 0 {
			continue
		}
		if n == 0 {
			buf = append(buf, head...)
		} else {
			buf = append(buf, ',')
		}
		n++
		buf = jsonenc.AppendString(buf, r.pk)
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, r.ts, 10)
	}
	if n > 0 {
		buf = append(buf, '}')
	}
	return buf
}

// mustJSON encodes v as encoding/json does with HTML escaping off
// (jsonenc's reflection-free path for decoded JSON values).
func mustJSON(v any) []byte {
	if b, ok := jsonenc.AppendValue(nil, v); ok {
		return b
	}
	b, err := jsonenc.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("joins: CDC state is not JSON-encodable: %v", err))
	}
	return b
}

// Restore replaces the state with the one b encodes. On error (a wrapped
// ErrBadSnapshot: empty input, unknown version, malformed body, rows whose
// primary key disagrees with the spec) the state is unchanged. Numbers are
// restored as json.Number.
func (j *CDC) Restore(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty", ErrBadSnapshot)
	}
	if b[0] != SnapshotVersion {
		return fmt.Errorf("%w: unknown version %d (want %d)", ErrBadSnapshot, b[0], SnapshotVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(b[1:]))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var s cdcSnap
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data after the state", ErrBadSnapshot)
	}
	var lpk string
	if s.L != nil {
		var ok bool
		if lpk, ok = j.pkOf(record.Left, s.L); !ok {
			return fmt.Errorf("%w: left row lacks a scalar %q", ErrBadSnapshot, j.spec.Left.PK)
		}
	}
	rights, err := restoreRows(j, record.Right, "right", s.R, s.RT)
	if err != nil {
		return err
	}
	lefts, err := restoreRows(j, record.Left, "left", s.LR, s.LRT)
	if err != nil {
		return err
	}
	if s.LT != 0 && s.L == nil {
		return fmt.Errorf("%w: a left time without a left row", ErrBadSnapshot)
	}
	left, leftTs := s.L, s.LT
	if j.spec.LeftMany() {
		if left != nil {
			// A one-row left side's state: its row is one of many.
			if _, dup := findRow(lefts, lpk); dup {
				return fmt.Errorf("%w: left row %q twice", ErrBadSnapshot, lpk)
			}
			lefts = append(lefts, &rightRow{pk: lpk, row: left, ts: leftTs})
			sortRights(lefts)
			left, leftTs = nil, 0
		}
	} else if len(lefts) > 0 {
		return fmt.Errorf("%w: many left rows, but the left join column is the left primary key", ErrBadSnapshot)
	}
	if len(lefts) == 0 {
		lefts = nil
	}
	j.left, j.leftTs, j.leftEnc, j.lefts, j.rights = left, leftTs, nil, lefts, rights
	return nil
}

// restoreRows checks and sorts the rows of side by primary key (name is
// the side's, for errors) with their times.
func restoreRows(j *CDC, side record.Side, name string, rows map[string]record.Row, ts map[string]int64) ([]*rightRow, error) {
	out := make([]*rightRow, 0, len(rows))
	for pk, row := range rows {
		got, ok := j.pkOf(side, row)
		if !ok || got != pk {
			return nil, fmt.Errorf("%w: %s row %q: %q is not its primary key", ErrBadSnapshot, name, pk, j.spec.side(side).PK)
		}
		out = append(out, &rightRow{pk: pk, row: row, ts: ts[pk]})
	}
	for pk := range ts {
		if _, ok := rows[pk]; !ok {
			return nil, fmt.Errorf("%w: a time for %s row %q, which is not there", ErrBadSnapshot, name, pk)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	sortRights(out)
	return out, nil
}
