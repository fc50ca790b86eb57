package ingest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/internal/utf8json"
)

func TestCheckRecords(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []string
		record int
		reason string
	}{
		{"plain", []string{`{"a":1,"b":{"a":2}}`, `[1,{"a":1},{"a":1}]`, `"x"`, `{}`}, 0, ""},
		{"same name in sibling objects", []string{`{"x":{"a":1},"y":{"a":1}}`}, 0, ""},
		{"top-level duplicate", []string{`{"a":1}`, `{"a":1,"a":2}`}, 2, ingest.ReasonDuplicateField},
		{"nested duplicate", []string{`{"after":{"id":1,"name":"x","id":2}}`}, 1, ingest.ReasonDuplicateField},
		{"duplicate after a nested object", []string{`{"a":{"b":1},"a":2}`}, 1, ingest.ReasonDuplicateField},
		{"duplicate after an array", []string{`{"a":[1,{"c":1}],"b":1,"a":0}`}, 1, ingest.ReasonDuplicateField},
		{"escaped duplicate", []string{`{"id":1,"\u0069d":2}`}, 1, ingest.ReasonDuplicateField},
		{"in an array element", []string{`[{"k":1,"k":1}]`}, 1, ingest.ReasonDuplicateField},
		{"bad utf-8 in a value", []string{"{\"a\":\"\xff\"}"}, 1, ingest.ReasonBadUTF8},
		{"bad utf-8 in a key", []string{`{"a":1}`, "{\"k\xc3\":1}"}, 2, ingest.ReasonBadUTF8},
		{"lone high surrogate in a key", []string{`{"after":{"id":"\ud800k"}}`}, 1, ingest.ReasonBadUTF8},
		{"the other lone high surrogate", []string{`{"a":1}`, `{"after":{"id":"\udbffk"}}`}, 2, ingest.ReasonBadUTF8},
		{"lone low surrogate, upper case", []string{`["\uDC00"]`}, 1, ingest.ReasonBadUTF8},
		{"high then not low", []string{`{"\ud800\u0041":1}`}, 1, ingest.ReasonBadUTF8},
		{"surrogate before a duplicate", []string{`{"a":"\udfff","a":1}`}, 1, ingest.ReasonBadUTF8},
		{"a pair and escaped backslashes", []string{`{"id":"\ud83d\ude00","x":"\\ud800","y":"\\\ud800\udc00"}`}, 0, ""},
	} {
		vals := make([][]byte, len(c.values))
		for i, v := range c.values {
			vals[i] = []byte(v)
		}
		err := ingest.CheckRecords(vals)
		var re *ingest.RecordError
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.reason != "" && (!errors.As(err, &re) || re.Reason != c.reason || re.Record != c.record):
			t.Errorf("%s: %v, want record %d refused with %s", c.name, err, c.record, c.reason)
		}
	}
}

// FuzzCheckRecords: CheckRecords never panics, refuses as bad-utf8 the
// values that are not UTF-8 and only values utf8json.Check refuses, and
// otherwise, for valid JSON objects, agrees with a decode into a map about
// duplicates (a map loses one of two equal names).
func FuzzCheckRecords(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `[{"a":{"b":[1,2]},"c":null}]`, "{\"a\":\"\xff\"}", `{"\u0061":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		err := ingest.CheckRecords([][]byte{b})
		var re *ingest.RecordError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("untyped error %v", err)
		}
		if !utf8.Valid(b) {
			if re == nil || re.Reason != ingest.ReasonBadUTF8 {
				t.Fatalf("invalid UTF-8 %q: %v", b, err)
			}
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return
		}
		fields := 0
		dec := json.NewDecoder(bytes.NewReader(b))
		depth := 0
		expect := false
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			if depth == 1 && expect {
				if _, ok := tok.(string); ok {
					fields++
					expect = false
					continue
				}
			}
			switch tok {
			case json.Delim('{'), json.Delim('['):
				depth++
			case json.Delim('}'), json.Delim(']'):
				depth--
			}
			if depth == 1 {
				expect = true
			}
		}
		if re != nil && re.Reason == ingest.ReasonBadUTF8 {
			if utf8json.Check(b) == nil {
				t.Fatalf("%q: refused as %s: %v", b, re.Reason, err)
			}
			return
		}
		if fields != len(m) && re == nil {
			t.Fatalf("%q: %d top-level fields, %d distinct, but not refused", b, fields, len(m))
		}
	})
}
