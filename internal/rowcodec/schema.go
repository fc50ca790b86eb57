package rowcodec

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/joinery/joinery/record"
)

// A Schema is a table's column names, known from the job (the columns it
// keeps of a side: joins.CDCSpec.Kept). A row encoded under a schema
// names each column by its place in the schema instead of its name:
//
//	schema row = 0xC4 | fingerprint (4 bytes, big-endian) | uvarint n
//	           | n × (uvarint ordinal | value)        ordinals ascending
//
// with values as in a compact row. The fingerprint (FNV-1a of the names)
// says which schema wrote the row: a reader under another schema (the
// job's columns changed) refuses it with ErrSchema rather than misread
// it. A users row of the seed's three columns is 28 bytes this way and 43
// with its names.
type Schema struct {
	cols []string
	idx  map[string]int
	fp   uint32
}

// SchemaTag is the first byte of a row encoded under a schema.
const SchemaTag byte = 0xC4

// ErrSchema is wrapped by the error for a schema row written under
// another schema than the reader's.
var ErrSchema = fmt.Errorf("%w: written under another schema", ErrBad)

// NewSchema makes the schema of cols (in any order; a name twice counts
// once). It returns nil for no columns or more than 255.
func NewSchema(cols []string) *Schema {
	cols = slices.Compact(slices.Sorted(slices.Values(cols)))
	if len(cols) == 0 || len(cols) > 255 {
		return nil
	}
	s := &Schema{cols: cols, idx: make(map[string]int, len(cols))}
	h := fnv.New32a()
	for i, c := range cols {
		s.idx[c] = i
		h.Write([]byte(c))
		h.Write([]byte{0})
	}
	s.fp = h.Sum32()
	return s
}

// Fingerprint identifies the schema in the rows it encodes.
func (s *Schema) Fingerprint() uint32 { return s.fp }

// Columns are the schema's column names, ascending.
func (s *Schema) Columns() []string { return slices.Clone(s.cols) }

// IsSchemaRow reports whether b is a row encoded under a schema.
func IsSchemaRow(b []byte) bool { return len(b) > 0 && b[0] == SchemaTag }

// Append appends r encoded under s to b. ok is false (and b's extension
// is garbage) when r has a column s does not, or a value Append of a
// compact row does not cover: the caller then encodes it with its names.
func (s *Schema) Append(b []byte, r record.Row) ([]byte, bool) {
	var room [16]int
	ords := room[:0]
	for k := range r {
		i, ok := s.idx[k]
		if !ok {
			return b, false
		}
		ords = append(ords, i)
	}
	slices.Sort(ords)
	b = append(b, SchemaTag)
	b = binary.BigEndian.AppendUint32(b, s.fp)
	b = binary.AppendUvarint(b, uint64(len(ords)))
	for _, i := range ords {
		b = binary.AppendUvarint(b, uint64(i))
		var ok bool
		if b, ok = appendValue(b, r[s.cols[i]]); !ok {
			return b, false
		}
	}
	return b, true
}

// Expand rewrites a row encoded under s as the compact row with its
// column names (what Decode, AppendJSON, Columns and Get read).
func (s *Schema) Expand(b []byte) ([]byte, error) {
	if !IsSchemaRow(b) || len(b) < 5 {
		return nil, fmt.Errorf("%w: not a schema row", ErrBad)
	}
	if fp := binary.BigEndian.Uint32(b[1:5]); fp != s.fp {
		return nil, fmt.Errorf("%w: schema %08x, the reader's %08x (columns %v)", ErrSchema, fp, s.fp, s.cols)
	}
	r := reader{b: b[5:]}
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.fail("%d columns in %d bytes", n, len(r.b))
	}
	out := make([]byte, 0, len(b)+8*int(min(n, 64)))
	out = append(out, Tag)
	out = binary.AppendUvarint(out, n)
	prev := -1
	for i := uint64(0); r.err == nil && i < n; i++ {
		ord := r.uvarint()
		if r.err != nil {
			break
		}
		if ord >= uint64(len(s.cols)) || int(ord) <= prev {
			r.fail("column ordinal %d after %d of %d", ord, prev, len(s.cols))
			break
		}
		prev = int(ord)
		name := s.cols[ord]
		out = binary.AppendUvarint(out, uint64(len(name)))
		out = append(out, name...)
		start := r.b
		tag := r.byte()
		switch tag {
		case tNull, tFalse, tTrue:
		case tInt:
			if r.err != nil {
				break
			}
			if _, k := binary.Varint(r.b); k <= 0 {
				r.fail("bad integer")
			} else {
				r.b = r.b[k:]
			}
		case tNumber, tString, tJSON:
			r.bytes()
		default:
			r.fail("unknown value tag %#x", tag)
		}
		if r.err == nil {
			out = append(out, start[:len(start)-len(r.b)]...)
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d bytes after the last column", len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}
