// Package rowcodec owns the compact encoding of one table row (record.Row)
// as the key state stores it: typed values, no JSON text, column names
// written once per column and numbers that are integers as varints. A
// users row {"firstname":"F2020-36","id":2020,"lastname":"L216"} is 52
// bytes of JSON and 43 in this encoding; every stored row stays under the
// 64-byte value limit of Redis's compact hash encoding (listpack) for
// rows of the seed's size.
//
// Layout (version 1):
//
//	row    = 0xC1 | uvarint n | n × column     columns in ascending name order
//	column = uvarint len | name | value
//	value  = 0x00                              null
//	       | 0x01 | 0x02                       false | true
//	       | 0x03 | zigzag varint              an integer number whose JSON text is its
//	                                           decimal form (json.Number "12", not "12.0")
//	       | 0x04 | uvarint len | text         any other number, its JSON text as it came
//	       | 0x05 | uvarint len | bytes        a string
//	       | 0x06 | uvarint len | JSON         an object or array, as internal/jsonenc writes it
//
// 0xC1 is never the first byte of JSON (nor of UTF-8), so a reader tells a
// compact row from a row stored as JSON by its first byte (IsCompact).
// Decode gives back the row with numbers as json.Number, strings, bools,
// nil and nested values decoded with UseNumber — what a JSON row decodes
// to — so a row restored from either encoding is the same value.
//
// Append encodes the value types decoders produce (nil, bool, string,
// json.Number, map[string]any, []any, record.Row); for any other type it
// reports false and the caller keeps the row as JSON.
//
// The package does no I/O and keeps no state.
package rowcodec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
)

// Tag is the first byte of a compact row.
const Tag byte = 0xC1

const (
	tNull byte = iota
	tFalse
	tTrue
	tInt
	tNumber
	tString
	tJSON
)

// ErrBad is wrapped by every decoding error.
var ErrBad = errors.New("rowcodec: bad compact row")

// IsCompact reports whether b is a compact row (not JSON).
func IsCompact(b []byte) bool { return len(b) > 0 && b[0] == Tag }

// Append appends r's compact encoding to b. ok is false (and b's extension
// is garbage) when r holds a value of a type the encoding does not cover
// or an invalid json.Number.
func Append(b []byte, r record.Row) ([]byte, bool) {
	var room [16]string
	names := room[:0]
	for k := range r {
		names = append(names, k)
	}
	slices.Sort(names)
	b = append(b, Tag)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		var ok bool
		if b, ok = appendValue(b, r[k]); !ok {
			return b, false
		}
	}
	return b, true
}

// Encode is Append to a new slice of exactly the encoding's length.
func Encode(r record.Row) ([]byte, bool) {
	return jsonenc.Exact(func(b []byte) ([]byte, bool) { return Append(b, r) })
}

func appendValue(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, tNull), true
	case bool:
		if x {
			return append(b, tTrue), true
		}
		return append(b, tFalse), true
	case string:
		b = append(b, tString)
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...), true
	case json.Number:
		if n, ok := canonicalInt(string(x)); ok {
			b = append(b, tInt)
			return binary.AppendVarint(b, n), true
		}
		if x == "" || !jsonenc.ValidNumber(string(x)) {
			return b, false
		}
		b = append(b, tNumber)
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...), true
	case map[string]any, record.Row, []any:
		if m, ok := x.(map[string]any); ok && m == nil {
			return append(b, tNull), true
		}
		if m, ok := x.(record.Row); ok && m == nil {
			return append(b, tNull), true
		}
		if a, ok := x.([]any); ok && a == nil {
			return append(b, tNull), true
		}
		// Length first: encode after a reserved maximal varint, then
		// move the JSON down if its length needs fewer bytes.
		b = append(b, tJSON)
		at := len(b)
		b = append(b, make([]byte, binary.MaxVarintLen64)...)
		start := len(b)
		var ok bool
		if b, ok = jsonenc.AppendValue(b, x); !ok {
			return b, false
		}
		n := len(b) - start
		var lb [binary.MaxVarintLen64]byte
		ln := binary.PutUvarint(lb[:], uint64(n))
		copy(b[at:], lb[:ln])
		copy(b[at+ln:], b[start:])
		return b[:at+ln+n], true
	}
	return b, false
}

// canonicalInt reports whether s is the decimal text of an int64 exactly
// as strconv.FormatInt writes it (no "+", no leading zeros, no "-0").
func canonicalInt(s string) (int64, bool) {
	if s == "" || len(s) > 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [20]byte
	if string(strconv.AppendInt(buf[:0], n, 10)) != s {
		return 0, false
	}
	return n, true
}

// reader walks an encoding.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrBad}, args...)...)
	}
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad length")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail("length %d past the end", n)
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

// each calls f with each column's name and raw value (tag and payload).
func each(b []byte, f func(name []byte, tag byte, payload []byte, i int) error) error {
	if !IsCompact(b) {
		return fmt.Errorf("%w: no tag", ErrBad)
	}
	r := reader{b: b[1:]}
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.fail("%d columns in %d bytes", n, len(r.b))
	}
	var prev []byte
	for i := 0; r.err == nil && uint64(i) < n; i++ {
		name := r.bytes()
		if r.err != nil {
			break
		}
		if i > 0 && bytes.Compare(prev, name) >= 0 {
			r.fail("columns out of order")
			break
		}
		prev = name
		tag := r.byte()
		var payload []byte
		switch tag {
		case tNull, tFalse, tTrue:
		case tInt:
			if r.err != nil {
				break
			}
			_, k := binary.Varint(r.b)
			if k <= 0 {
				r.fail("bad integer")
				break
			}
			payload, r.b = r.b[:k], r.b[k:]
		case tNumber, tString, tJSON:
			payload = r.bytes()
		default:
			r.fail("unknown value tag %#x", tag)
		}
		if r.err != nil {
			break
		}
		if err := f(name, tag, payload, i); err != nil {
			return err
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d bytes after the last column", len(r.b))
	}
	return r.err
}

// Decode decodes a compact row.
func Decode(b []byte) (record.Row, error) {
	var row record.Row
	err := each(b, func(name []byte, tag byte, p []byte, i int) error {
		if row == nil {
			row = make(record.Row, 8)
		}
		v, err := value(tag, p)
		if err != nil {
			return err
		}
		row[string(name)] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	if row == nil {
		row = record.Row{}
	}
	return row, nil
}

func value(tag byte, p []byte) (any, error) {
	switch tag {
	case tFalse:
		return false, nil
	case tTrue:
		return true, nil
	case tInt:
		n, _ := binary.Varint(p)
		return json.Number(strconv.FormatInt(n, 10)), nil
	case tNumber:
		if !jsonenc.ValidNumber(string(p)) {
			return nil, fmt.Errorf("%w: number %q", ErrBad, p)
		}
		return json.Number(p), nil
	case tString:
		return string(p), nil
	case tJSON:
		d := json.NewDecoder(bytes.NewReader(p))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: nested value: %v", ErrBad, err)
		}
		if d.More() {
			return nil, fmt.Errorf("%w: nested value: trailing data", ErrBad)
		}
		return v, nil
	}
	return nil, nil
}

// AppendJSON appends the JSON of the compact row b, as internal/jsonenc
// writes the decoded row (object keys in ascending order, HTML escaping
// off), without decoding it into a map.
func AppendJSON(dst, b []byte) ([]byte, error) {
	dst = append(dst, '{')
	err := each(b, func(name []byte, tag byte, p []byte, i int) error {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonenc.AppendString(dst, string(name))
		dst = append(dst, ':')
		switch tag {
		case tNull:
			dst = append(dst, "null"...)
		case tFalse:
			dst = append(dst, "false"...)
		case tTrue:
			dst = append(dst, "true"...)
		case tInt:
			n, _ := binary.Varint(p)
			dst = strconv.AppendInt(dst, n, 10)
		case tNumber:
			if !jsonenc.ValidNumber(string(p)) {
				return fmt.Errorf("%w: number %q", ErrBad, p)
			}
			dst = append(dst, p...)
		case tString:
			dst = jsonenc.AppendString(dst, string(p))
		case tJSON:
			if !json.Valid(p) {
				return fmt.Errorf("%w: nested value is not JSON", ErrBad)
			}
			dst = append(dst, p...)
		}
		return nil
	})
	return append(dst, '}'), err
}

// Columns returns the names of the row's columns, ascending.
func Columns(b []byte) ([]string, error) {
	var names []string
	err := each(b, func(name []byte, _ byte, _ []byte, _ int) error {
		names = append(names, string(name))
		return nil
	})
	return names, err
}

// Get returns the value of column name in the compact row b, decoded as
// Decode would, and whether the row has that column. A string or number
// value costs one allocation (its Go string); the others none. Get trusts
// b to be an encoding Append made: on a malformed row it reports false.
func Get(b []byte, name string) (any, bool) {
	if !IsCompact(b) {
		return nil, false
	}
	r := reader{b: b[1:]}
	n := r.uvarint()
	for i := uint64(0); r.err == nil && i < n; i++ {
		col := r.bytes()
		tag := r.byte()
		var p []byte
		switch tag {
		case tNull, tFalse, tTrue:
		case tInt:
			if r.err != nil {
				return nil, false
			}
			_, k := binary.Varint(r.b)
			if k <= 0 {
				return nil, false
			}
			p, r.b = r.b[:k], r.b[k:]
		case tNumber, tString, tJSON:
			p = r.bytes()
		default:
			return nil, false
		}
		if r.err != nil {
			return nil, false
		}
		if string(col) == name {
			v, err := value(tag, p)
			return v, err == nil
		}
		if string(col) > name {
			return nil, false // columns are in ascending order
		}
	}
	return nil, false
}
