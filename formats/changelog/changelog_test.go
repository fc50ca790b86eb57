package changelog

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/record"
)

func TestChangelogFormatParse(t *testing.T) {
	for _, f := range []Format{Changelog, Upsert, Debezium} {
		g, err := ParseFormat(f.String())
		if err != nil || g != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f.String(), g, err)
		}
	}
	if _, err := ParseFormat("avro"); err == nil {
		t.Error("ParseFormat(avro) succeeded")
	}
	var zero Format
	if zero != Changelog {
		t.Error("zero Format is not Changelog")
	}
}

func TestChangelogEncode(t *testing.T) {
	row := record.Row{"user_id": json.Number("1"), "name": "a<b>&c", "domain": nil}
	out := func(k record.Kind) record.Output {
		return record.Output{ID: "users/0@3/1/0/0", Kind: k, PK: `[1, null]`, Row: row}
	}
	for _, tc := range []struct {
		name string
		f    Format
		o    record.Output
		want string // "" = skipped
	}{
		{"changelog insert", Changelog, out(record.Insert),
			`{"id":"users/0@3/1/0/0","op":"+I","pk":[1,null],"row":{"domain":null,"name":"a<b>&c","user_id":1}}`},
		{"changelog update before", Changelog, out(record.UpdateBefore),
			`{"id":"users/0@3/1/0/0","op":"-U","pk":[1,null],"row":{"domain":null,"name":"a<b>&c","user_id":1}}`},
		{"changelog delete", Changelog, out(record.Delete),
			`{"id":"users/0@3/1/0/0","op":"-D","pk":[1,null],"row":{"domain":null,"name":"a<b>&c","user_id":1}}`},
		{"changelog empty pk nil row", Changelog, record.Output{ID: "x", Kind: record.Insert},
			`{"id":"x","op":"+I","pk":null,"row":null}`},
		{"upsert insert", Upsert, out(record.Insert),
			`{"id":"users/0@3/1/0/0","key":[1,null],"value":{"domain":null,"name":"a<b>&c","user_id":1}}`},
		{"upsert update after", Upsert, out(record.UpdateAfter),
			`{"id":"users/0@3/1/0/0","key":[1,null],"value":{"domain":null,"name":"a<b>&c","user_id":1}}`},
		{"upsert update before skipped", Upsert, out(record.UpdateBefore), ""},
		{"upsert delete tombstone", Upsert, out(record.Delete),
			`{"id":"users/0@3/1/0/0","key":[1,null],"value":null}`},
		{"upsert insert nil row", Upsert, record.Output{ID: "x", Kind: record.Insert, PK: "[1]"},
			`{"id":"x","key":[1],"value":{}}`},
		{"debezium insert", Debezium, out(record.Insert),
			`{"before":null,"after":{"domain":null,"name":"a<b>&c","user_id":1},"op":"c","source":{"connector":"joinery","id":"users/0@3/1/0/0","pk":[1,null]}}`},
		{"debezium update after", Debezium, out(record.UpdateAfter),
			`{"before":null,"after":{"domain":null,"name":"a<b>&c","user_id":1},"op":"u","source":{"connector":"joinery","id":"users/0@3/1/0/0","pk":[1,null]}}`},
		{"debezium update before skipped", Debezium, out(record.UpdateBefore), ""},
		{"debezium delete", Debezium, out(record.Delete),
			`{"before":{"domain":null,"name":"a<b>&c","user_id":1},"after":null,"op":"d","source":{"connector":"joinery","id":"users/0@3/1/0/0","pk":[1,null]}}`},
		{"debezium nil row", Debezium, record.Output{ID: "x", Kind: record.Delete},
			`{"before":{},"after":null,"op":"d","source":{"connector":"joinery","id":"x","pk":null}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, ok := tc.f.Encode(tc.o)
			if tc.want == "" {
				if ok || line != nil {
					t.Fatalf("Encode = %s, %v; want skipped", line, ok)
				}
				return
			}
			if !ok || string(line) != tc.want {
				t.Fatalf("Encode = %s, %v\nwant %s", line, ok, tc.want)
			}
		})
	}
}

func TestChangelogMarshalErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Format
		o    record.Output
	}{
		{"bad pk", Changelog, record.Output{ID: "x", PK: "[1"}},
		{"bad kind", Changelog, record.Output{ID: "x", Kind: 9, PK: "[1]"}},
		{"bad format", Format(7), record.Output{ID: "x", PK: "[1]"}},
		{"bad row", Changelog, record.Output{ID: "x", PK: "[1]", Row: record.Row{"c": make(chan int)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := tc.f.Marshal(tc.o); err == nil {
				t.Fatal("Marshal succeeded")
			}
		})
	}
}

func TestChangelogDecodeRoundTrip(t *testing.T) {
	o := record.Output{ID: "a/0@1/k/0/0", Kind: record.UpdateAfter, PK: `[1,"x"]`,
		Row: record.Row{"n": json.Number("1.50"), "s": "é", "o": map[string]any{"a": []any{true}}}}
	line, _ := Changelog.Encode(o)
	got, err := DecodeChangelog(line)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, o) {
		t.Fatalf("DecodeChangelog = %#v, want %#v", got, o)
	}
	for _, bad := range []string{``, `{`, `null`, `{"op":"+I"}`, `{"id":"x"}`, `{"id":"x","op":"+X"}`, `{"id":"x","op":"+I"} 1`, `{"id":"x","op":"+I","row":[1]}`} {
		if _, err := DecodeChangelog([]byte(bad)); err == nil {
			t.Errorf("DecodeChangelog(%q) succeeded", bad)
		}
	}

	uline, _ := Upsert.Encode(o)
	id, key, value, err := DecodeUpsert(uline)
	if err != nil || id != o.ID || key != o.PK || !reflect.DeepEqual(value, o.Row) {
		t.Fatalf("DecodeUpsert = %q %q %v %v", id, key, value, err)
	}
	o.Kind = record.Delete
	uline, _ = Upsert.Encode(o)
	if _, _, value, err = DecodeUpsert(uline); err != nil || value != nil {
		t.Fatalf("DecodeUpsert tombstone = %v %v", value, err)
	}
}

// TestChangelogDebeziumReadable checks that the Debezium format is read back
// by formats/debezium as the change it stands for.
func TestChangelogDebeziumReadable(t *testing.T) {
	row := record.Row{"user_id": json.Number("1"), "domain_id": json.Number("8")}
	for kind, want := range map[record.Kind]record.Change{
		record.Insert:      {Op: record.OpCreate, After: row},
		record.UpdateAfter: {Op: record.OpUpdate, After: row},
		record.Delete:      {Op: record.OpDelete, Before: row},
	} {
		line, ok := Debezium.Encode(record.Output{ID: "i", Kind: kind, PK: "[1,8]", Row: row})
		if !ok {
			t.Fatalf("%v skipped", kind)
		}
		got, err := debezium.Decode(line, record.Position{})
		if err != nil {
			t.Fatalf("%v: %s: %v", kind, line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: decoded %#v, want %#v", kind, got, want)
		}
	}
}
