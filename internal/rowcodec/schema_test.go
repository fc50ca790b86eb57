package rowcodec

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/joinery/joinery/record"
)

// TestSchemaRoundTrip: every row whose columns the schema has encodes
// under it, expands to exactly the compact row with names, and is
// smaller; a row with a column outside the schema does not encode.
func TestSchemaRoundTrip(t *testing.T) {
	for _, c := range rows {
		t.Run(c.name, func(t *testing.T) {
			r := jsonRow(t, c.json)
			cols := append(slices.Collect(maps.Keys(r)), "zz_unused", "aa_unused")
			s := NewSchema(cols)
			if len(r) == 0 {
				s = NewSchema([]string{"x"})
			}
			b, ok := s.Append(nil, r)
			if !ok {
				t.Fatal("not encoded under its schema")
			}
			if !IsSchemaRow(b) || IsCompact(b) {
				t.Fatalf("tag: % x", b)
			}
			named, _ := Encode(r)
			got, err := s.Expand(b)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, named) {
				t.Fatalf("expanded % x, want % x", got, named)
			}
			if (c.name == "users" || c.name == "domains") && len(b) >= len(named)-10 {
				t.Errorf("%d bytes under the schema, %d with names", len(b), len(named))
			}
			if _, ok := NewSchema([]string{"other"}).Append(nil, r); ok && len(r) > 0 {
				t.Fatal("a row with columns outside the schema encoded")
			}
		})
	}
	users := jsonRow(t, rows[1].json)
	b, _ := NewSchema([]string{"id", "firstname", "lastname"}).Append(nil, users)
	if len(b) != 28 {
		t.Errorf("the users row takes %d bytes under its schema, want 28", len(b))
	}
}

// TestSchemaOther: a row written under one schema is refused under
// another (ErrSchema), and bad bytes are refused, never half read.
func TestSchemaOther(t *testing.T) {
	r := record.Row{"id": jsonRow(t, `{"n":7}`)["n"], "name": "x"}
	s1 := NewSchema([]string{"id", "name"})
	s2 := NewSchema([]string{"id", "name", "email"})
	b, _ := s1.Append(nil, r)
	if _, err := s2.Expand(b); !errors.Is(err, ErrSchema) || !errors.Is(err, ErrBad) {
		t.Fatalf("under another schema: %v", err)
	}
	for cut := 0; cut < len(b); cut++ {
		if _, err := s1.Expand(b[:cut]); err == nil {
			t.Fatalf("% x cut to %d bytes expanded", b, cut)
		}
	}
	if _, err := s1.Expand(append(slices.Clone(b), 0)); err == nil {
		t.Fatal("a byte more expanded")
	}
	if NewSchema(nil) != nil || NewSchema([]string{"a", "a"}).Fingerprint() != NewSchema([]string{"a"}).Fingerprint() {
		t.Fatal("NewSchema: empty or duplicate names")
	}
}

// FuzzSchemaExpand: Expand of arbitrary bytes either fails or gives a
// compact row that Decode refuses (Expand checks the framing, Decode the
// values) or that re-encodes under the schema to bytes expanding to the
// same row.
func FuzzSchemaExpand(f *testing.F) {
	s := NewSchema([]string{"domain_name", "id", "user_id", "a", "b"})
	for _, c := range rows {
		if b, ok := s.Append(nil, jsonRow(f, c.json)); ok {
			f.Add(b)
		}
	}
	b, _ := s.Append(nil, jsonRow(f, rows[2].json))
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		named, err := s.Expand(in)
		if err != nil {
			return
		}
		r, err := Decode(named)
		if err != nil {
			return
		}
		again, ok := s.Append(nil, r)
		if !ok {
			t.Fatalf("Expand(% x) decoded to %v, which does not encode", in, r)
		}
		back, err := s.Expand(again)
		if err != nil {
			t.Fatalf("% x: re-encoded % x does not expand: %v", in, again, err)
		}
		if got, err := Decode(back); err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("% x: re-encoded % x decodes to %v (%v), want %v", in, again, got, err, r)
		}
	})
}
