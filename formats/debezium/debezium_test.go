package debezium

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/joinery/joinery/record"
)

var testPos = record.Position{Source: "users", Partition: 0, Offset: 7}

func TestDecodeDebeziumAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want record.Change
	}{
		{
			name: "create",
			in:   `{"before":null,"after":{"id":1,"name":"ann"},"op":"c","ts_ms":1700000000000}`,
			want: record.Change{Op: record.OpCreate, After: record.Row{"id": json.Number("1"), "name": "ann"}, TsMs: 1700000000000},
		},
		{
			name: "snapshot read without ts",
			in:   `{"after":{"id":2},"op":"r"}`,
			want: record.Change{Op: record.OpRead, After: record.Row{"id": json.Number("2")}},
		},
		{
			name: "create drops before",
			in:   `{"before":{"id":0},"after":{"id":1},"op":"c"}`,
			want: record.Change{Op: record.OpCreate, After: record.Row{"id": json.Number("1")}},
		},
		{
			name: "update",
			in:   `{"before":{"id":1,"v":1.50},"after":{"id":1,"v":12345678901234567890},"op":"u","ts_ms":5}`,
			want: record.Change{Op: record.OpUpdate, Before: record.Row{"id": json.Number("1"), "v": json.Number("1.50")},
				After: record.Row{"id": json.Number("1"), "v": json.Number("12345678901234567890")}, TsMs: 5},
		},
		{
			name: "update without before",
			in:   `{"before":null,"after":{"id":1},"op":"u"}`,
			want: record.Change{Op: record.OpUpdate, After: record.Row{"id": json.Number("1")}},
		},
		{
			name: "delete drops after",
			in:   `{"before":{"id":1},"after":{"id":9},"op":"d","ts_ms":null}`,
			want: record.Change{Op: record.OpDelete, Before: record.Row{"id": json.Number("1")}},
		},
		{
			name: "wrapped",
			in:   `{"schema":{"type":"struct","fields":[]},"payload":{"before":null,"after":{"id":"x","nested":{"a":[1,null,true]}},"op":"c","ts_ms":1,"source":{"db":"d"}}}`,
			want: record.Change{Op: record.OpCreate, After: record.Row{"id": "x", "nested": map[string]any{"a": []any{json.Number("1"), nil, true}}}, TsMs: 1},
		},
		{
			name: "surrounding whitespace",
			in:   "  \t{\"after\":{},\"op\":\"c\"}\r\n",
			want: record.Change{Op: record.OpCreate, After: record.Row{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.in), testPos)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			tc.want.Pos = testPos
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Decode =\n %#v\nwant\n %#v", got, tc.want)
			}
		})
	}
}

func TestDecodeDebeziumTombstones(t *testing.T) {
	for _, in := range []string{"", "   ", "\n", "null", " null \n", `{"schema":{},"payload":null}`} {
		if _, err := Decode([]byte(in), testPos); !errors.Is(err, ErrTombstone) {
			t.Errorf("Decode(%q) = %v, want ErrTombstone", in, err)
		}
	}
}

func TestDecodeDebeziumRejects(t *testing.T) {
	for _, tc := range []struct {
		in, reason string
	}{
		{`{`, ReasonNotJSON},
		{`nope`, ReasonNotJSON},
		{`{"after":{},"op":"c"} x`, ReasonNotJSON},
		{`{"after":{},"op":"c"}{"after":{},"op":"c"}`, ReasonNotJSON},
		{`{"after":{},"op":"c"} null`, ReasonNotJSON},
		{`[1,2]`, ReasonNotObject},
		{`"c"`, ReasonNotObject},
		{`42`, ReasonNotObject},
		{`{"schema":{},"payload":[1]}`, ReasonNotObject},
		{`{"after":{"id":1}}`, ReasonMissingOp},
		{`{"after":{"id":1},"op":null}`, ReasonMissingOp},
		{`{"schema":{},"payload":{"after":{}}}`, ReasonMissingOp},
		{`{"after":{"id":1},"op":"x"}`, ReasonUnknownOp},
		{`{"after":{"id":1},"op":"create"}`, ReasonUnknownOp},
		{`{"after":{"id":1},"op":1}`, ReasonUnknownOp},
		{`{"op":"c"}`, ReasonMissingAfter},
		{`{"after":null,"op":"r"}`, ReasonMissingAfter},
		{`{"before":{"id":1},"op":"u"}`, ReasonMissingAfter},
		{`{"after":{"id":1},"op":"d"}`, ReasonMissingBefore},
		{`{"after":[1],"op":"c"}`, ReasonBadRow},
		{`{"after":{},"before":"x","op":"u"}`, ReasonBadRow},
		{`{"after":{},"op":"c","ts_ms":"1"}`, ReasonBadTs},
		{`{"after":{},"op":"c","ts_ms":1.5}`, ReasonBadTs},
		{`{"after":{},"op":"c","ts_ms":99999999999999999999}`, ReasonBadTs},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Decode([]byte(tc.in), testPos)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode = %v, want *DecodeError", err)
			}
			if de.Reason != tc.reason {
				t.Fatalf("reason = %q (%v), want %q", de.Reason, err, tc.reason)
			}
			if de.Pos != testPos {
				t.Fatalf("pos = %v, want %v", de.Pos, testPos)
			}
		})
	}
}

func TestEncodeDebeziumRoundTrip(t *testing.T) {
	c := record.Change{
		Op:     record.OpUpdate,
		Before: record.Row{"id": json.Number("1"), "s": "<a&b>"},
		After:  record.Row{"id": json.Number("1"), "s": "é", "n": nil},
		TsMs:   42,
		Pos:    testPos,
	}
	b := Encode(c)
	const want = `{"before":{"id":1,"s":"<a&b>"},"after":{"id":1,"n":null,"s":"é"},"op":"u","ts_ms":42}`
	if string(b) != want {
		t.Fatalf("Encode = %s, want %s", b, want)
	}
	got, err := Decode(b, testPos)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip = %#v, want %#v", got, c)
	}
}
