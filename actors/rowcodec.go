package actors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/joinery/joinery/record"
)

// The binary row encoding carries rows between nodes (events sent to a key
// actor in another process, and its outputs back) without JSON text: a
// profile of a 4-node fleet spent most of its remoting time encoding rows
// to JSON and decoding them again. A row is
//
//	rowFormat, uvarint(fields), then per field: string(name), value
//
// and a value one tag byte followed by its payload:
//
//	tagNull, tagFalse, tagTrue            (none)
//	tagString, tagNumber, tagJSON         uvarint(len), bytes (tagNumber: a json.Number's text;
//	                                      tagJSON: JSON text of a value of another Go type)
//	tagFloat                              8 bytes, little-endian IEEE 754
//	tagObject                             uvarint(fields), fields as in a row
//	tagArray                              uvarint(len), values
//
// A nil row encodes to no bytes. Decoding gives what decoding the row's JSON
// would (json.Number numbers, map[string]any objects, []any arrays), except
// that a float64 stays a float64 and a json.Number keeps its text as is, as
// a row handed to a key actor in this process does.
const (
	rowFormat = 0x01

	tagNull   = 0
	tagFalse  = 1
	tagTrue   = 2
	tagString = 3
	tagNumber = 4
	tagFloat  = 5
	tagObject = 6
	tagArray  = 7
	tagJSON   = 8
)

// maxRowDepth bounds the nesting the decoder accepts (encoding/json's limit).
const maxRowDepth = 10000

// AppendRow appends r in the binary row encoding. A value of a type that is
// none of JSON's decoded types (nil, bool, string, json.Number, float64,
// map[string]any, record.Row, []any) travels as its JSON text; the error is
// encoding/json's for a value it cannot encode.
func AppendRow(b []byte, r record.Row) ([]byte, error) {
	if r == nil {
		return b, nil
	}
	b = append(b, rowFormat)
	return appendFields(b, r, 0)
}

func appendFields(b []byte, m map[string]any, depth int) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(m)))
	for k, v := range m {
		b = appendString(b, k)
		var err error
		if b, err = appendValue(b, v, depth+1); err != nil {
			return b, err
		}
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendValue(b []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, tagNull), nil
	case bool:
		if x {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case string:
		return appendString(append(b, tagString), x), nil
	case json.Number:
		return appendString(append(b, tagNumber), string(x)), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagFloat), math.Float64bits(x)), nil
	case map[string]any:
		if x == nil {
			return append(b, tagNull), nil
		}
		return appendFields(append(b, tagObject), x, depth)
	case record.Row:
		if x == nil {
			return append(b, tagNull), nil
		}
		return appendFields(append(b, tagObject), x, depth)
	case []any:
		if x == nil {
			return append(b, tagNull), nil
		}
		b = binary.AppendUvarint(append(b, tagArray), uint64(len(x)))
		for _, e := range x {
			var err error
			if b, err = appendValue(b, e, depth+1); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return b, fmt.Errorf("actors: encode row value of type %T: %w", v, err)
	}
	return appendString(append(b, tagJSON), string(j)), nil
}

// errRow is the error of every malformed binary row.
var errRow = errors.New("actors: bad binary row")

// DecodeRowBin is the inverse of AppendRow; empty input is a nil row. It
// rejects malformed input (truncated, unknown tags, trailing bytes, nesting
// over maxRowDepth) with an error, never a panic.
func DecodeRowBin(b []byte) (record.Row, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != rowFormat {
		return nil, fmt.Errorf("%w: format %#x", errRow, b[0])
	}
	d := rowDecoder{b: b, i: 1}
	m, err := d.fields(0)
	if err != nil {
		return nil, err
	}
	if d.i != len(d.b) {
		return nil, fmt.Errorf("%w: %d trailing bytes", errRow, len(d.b)-d.i)
	}
	return record.Row(m), nil
}

type rowDecoder struct {
	b []byte
	i int
}

func (d *rowDecoder) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errRow, what, d.i)
}

// count reads a length whose items each take at least one more byte, so a corrupt length cannot make the decoder allocate past its input.
func (d *rowDecoder) count() (int, error) {
	n, w := binary.Uvarint(d.b[d.i:])
	if w <= 0 {
		return 0, d.fail("bad length")
	}
	d.i += w
	if n > uint64(len(d.b)-d.i) {
		return 0, d.fail("length past the end")
	}
	return int(n), nil
}

func (d *rowDecoder) str() (string, error) {
	n, err := d.count()
	if err != nil {
		return "", err
	}
	s := string(d.b[d.i : d.i+n])
	d.i += n
	return s, nil
}

func (d *rowDecoder) fields(depth int) (map[string]any, error) {
	if depth >= maxRowDepth {
		return nil, d.fail("nested too deep")
	}
	n, err := d.count()
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, n)
	for range n {
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if m[k], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (d *rowDecoder) value(depth int) (any, error) {
	if d.i >= len(d.b) {
		return nil, d.fail("missing value")
	}
	tag := d.b[d.i]
	d.i++
	switch tag {
	case tagNull:
		return nil, nil
	case tagFalse:
		return false, nil
	case tagTrue:
		return true, nil
	case tagString:
		return d.str()
	case tagNumber:
		s, err := d.str()
		return json.Number(s), err
	case tagFloat:
		if len(d.b)-d.i < 8 {
			return nil, d.fail("short float")
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.i:]))
		d.i += 8
		return f, nil
	case tagObject:
		return d.fields(depth)
	case tagArray:
		if depth >= maxRowDepth {
			return nil, d.fail("nested too deep")
		}
		n, err := d.count()
		if err != nil {
			return nil, err
		}
		a := make([]any, n)
		for j := range a {
			if a[j], err = d.value(depth + 1); err != nil {
				return nil, err
			}
		}
		return a, nil
	case tagJSON:
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(s)))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: JSON value: %v", errRow, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("%w: JSON value: trailing data", errRow)
		}
		return v, nil
	}
	return nil, fmt.Errorf("%w: unknown tag %d at byte %d", errRow, tag, d.i-1)
}
