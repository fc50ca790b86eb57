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
		`{"op":"t","source":{"table":"users","lsn":1}}`,
		`{"after":{"id":1},"op":"u","source":{"file":"b.1","pos":3,"row":1,"table":"t"}}`,
		`{"after":{"id":1},"op":"c","source":{"commit_lsn":"a","change_lsn":"b","event_serial_no":2}}`,
		`{"after":{"id":1},"op":"c","source":{"scn":"123","ts_ms":1,"ord":2}}`,
	} {
		f.Add([]byte(s))
	}
	pos := record.Position{Source: "s", Partition: 1, Offset: 2}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b, pos)
		e, eerr := DecodeEnvelope(b, pos)
		if (err == nil) != (eerr == nil) || !reflect.DeepEqual(c, e.Change) {
			t.Fatalf("Decode = %v, %v; DecodeEnvelope = %v, %v", c, err, e, eerr)
		}
		if err != nil {
			var de *DecodeError
			if !errors.Is(err, ErrTombstone) && !errors.Is(err, ErrTruncate) && !errors.As(err, &de) {
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
