package debezium

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/joinery/joinery/record"
)

// TestDecodeMap: DecodeMap of a parsed bare envelope is DecodeEnvelope of
// its JSON, for accepted and rejected events alike.
func TestDecodeMap(t *testing.T) {
	pos := record.Position{Source: "s", Offset: 1}
	for _, line := range []string{
		`{"op":"c","after":{"id":1},"source":{"table":"t","lsn":5},"ts_ms":2}`,
		`{"op":"u","before":{"id":1},"after":{"id":1,"v":"x"},"source":{"file":"b.1","pos":3,"row":0,"table":"t"}}`,
		`{"op":"d","before":{"id":1}}`,
		`{"op":"t","source":{"table":"t"}}`,
		`{"op":"x","after":{"id":1}}`,
		`{"op":"c"}`,
		`{"op":"c","after":[1]}`,
		`{"op":"c","after":{},"ts_ms":"late"}`,
		`{"after":{}}`,
	} {
		d := json.NewDecoder(bytes.NewReader([]byte(line)))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		got, gerr := DecodeMap(m, pos)
		want, werr := DecodeEnvelope([]byte(line), pos)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gerr, werr) {
			t.Errorf("%s: DecodeMap = %+v, %v; DecodeEnvelope = %+v, %v", line, got, gerr, want, werr)
		}
	}
	if _, err := DecodeMap(nil, pos); !errors.Is(err, ErrTombstone) {
		t.Errorf("DecodeMap(nil) = %v, want ErrTombstone", err)
	}
}
