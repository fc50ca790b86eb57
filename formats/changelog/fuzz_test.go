package changelog

import (
	"reflect"
	"testing"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/record"
)

func FuzzDecodeChangelog(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","op":"+I","pk":[1,null],"row":{"a":1}}`,
		`{"id":"x","op":"-D","pk":null,"row":null}`,
		`{"id":"x","op":"-U","pk":[ 1 , "a" ],"row":{"a":{"b":[1.5e10,"<"]}},"extra":1}`,
		`{"id":"x","op":"+U"}`,
		`{"id":"\ud800","op":"+I","pk":{},"row":{}}`,
		``, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		o, err := DecodeChangelog(line)
		if err != nil {
			return
		}
		enc, ok, err := Changelog.Marshal(o)
		if err != nil || !ok {
			t.Fatalf("Marshal(%#v) = %v, %v", o, ok, err)
		}
		o2, err := DecodeChangelog(enc)
		if err != nil {
			t.Fatalf("DecodeChangelog(Marshal(o)) = %v; line %s", err, enc)
		}
		if !reflect.DeepEqual(o, o2) {
			t.Fatalf("round trip differs:\n %#v\n %#v", o, o2)
		}
		enc2, _, _ := Changelog.Marshal(o2)
		if string(enc) != string(enc2) {
			t.Fatalf("encoding not deterministic:\n %s\n %s", enc, enc2)
		}
		if _, _, err := Upsert.Marshal(o); err != nil {
			t.Fatalf("Upsert.Marshal: %v", err)
		}
		// The Debezium format is read back by formats/debezium with the row.
		line, ok, err = Debezium.Marshal(o)
		if err != nil {
			t.Fatalf("Debezium.Marshal: %v", err)
		}
		if !ok {
			if o.Kind != record.UpdateBefore {
				t.Fatalf("Debezium.Marshal skipped %v", o.Kind)
			}
			return
		}
		c, err := debezium.Decode(line, record.Position{})
		if err != nil {
			t.Fatalf("debezium.Decode(%s): %v", line, err)
		}
		got := c.After
		if o.Kind == record.Delete {
			got = c.Before
		}
		want := o.Row
		if want == nil {
			want = record.Row{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("debezium row = %#v, want %#v", got, want)
		}
	})
}
