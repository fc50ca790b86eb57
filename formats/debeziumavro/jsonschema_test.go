package debeziumavro_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/record"
)

func TestDecodeJSONSchema(t *testing.T) {
	pos := record.Position{Source: "s", Offset: 3}
	line := `{"op":"u","before":{"id":1},"after":{"id":1,"v":2.5},"source":{"table":"t","lsn":9},"ts_ms":4}`
	framed := append([]byte{0, 0, 0, 0, 7}, line...)
	for _, tc := range []struct {
		name   string
		value  []byte
		reason string
	}{
		{"framed JSON", framed, ""},
		{"tombstone", nil, "tombstone"},
		{"no header", []byte(line), debeziumavro.ReasonBadHeader},
		{"short", []byte{0, 0, 1}, debeziumavro.ReasonBadHeader},
		{"header, bad JSON", append([]byte{0, 0, 0, 0, 7}, '{'), debezium.ReasonNotJSON},
	} {
		got, err := debeziumavro.DecodeJSONSchema(tc.value, pos)
		var de *debezium.DecodeError
		switch {
		case tc.reason == "":
			want, werr := debezium.DecodeEnvelope([]byte(line), pos)
			if err != nil || werr != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %v, %v; want %v", tc.name, got, err, want)
			}
		case tc.reason == "tombstone":
			if !errors.Is(err, debezium.ErrTombstone) {
				t.Errorf("%s: %v", tc.name, err)
			}
		case !errors.As(err, &de) || de.Reason != tc.reason:
			t.Errorf("%s: err %v, want %s", tc.name, err, tc.reason)
		}
	}
}

func FuzzDecodeJSONSchema(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, '{', '}'})
	f.Add(append([]byte{0, 0, 0, 0, 1}, `{"op":"c","after":{"id":1}}`...))
	f.Add([]byte(`{"op":"c","after":{"id":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := debeziumavro.DecodeJSONSchema(b, record.Position{})
		if len(b) >= 5 && b[0] == 0 {
			want, werr := debezium.DecodeEnvelope(b[5:], record.Position{})
			if len(b) > 0 && ((err == nil) != (werr == nil) || !reflect.DeepEqual(e, want)) {
				t.Fatalf("framed decode %v, %v; JSON decode %v, %v", e, err, want, werr)
			}
		}
		var de *debezium.DecodeError
		if err != nil && !errors.Is(err, debezium.ErrTombstone) && !errors.Is(err, debezium.ErrTruncate) && !errors.As(err, &de) {
			t.Fatalf("untyped error %v", err)
		}
	})
}
