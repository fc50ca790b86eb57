package timers

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

func TestTimerEncodeRoundTrip(t *testing.T) {
	s := NewTimerService()
	for _, tm := range []Timer{{"b", 3}, {"a", 3}, {"", -1 << 62}, {"ü/ключ", 1 << 62}, {"a", 0}} {
		s.Register(tm.Key, tm.Ts)
	}
	b := s.Encode()
	if b[0] != EncodingVersion {
		t.Fatalf("first byte %d, want version %d", b[0], EncodingVersion)
	}
	var d TimerService
	if err := d.Decode(b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Timers(), s.Timers()) {
		t.Fatalf("decoded %v, want %v", d.Timers(), s.Timers())
	}
	if !bytes.Equal(d.Encode(), b) {
		t.Fatal("re-encoding differs")
	}
	// The decoded service is fully usable.
	if got := d.Advance(3); !slices.Equal(got, []Timer{{"", -1 << 62}, {"a", 0}, {"a", 3}, {"b", 3}}) {
		t.Fatalf("Advance after Decode = %v", got)
	}
	if !d.Delete("ü/ключ", 1<<62) || d.Len() != 0 {
		t.Fatal("Delete after Decode failed")
	}
	var empty TimerService
	if err := empty.Decode(NewTimerService().Encode()); err != nil || empty.Len() != 0 {
		t.Fatalf("empty round trip: %v, Len %d", err, empty.Len())
	}
}

func TestTimerDecodeErrors(t *testing.T) {
	valid := func(ts ...Timer) []byte {
		s := NewTimerService()
		for _, t := range ts {
			s.Register(t.Key, t.Ts)
		}
		return s.Encode()
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"unknown version", []byte{2, 0}, ErrUnknownVersion},
		{"no count", []byte{1}, ErrCorrupt},
		{"count too large", []byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0}, ErrCorrupt},
		{"truncated key", valid(Timer{"abc", 1})[:5], ErrCorrupt},
		{"trailing bytes", append(valid(Timer{"a", 1}), 0), ErrCorrupt},
		{"out of order", []byte{1, 2, 4, 1, 'a', 2, 1, 'a'}, ErrCorrupt},
		{"duplicate", []byte{1, 2, 2, 1, 'a', 2, 1, 'a'}, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewTimerService()
			s.Register("keep", 1)
			err := s.Decode(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode(%x) = %v, want %v", tc.in, err, tc.want)
			}
			if got := s.Timers(); !slices.Equal(got, []Timer{{"keep", 1}}) {
				t.Fatalf("failed Decode changed the service: %v", got)
			}
		})
	}
}

func FuzzTimerDecode(f *testing.F) {
	seeds := []*TimerService{NewTimerService()}
	s := NewTimerService()
	s.Register("k", 1)
	s.Register("k", -1)
	s.Register("", 0)
	s.Register("users/42", 1<<40)
	seeds = append(seeds, s)
	for _, s := range seeds {
		f.Add(s.Encode())
	}
	for _, b := range [][]byte{nil, {0}, {1}, {2, 0}, {1, 1, 0, 0}, {1, 0x80, 0x00}, {1, 2, 4, 1, 'a', 2, 1, 'a'}} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s TimerService
		if err := s.Decode(b); err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("Decode returned untyped error %v", err)
			}
			return
		}
		enc := s.Encode()
		var d TimerService
		if err := d.Decode(enc); err != nil {
			t.Fatalf("Decode(Encode()) = %v; encoded %x", err, enc)
		}
		if !slices.Equal(s.Timers(), d.Timers()) {
			t.Fatalf("round trip differs:\n %v\n %v", s.Timers(), d.Timers())
		}
		if !bytes.Equal(d.Encode(), enc) {
			t.Fatal("encoding is not canonical")
		}
		// The decoded index must agree with its contents.
		for _, tm := range s.Timers() {
			if !slices.Contains(s.Pending(tm.Key), tm.Ts) {
				t.Fatalf("Pending(%q) misses %d", tm.Key, tm.Ts)
			}
		}
		n := s.Len()
		for _, tm := range s.Timers() {
			if !s.Delete(tm.Key, tm.Ts) {
				t.Fatalf("Delete(%v) failed after Decode", tm)
			}
		}
		if s.Len() != 0 || n != d.Len() {
			t.Fatalf("Len after deleting all = %d", s.Len())
		}
	})
}
