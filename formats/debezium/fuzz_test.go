package debezium

import (
	"errors"
	"reflect"
	"testing"

	"github.com/joinery/joinery/record"
)

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{`, `[]`, `{"after":{"id":1},"op":"c","ts_ms":1}`,
		`{"before":{"id":1,"v":1.5e300},"after":{"id":1,"v":"x"},"op":"u"}`,
		`{"before":{"id":1},"op":"d"}`,
		`{"schema":{},"payload":{"after":{"a":[1,{"b":null}]},"op":"r"}}`,
		`{"schema":{},"payload":null}`,
		`{"after":{"s":"\u00e9\ud800"},"op":"c"} `,
		`{"after":{},"op":"c"} x`,
	} {
		f.Add([]byte(s))
	}
	pos := record.Position{Source: "s", Partition: 1, Offset: 2}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b, pos)
		if err != nil {
			var de *DecodeError
			if !errors.Is(err, ErrTombstone) && !errors.As(err, &de) {
				t.Fatalf("Decode returned untyped error %v", err)
			}
			return
		}
		enc := Encode(c)
		c2, err := Decode(enc, pos)
		if err != nil {
			t.Fatalf("Decode(Encode(c)) = %v; encoded %s", err, enc)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip differs:\n %#v\n %#v", c, c2)
		}
	})
}
