package debeziumavro_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/record"
)

// TestOutputEncoder: each output format's Avro value decodes to its JSON
// line (nested values as their JSON text, absent optional fields as null),
// and the Debezium format's to the same change formats/debezium reads from
// the JSON envelope.
func TestOutputEncoder(t *testing.T) {
	cols := []string{"user_id", "firstname", "score", "tags", "ok"}
	row := record.Row{"user_id": json.Number("1"), "firstname": "Egor", "score": json.Number("1.5"), "tags": []any{"a", json.Number("2")}, "ok": true}
	nulls := record.Row{"user_id": json.Number("2"), "firstname": nil, "score": nil, "tags": nil, "ok": nil}
	outs := []record.Output{
		{ID: "a", Kind: record.Insert, PK: `[1,"x"]`, Row: row, Seq: 3},
		{ID: "b", Kind: record.UpdateBefore, PK: `[1,"x"]`, Row: row},
		{ID: "c", Kind: record.UpdateAfter, PK: `[1,"x"]`, Row: nulls, Ts: 99},
		{ID: "d", Kind: record.Delete, PK: `[2,null]`, Row: nulls},
	}
	for _, f := range []changelog.Format{changelog.Changelog, changelog.Upsert, changelog.Debezium} {
		for _, columns := range [][]string{cols, nil} {
			text, err := debeziumavro.OutputSchema(f, "users-domains", columns)
			if err != nil {
				t.Fatal(err)
			}
			enc, err := debeziumavro.NewOutputEncoder(f, text, 7)
			if err != nil {
				t.Fatalf("%v: %v\n%s", f, err, text)
			}
			dec := debeziumavro.NewDecoder(memRegistry{7: text})
			for _, o := range outs {
				b, ok, err := enc.Encode(o)
				line, jok, _ := f.Marshal(o)
				if err != nil || ok != jok {
					t.Fatalf("%v %s: Encode = %v, %v; JSON ok %v", f, o.ID, ok, err, jok)
				}
				if !ok {
					continue
				}
				got, err := dec.DecodeValue(context.Background(), b)
				if err != nil {
					t.Fatalf("%v %s: %v", f, o.ID, err)
				}
				want := jsonValue(t, line)
				dropNulls(got.(map[string]any), "ts", "seq")
				if src, ok := got.(map[string]any)["source"].(map[string]any); ok {
					dropNulls(src, "ts_ms", "seq")
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%v columns=%v %s:\n avro %#v\n json %#v", f, columns != nil, o.ID, got, want)
				}
				if f == changelog.Debezium {
					ga, err := dec.DecodeValue(context.Background(), b)
					if err != nil {
						t.Fatal(err)
					}
					c1, err1 := debezium.DecodeMap(ga.(map[string]any), record.Position{})
					c2, err2 := debezium.DecodeEnvelope(line, record.Position{})
					if err1 != nil || err2 != nil || !reflect.DeepEqual(c1.Change.Op, c2.Change.Op) {
						t.Errorf("debezium %s: %v %v; %v %v", o.ID, c1, err1, c2, err2)
					}
				}
			}
		}
	}
	if _, err := debeziumavro.OutputSchema(changelog.Changelog, "j", []string{"bad-name"}); err == nil {
		t.Error("a column that is not an Avro name was accepted")
	}
}

// jsonValue decodes a JSON line as DecodeValue maps Avro: numbers as
// json.Number, nested row values as their JSON text.
func jsonValue(t *testing.T, line []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"row", "value", "before", "after"} {
		if r, ok := m[k].(map[string]any); ok {
			for c, v := range r {
				if _, nested := v.([]any); nested {
					b, _ := json.Marshal(v)
					r[c] = string(b)
				}
			}
		}
	}
	return m
}

func dropNulls(m map[string]any, keys ...string) {
	for _, k := range keys {
		if v, ok := m[k]; ok && v == nil {
			delete(m, k)
		}
	}
}
