package stateparts

import (
	"bytes"
	"errors"
	"testing"
)

func TestPackUnpack(t *testing.T) {
	cases := []struct {
		name  string
		base  []byte
		parts []Part
	}{
		{"base only", []byte("b"), nil},
		{"empty base", nil, []Part{{"a", []byte("1")}}},
		{"sorted on pack", []byte("\x01{}"), []Part{{"r:2", []byte("two")}, {"l", []byte("{}")}, {"r:1", []byte("\x00\xff")}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := Pack(tc.base, tc.parts)
			if !IsPacked(b) {
				t.Fatalf("IsPacked(%q) = false", b)
			}
			base, parts, err := Unpack(b)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(base, tc.base) || len(parts) != len(tc.parts) {
				t.Fatalf("Unpack = %q %v, want %q and %d parts", base, parts, tc.base, len(tc.parts))
			}
			for i := 1; i < len(parts); i++ {
				if parts[i-1].Name >= parts[i].Name {
					t.Fatalf("parts out of order: %v", parts)
				}
			}
			if again := Pack(base, parts); !bytes.Equal(again, b) {
				t.Fatalf("Pack(Unpack(b)) = %q, want %q", again, b)
			}
		})
	}
}

func TestUnpackCorrupt(t *testing.T) {
	for _, b := range [][]byte{
		nil, []byte("\x01{}"), {Marker}, {Marker, 5, 'a'},
		{Marker, 0, 1, 'a'},                         // a name without a value
		{Marker, 0, 1, 'b', 1, 'x', 1, 'a', 1, 'y'}, // out of order
		{Marker, 0, 1, 'a', 0},                      // an empty value
		{Marker, 0, 0, 1, 'x'},                      // an empty name
	} {
		if _, _, err := Unpack(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Unpack(%q) = %v, want ErrCorrupt", b, err)
		}
	}
}

func TestMergeApply(t *testing.T) {
	a := []Part{{"x", []byte("1")}, {"y", []byte("2")}, {"x", []byte("1'")}}
	b := []Part{{"y", nil}, {"z", []byte("3")}}
	m := Merge(a, b)
	if len(m) != 3 || string(m[0].Value) != "1'" || m[1].Value != nil || string(m[2].Value) != "3" {
		t.Fatalf("Merge = %q", m)
	}
	st := map[string][]byte{"y": []byte("old"), "w": []byte("kept")}
	Apply(st, m)
	if len(st) != 3 || string(st["x"]) != "1'" || string(st["w"]) != "kept" || st["y"] != nil {
		t.Fatalf("Apply = %q", st)
	}
}
