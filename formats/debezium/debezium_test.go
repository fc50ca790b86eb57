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
			name: "surrogate pair and escaped backslashes",
			in:   `{"after":{"id":"\ud83d\ude00","a":"\\ud800k","b":"\uFFFD"},"op":"c"}`,
			want: record.Change{Op: record.OpCreate, After: record.Row{"id": "\U0001F600", "a": `\ud800k`, "b": "\uFFFD"}},
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
		{`{"after":{"id":"\ud800k"},"op":"c"}`, ReasonBadUTF8},
		{`{"after":{"id":"\udbffk"},"op":"c"}`, ReasonBadUTF8},
		{`{"after":{"id":"\uDC00"},"op":"c"}`, ReasonBadUTF8},
		{`{"after":{"\ud83dk":1},"op":"c"}`, ReasonBadUTF8},
		{`{"after":{"id":1,"v":["\ud800\u0041"]},"op":"c"}`, ReasonBadUTF8},
		{`{"before":{"id":"\udfff"},"op":"d"}`, ReasonBadUTF8},
		{`{"after":{"id":1},"op":"c","source":{"table":"\ud800"}}`, ReasonBadUTF8},
		{`{"schema":{},"payload":{"after":{"id":"\udc00"},"op":"c"}}`, ReasonBadUTF8},
		{"{\"after\":{\"id\":\"\xffk\"},\"op\":\"c\"}", ReasonBadUTF8},
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

func TestDecodeDebeziumTruncate(t *testing.T) {
	for _, in := range []string{
		`{"op":"t","source":{"table":"users","lsn":12}}`,
		`{"schema":{},"payload":{"op":"t","before":null,"after":null,"source":{"table":"users"}}}`,
	} {
		e, err := DecodeEnvelope([]byte(in), testPos)
		if !errors.Is(err, ErrTruncate) {
			t.Fatalf("DecodeEnvelope(%s) = %v, want ErrTruncate", in, err)
		}
		if e.Table != "users" {
			t.Errorf("table = %q, want users", e.Table)
		}
		if _, err := Decode([]byte(in), testPos); !errors.Is(err, ErrTruncate) {
			t.Errorf("Decode = %v, want ErrTruncate", err)
		}
	}
}

func TestDecodeDebeziumEnvelope(t *testing.T) {
	for _, tc := range []struct {
		name, in, table, pos string
	}{
		{"postgres", `{"op":"c","after":{"id":1},"source":{"connector":"postgresql","table":"users","lsn":24023128,"txId":555}}`, "users", "pg/00000000000024023128"},
		{"mysql", `{"op":"u","after":{"id":1},"source":{"connector":"mysql","table":"domains","file":"mysql-bin.000003","pos":154,"row":2}}`, "domains", "mysql/mysql-bin.000003/00000000000000000154/0000000002"},
		{"mysql without row", `{"op":"u","after":{"id":1},"source":{"file":"mysql-bin.000003","pos":7}}`, "", "mysql/mysql-bin.000003/00000000000000000007/0000000000"},
		{"sqlserver", `{"op":"d","before":{"id":1},"source":{"table":"t","commit_lsn":"00000027:00000758:0005","change_lsn":"00000027:00000758:0003","event_serial_no":1}}`, "t", "sqlserver/00000027:00000758:0005/00000027:00000758:0003/0000000001"},
		{"oracle", `{"op":"c","after":{},"source":{"scn":"2868546"}}`, "", "oracle/000000000000000002868546"},
		{"mongo", `{"op":"c","after":{},"source":{"ts_ms":1700000000,"ord":3}}`, "", "mongo/00000000001700000000/0000000003"},
		{"wrapped", `{"schema":{},"payload":{"op":"r","after":{"id":1},"source":{"table":"users","lsn":5}}}`, "users", "pg/00000000000000000005"},
		{"no source", `{"op":"c","after":{"id":1}}`, "", ""},
		{"unknown source", `{"op":"c","after":{"id":1},"source":{"table":"x","ts_ms":5}}`, "x", ""},
		{"negative lsn", `{"op":"c","after":{"id":1},"source":{"lsn":-5}}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeEnvelope([]byte(tc.in), testPos)
			if err != nil {
				t.Fatal(err)
			}
			if e.Table != tc.table || e.SourcePos != tc.pos {
				t.Errorf("table, pos = %q, %q; want %q, %q", e.Table, e.SourcePos, tc.table, tc.pos)
			}
		})
	}
}

// TestDebeziumSourcePositionOrder checks that positions of one connector
// compare as strings in log order.
func TestDebeziumSourcePositionOrder(t *testing.T) {
	for _, pair := range [][2]map[string]any{
		{{"lsn": json.Number("999")}, {"lsn": json.Number("1000")}},
		{{"file": "mysql-bin.000003", "pos": json.Number("900")}, {"file": "mysql-bin.000003", "pos": json.Number("1000")}},
		{{"file": "mysql-bin.000003", "pos": json.Number("9"), "row": json.Number("1")}, {"file": "mysql-bin.000003", "pos": json.Number("9"), "row": json.Number("2")}},
		{{"file": "mysql-bin.000003", "pos": json.Number("99999")}, {"file": "mysql-bin.000004", "pos": json.Number("4")}},
		{{"scn": "99"}, {"scn": "100"}},
		{{"commit_lsn": "00000027:00000758:0005", "change_lsn": "00000027:00000758:0003", "event_serial_no": json.Number("2")},
			{"commit_lsn": "00000027:00000758:0005", "change_lsn": "00000027:00000758:0003", "event_serial_no": json.Number("10")}},
	} {
		a, b := SourcePosition(pair[0]), SourcePosition(pair[1])
		if a == "" || b == "" || !(a < b) {
			t.Errorf("SourcePosition(%v) = %q, SourcePosition(%v) = %q: want a < b", pair[0], a, pair[1], b)
		}
	}
}
