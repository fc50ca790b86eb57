package debeziumavro_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/record"
)

// textsV1 has every place an Avro payload carries text: a string, an
// optional string (a union), an array of strings and a map's keys and
// values.
var textsV1 = debeziumavro.EnvelopeSchema("dbserver1.public.texts", []debeziumavro.Column{
	{Name: "id", Type: `"string"`}, {Name: "name", Type: `"string"`, Optional: true},
	{Name: "tags", Type: `{"type":"array","items":"string"}`},
	{Name: "attrs", Type: `{"type":"map","values":"string"}`},
})

// TestDecodeBadUTF8: a string or a map key that is not UTF-8 — an invalid
// byte, a truncated sequence, the UTF-8 form of a lone surrogate — is
// refused as bad-utf8 (debezium.ReasonBadUTF8), as the JSON decoders
// refuse it (internal/utf8json), and never decodes to a row holding
// U+FFFD; valid text (U+FFFD itself included) decodes as it is.
func TestDecodeBadUTF8(t *testing.T) {
	s, err := avro.ParseWithCache(textsV1, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	dec := debeziumavro.NewDecoder(memRegistry{7: textsV1})
	pos := record.Position{Source: "texts", Partition: 0, Offset: 3}
	row := func(id string, name any, tag, key, val string) map[string]any {
		return map[string]any{"id": id, "name": name, "tags": []any{"ok", tag}, "attrs": map[string]any{key: val}}
	}
	const (
		bad       = "k\xff"         // not UTF-8 at byte 1
		truncated = "\xe2\x82"      // the first two bytes of €
		surrogate = "\xed\xa0\x80k" // U+D800 in UTF-8 (CESU-8): not UTF-8
		fine      = "Égor 🙂 \uFFFD"
	)
	for _, c := range []struct {
		name string
		row  map[string]any
		want string // "" decodes; else in the error message
	}{
		{"valid text", row(fine, fine, fine, fine, fine), ""},
		{"key column", row(bad, "n", "t", "k", "v"), "string is not valid UTF-8 (byte 1)"},
		{"optional string", row("1", surrogate, "t", "k", "v"), "string is not valid UTF-8 (byte 0)"},
		{"array item", row("1", nil, truncated, "k", "v"), "string is not valid UTF-8"},
		{"map key", row("1", "n", "t", bad, "v"), "map key is not valid UTF-8 (byte 1)"},
		{"map value", row("1", "n", "t", "k", surrogate), "string is not valid UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := debeziumavro.Encode(s, 7, map[string]any{"op": "c", "after": c.row, "source": src("texts", 1), "ts_ms": 5})
			if err != nil {
				t.Fatal(err)
			}
			ch, err := dec.Decode(context.Background(), b, pos)
			var de *debezium.DecodeError
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Decode: %v", err)
			case c.want == "":
				if ch.After["id"] != fine || ch.After["name"] != fine {
					t.Errorf("after = %v, want the text as written", ch.After)
				}
			case !errors.As(err, &de) || de.Reason != debezium.ReasonBadUTF8 || !strings.Contains(err.Error(), c.want):
				t.Errorf("Decode = %v, %v; want a bad-utf8 DecodeError saying %q", ch, err, c.want)
			case de.Pos != pos:
				t.Errorf("error at %v, want %v", de.Pos, pos)
			}
			if _, err := dec.DecodeValue(context.Background(), b); (err != nil) != (c.want != "") ||
				(err != nil && (!errors.As(err, &de) || de.Reason != debezium.ReasonBadUTF8)) {
				t.Errorf("DecodeValue: %v", err)
			}
		})
	}
}
