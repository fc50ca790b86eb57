package changelog

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/joinery/joinery/record"
)

// slowChangelog is the reflecting encoder appendChangelog stands in for.
func slowChangelog(t testing.TB, o record.Output, pk []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(changelogLine{ID: o.ID, Op: o.Kind, PK: pk, Row: o.Row, Ts: o.Ts, Seq: o.Seq}); err != nil {
		t.Fatalf("slow encoder: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestAppendChangelogEqualsEncodingJSON(t *testing.T) {
	rows := []record.Row{
		nil,
		{},
		{"a": "plain", "b": 1.0, "c": true, "d": nil},
		{"html": "<a href=\"x\">&</a>", "ctl": "\x00\x01\b\f\n\r\t\x1f\x7f", "bs": `\`},
		{"bad utf8": "a\xffb\xc3", "seps": "x\u2028y\u2029z", "emoji": "héllo ☃ 🎉"},
		{"f": []any{0.0, -0.0, 1e-7, 1e-6, 123456789.0, 1e20, 1e21, 1.5e300, -2.5e-10, 0.1, math.MaxFloat64, math.SmallestNonzeroFloat64}},
		{"num": json.Number("12.50"), "empty": json.Number(""), "nested": map[string]any{"z": 1.0, "a": []any{"x", nil, map[string]any{}}}},
		{"row": record.Row{"k": "v"}, "nilmap": map[string]any(nil), "nilslice": []any(nil)},
	}
	for i, row := range rows {
		for _, o := range []record.Output{
			{ID: "id-1", Kind: record.Insert, Row: row},
			{ID: "é\"x", Kind: record.UpdateBefore, Row: row, Ts: -5, Seq: 7},
			{ID: "z", Kind: record.Delete, Row: row, Ts: 1700000000000},
		} {
			for _, pk := range []string{`[1]`, `["a", 2]`, "null", `[ 1 , "x" ]`} {
				got, ok := appendChangelog(nil, o, []byte(pk))
				if !ok {
					t.Fatalf("row %d: fast path refused %v", i, row)
				}
				if want := slowChangelog(t, o, []byte(pk)); !bytes.Equal(got, want) {
					t.Errorf("row %d pk %s:\n got %s\nwant %s", i, pk, got, want)
				}
			}
		}
	}
	// Outside the fast path: the caller falls back (and Marshal reports
	// what encoding/json reports).
	for _, row := range []record.Row{{"i": 3}, {"nan": math.NaN()}, {"inf": math.Inf(1)}, {"n": json.Number("1x")}} {
		if _, ok := appendChangelog(nil, record.Output{ID: "x", Row: row}, []byte("[1]")); ok {
			t.Errorf("fast path took %v", row)
		}
	}
	if line, ok, err := Changelog.Marshal(record.Output{ID: "x", PK: "[1]", Row: record.Row{"i": 3}}); err != nil || !ok || string(line) != `{"id":"x","op":"+I","pk":[1],"row":{"i":3}}` {
		t.Errorf("slow path: %s %v %v", line, ok, err)
	}
	if _, _, err := Changelog.Marshal(record.Output{ID: "x", PK: "[1]", Row: record.Row{"nan": math.NaN()}}); err == nil {
		t.Error("NaN encoded without an error")
	}
}

func FuzzAppendChangelog(f *testing.F) {
	f.Add("id", "v<>&\u2028", 1.5, int64(3), uint64(9))
	f.Add("\xff", "\x00", 1e-9, int64(0), uint64(0))
	f.Fuzz(func(t *testing.T, id, s string, x float64, ts int64, seq uint64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		o := record.Output{ID: id, Kind: record.UpdateAfter, Row: record.Row{s: s, "x": x, "l": []any{s, x}}, Ts: ts, Seq: seq}
		got, ok := appendChangelog(nil, o, []byte(`[1]`))
		if !ok {
			t.Fatal("fast path refused")
		}
		if want := slowChangelog(t, o, []byte(`[1]`)); !bytes.Equal(got, want) {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	})
}

// TestAppendChangelogUsesRowJSON: an output whose row JSON is cached
// (record.Output.RowJSON, left by the key core) gets those bytes as its
// row, and one without gets its row encoded.
func TestAppendChangelogUsesRowJSON(t *testing.T) {
	o := record.Output{ID: "x", PK: "[1]", Row: record.Row{"a": "b"}, Seq: 2}
	line, ok, err := Changelog.Marshal(o)
	if err != nil || !ok || string(line) != `{"id":"x","op":"+I","pk":[1],"row":{"a":"b"},"seq":2}` {
		t.Fatalf("uncached: %s %v %v", line, ok, err)
	}
	o.RowJSON = []byte(`{"cached":1}`)
	line, ok, err = Changelog.Marshal(o)
	if err != nil || !ok || string(line) != `{"id":"x","op":"+I","pk":[1],"row":{"cached":1},"seq":2}` {
		t.Fatalf("cached: %s %v %v", line, ok, err)
	}
}

// TestAppendMatchesMarshal: Append writes Marshal's line after what dst
// holds, in every format, for a compact pk, one with spaces, none, an
// invalid one and an unknown kind; and a changelog line with a compact pk
// and a cached row costs no allocation.
func TestAppendMatchesMarshal(t *testing.T) {
	row := record.Row{"a": "b", "n": json.Number("1")}
	outs := []record.Output{
		{ID: "x", Kind: record.Insert, PK: "[1,2]", Row: row, Seq: 3},
		{ID: "x", Kind: record.UpdateBefore, PK: "[1, 2]", Row: row, Ts: 5},
		{ID: "x", Kind: record.Delete, PK: "", Row: row},
		{ID: "x", Kind: record.UpdateAfter, PK: `["a",null]`, Row: row, RowJSON: []byte(`{"cached":1}`)},
		{ID: "x", Kind: record.Insert, PK: "[1", Row: row},
		{ID: "x", Kind: record.Kind(99), PK: "[1]", Row: row},
	}
	for _, f := range []Format{Changelog, Upsert, Debezium} {
		for i, o := range outs {
			want, wok, werr := f.Marshal(o)
			got, ok, err := f.Append([]byte("prefix"), o)
			if (err != nil) != (werr != nil) || ok != wok {
				t.Errorf("format %v, output %d: Append ok %v err %v, Marshal ok %v err %v", f, i, ok, err, wok, werr)
				continue
			}
			if werr == nil && wok && string(got) != "prefix"+string(want) {
				t.Errorf("format %v, output %d: Append %s, Marshal %s", f, i, got, want)
			}
			if (werr != nil || !wok) && string(got) != "prefix" {
				t.Errorf("format %v, output %d: Append changed dst to %s", f, i, got)
			}
		}
	}
	buf := make([]byte, 0, 1024)
	o := outs[3]
	if n := testing.AllocsPerRun(100, func() { _, _, _ = Changelog.Append(buf[:0], o) }); n != 0 {
		t.Errorf("Append of a compact-pk output allocates %v times", n)
	}
}
