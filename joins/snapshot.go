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
// With CDCSpec.MaxTs the rows' source times follow, where not 0: "lt" the
// left row's, "rt" the right rows' by primary key. A state without times
// encodes as before.
type cdcSnap struct {
	L  record.Row            `json:"l"`
	R  map[string]record.Row `json:"r,omitempty"`
	LT int64                 `json:"lt,omitempty"`
	RT map[string]int64      `json:"rt,omitempty"`
}

// Snapshot encodes the state: one version byte (SnapshotVersion) then JSON,
// exactly as encoding/json encodes a cdcSnap (sorted keys, no HTML
// escaping). Equal states encode to equal bytes. Each row's JSON is cached
// until the row changes, so a snapshot after one change encodes one row,
// not the whole key. Rows must be JSON-encodable, as rows decoded from JSON
// always are; Snapshot panics otherwise (a broken invariant).
func (j *CDC) Snapshot() []byte {
	size := 16 + len(j.leftEnc)
	for i := range j.rights {
		size += len(j.rights[i].pk) + len(j.rights[i].enc) + 4
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
	if len(j.rights) > 0 {
		buf = append(buf, `,"r":{`...)
		for i := range j.rights {
			r := j.rights[i]
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
		buf = append(buf, '}')
	}
	if j.leftTs != 0 {
		buf = append(buf, `,"lt":`...)
		buf = strconv.AppendInt(buf, j.leftTs, 10)
	}
	n := 0
	for _, r := range j.rights {
		if r.ts == 0 {
			continue
		}
		if n == 0 {
			buf = append(buf, `,"rt":{`...)
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
	return append(buf, '}')
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
	if s.L != nil {
		if _, ok := j.pkOf(record.Left, s.L); !ok {
			return fmt.Errorf("%w: left row lacks a scalar %q", ErrBadSnapshot, j.spec.Left.PK)
		}
	}
	rights := make([]*rightRow, 0, len(s.R))
	for pk, row := range s.R {
		got, ok := j.pkOf(record.Right, row)
		if !ok || got != pk {
			return fmt.Errorf("%w: right row %q: %q is not its primary key", ErrBadSnapshot, pk, j.spec.Right.PK)
		}
		rights = append(rights, &rightRow{pk: pk, row: row, ts: s.RT[pk]})
	}
	for pk := range s.RT {
		if _, ok := s.R[pk]; !ok {
			return fmt.Errorf("%w: a time for right row %q, which is not there", ErrBadSnapshot, pk)
		}
	}
	if s.LT != 0 && s.L == nil {
		return fmt.Errorf("%w: a left time without a left row", ErrBadSnapshot)
	}
	if len(rights) == 0 {
		rights = nil
	}
	sortRights(rights)
	j.left, j.leftTs, j.rights = s.L, s.LT, rights
	return nil
}
