package actors

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/joinery/joinery/record"
)

// sameValue is deep equality of decoded row values, with a float64 equal
// to itself by its bits (NaN included).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case record.Row:
		y, ok := b.(record.Row)
		return ok && (x == nil) == (y == nil) && sameValue(map[string]any(x), map[string]any(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

type stringer struct{ S string }

// TestRowBinRoundTrip: every value type a row can hold comes back as the
// key actor would see it in this process (types other than JSON's decoded
// ones as their JSON would decode).
func TestRowBinRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		row  record.Row
		want record.Row // nil: the row itself
	}{
		{name: "nil row"},
		{name: "empty row", row: record.Row{}},
		{name: "numbers", row: record.Row{"i": json.Number("42"), "neg": json.Number("-7"), "f": json.Number("3.25"),
			"exp": json.Number("1e300"), "big": json.Number("123456789012345678901234567890"), "keep": json.Number("1.50"), "empty": json.Number("")}},
		{name: "strings", row: record.Row{"": "", "s": "plain", "u": "žluťoučký 🐎", "nul": "a\x00b", "quote": `"\</>&`, "long": strings.Repeat("x", 300)}},
		{name: "bools and null", row: record.Row{"t": true, "f": false, "n": nil}},
		{name: "floats", row: record.Row{"f": 1.5, "z": math.Copysign(0, -1), "nan": math.NaN(), "inf": math.Inf(-1), "max": math.MaxFloat64}},
		{name: "nested", row: record.Row{"m": map[string]any{"a": json.Number("1"), "b": []any{"x", nil, true, map[string]any{}}, "c": map[string]any{"d": []any{}}}}},
		{name: "nil containers", row: record.Row{"m": map[string]any(nil), "a": []any(nil), "r": record.Row(nil)},
			want: record.Row{"m": nil, "a": nil, "r": nil}},
		{name: "nested row", row: record.Row{"r": record.Row{"x": "y"}}, want: record.Row{"r": map[string]any{"x": "y"}}},
		{name: "other types as JSON", row: record.Row{"int": 7, "i64": int64(-9), "strct": stringer{S: "v"}, "strs": []string{"a", "b"}},
			want: record.Row{"int": json.Number("7"), "i64": json.Number("-9"), "strct": map[string]any{"S": "v"}, "strs": []any{"a", "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := AppendRow(nil, tc.row)
			if err != nil {
				t.Fatal(err)
			}
			if tc.row == nil && len(b) != 0 {
				t.Fatalf("nil row encoded to %d bytes", len(b))
			}
			got, err := DecodeRowBin(b)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = tc.row
			}
			if (got == nil) != (want == nil) || !sameValue(map[string]any(got), map[string]any(want)) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
			}
		})
	}
}

// TestRowBinSmallerThanJSON: the point of the encoding is less work than
// JSON; it must not be bigger for a typical row either.
func TestRowBinSmallerThanJSON(t *testing.T) {
	row := record.Row{"id": json.Number("12345"), "user_id": json.Number("77"), "name": "example.com", "active": true, "note": nil}
	b, err := AppendRow(nil, row)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(row)
	if len(b) > len(j) {
		t.Fatalf("binary row is %d bytes, its JSON %d", len(b), len(j))
	}
}

func TestRowBinEncodeError(t *testing.T) {
	if _, err := AppendRow(nil, record.Row{"ch": make(chan int)}); err == nil {
		t.Fatal("a channel value encoded without error")
	}
}

func TestRowBinDecodeErrors(t *testing.T) {
	good, err := AppendRow(nil, record.Row{"a": "xyz", "b": json.Number("1"), "f": 2.5})
	if err != nil {
		t.Fatal(err)
	}
	deep := []byte{rowFormat, 1, 1, 'k'}
	for range maxRowDepth + 1 {
		deep = append(deep, tagArray, 1)
	}
	deep = append(deep, tagNull)
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"bad format", []byte{0x7b, 0}},
		{"no count", []byte{rowFormat}},
		{"count past end", []byte{rowFormat, 5, 1, 'a', tagNull}},
		{"truncated", good[:len(good)-3]},
		{"trailing", append(append([]byte{}, good...), 0)},
		{"unknown tag", []byte{rowFormat, 1, 1, 'a', 99}},
		{"missing value", []byte{rowFormat, 1, 1, 'a'}},
		{"short float", []byte{rowFormat, 1, 1, 'a', tagFloat, 1, 2}},
		{"bad varint", []byte{rowFormat, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"bad json", []byte{rowFormat, 1, 1, 'a', tagJSON, 2, '{', '}' + 1}},
		{"json trailing", []byte{rowFormat, 1, 1, 'a', tagJSON, 3, '1', ' ', '2'}},
		{"too deep", deep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeRowBin(tc.in)
			if err == nil {
				t.Fatalf("decoded %#v without error", r)
			}
			if !errors.Is(err, errRow) {
				t.Fatalf("error %v is not a bad-row error", err)
			}
		})
	}
}

// FuzzDecodeRowBin: any input is decoded or refused, never a panic, and
// what decodes encodes to bytes that decode to the same row.
func FuzzDecodeRowBin(f *testing.F) {
	for _, r := range []record.Row{
		{},
		{"a": json.Number("1"), "b": "x", "c": true, "d": nil, "e": 1.5},
		{"m": map[string]any{"n": []any{json.Number("2"), false, map[string]any{"z": "y"}}}},
		{"j": 12},
	} {
		b, err := AppendRow(nil, r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{rowFormat, 1, 1, 'a', tagJSON, 1, '['})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRowBin(b)
		if err != nil {
			return
		}
		again, err := AppendRow(nil, r)
		if err != nil {
			t.Fatalf("a decoded row does not encode: %v", err)
		}
		r2, err := DecodeRowBin(again)
		if err != nil {
			t.Fatalf("a re-encoded row does not decode: %v", err)
		}
		if (r == nil) != (r2 == nil) || !sameValue(map[string]any(r), map[string]any(r2)) {
			t.Fatalf("re-encoding changed the row:\n %#v\n %#v", r, r2)
		}
	})
}
