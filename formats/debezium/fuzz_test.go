package debezium

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
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
		// No U+FFFD that the input does not spell (literally or as an
		// escape): escapes of unpaired surrogates were refused.
		if !bytes.Contains(b, []byte("\uFFFD")) && !bytes.Contains(bytes.ToLower(b), []byte(`\ufffd`)) {
			for _, r := range []record.Row{c.Before, c.After} {
				if hasFFFD(r) {
					t.Fatalf("Decode(%q) introduced U+FFFD: %#v", b, c)
				}
			}
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

// hasFFFD reports whether a decoded JSON value holds U+FFFD in a string
// or a field name.
func hasFFFD(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.ContainsRune(x, '\uFFFD')
	case []any:
		for _, e := range x {
			if hasFFFD(e) {
				return true
			}
		}
	case record.Row:
		return hasFFFD(map[string]any(x))
	case map[string]any:
		for k, e := range x {
			if strings.ContainsRune(k, '\uFFFD') || hasFFFD(e) {
				return true
			}
		}
	}
	return false
}

// FuzzDecodeSurrogateKeys: two user ids that differ only in one \u escape
// — a lone surrogate, half of a pair, or any other code unit — never
// decode to the same key. encoding/json reads every unpaired surrogate as
// U+FFFD, so before the bad-utf8 check "\ud800k" and "\udbffk" were one
// user.
func FuzzDecodeSurrogateKeys(f *testing.F) {
	f.Add("", "k", uint16(0xd800), uint16(0xdbff))
	f.Add("a", "", uint16(0xdc00), uint16(0xdfff))
	f.Add("", `\udc00k`, uint16(0xd800), uint16(0xd801))
	f.Add("x", "k", uint16(0xfffd), uint16(0xd800))
	f.Add(`\`, "", uint16(0x41), uint16(0xdc00))
	pos := record.Position{Source: "s"}
	f.Fuzz(func(t *testing.T, prefix, suffix string, a, b uint16) {
		// prefix and suffix are raw JSON string contents (they may hold
		// escapes of their own); only valid ones make a record.
		rec := func(u uint16) []byte {
			return []byte(fmt.Sprintf(`{"after":{"id":"%s\u%04x%s"},"op":"c"}`, prefix, u, suffix))
		}
		ra, rb := rec(a), rec(b)
		if !json.Valid(ra) || !json.Valid(rb) {
			return
		}
		ca, erra := Decode(ra, pos)
		cb, errb := Decode(rb, pos)
		for _, e := range []error{erra, errb} {
			var de *DecodeError
			if e != nil && (!errors.As(e, &de) || de.Reason != ReasonBadUTF8) {
				t.Fatalf("Decode: %v, want nil or %s", e, ReasonBadUTF8)
			}
		}
		if erra != nil || errb != nil || a == b {
			return
		}
		if ka, kb := ca.After["id"], cb.After["id"]; ka == kb {
			t.Fatalf("%s and %s both decode to id %q", ra, rb, ka)
		}
	})
}
