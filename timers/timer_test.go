package timers

import (
	"slices"
	"strconv"
	"testing"

	"github.com/joinery/joinery/record"
)

// op is one TimerService call: r registers, d deletes, a advances to ts.
type op struct {
	kind byte
	key  record.Key
	ts   int64
}

func TestTimerService(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ops       []op
		wantFired [][]Timer // one entry per 'a' op
		wantLen   int
	}{
		{
			name: "fires in timestamp order, ties by key",
			ops: []op{
				{'r', "b", 20}, {'r', "a", 30}, {'r', "c", 10}, {'r', "a", 20}, {'r', "b", 5},
				{'a', "", 20},
			},
			wantFired: [][]Timer{{{"b", 5}, {"c", 10}, {"a", 20}, {"b", 20}}},
			wantLen:   1,
		},
		{
			name: "dedups the same key and ts",
			ops: []op{
				{'r', "k", 10}, {'r', "k", 10}, {'r', "k", 11}, {'r', "j", 10},
				{'a', "", 100},
			},
			wantFired: [][]Timer{{{"j", 10}, {"k", 10}, {"k", 11}}},
		},
		{
			name: "delete",
			ops: []op{
				{'r', "k", 10}, {'r', "k", 20}, {'r', "j", 15},
				{'d', "k", 10}, {'d', "k", 99}, {'d', "x", 10},
				{'a', "", 100},
			},
			wantFired: [][]Timer{{{"j", 15}, {"k", 20}}},
		},
		{
			name: "watermark boundary is inclusive",
			ops: []op{
				{'r', "k", 10}, {'r', "k", 11},
				{'a', "", 9}, {'a', "", 10}, {'a', "", 10}, {'a', "", 11},
			},
			wantFired: [][]Timer{nil, {{"k", 10}}, nil, {{"k", 11}}},
		},
		{
			name: "timer below a passed watermark fires on the next advance",
			ops: []op{
				{'a', "", 100}, {'r', "k", 50}, {'a', "", 100},
			},
			wantFired: [][]Timer{nil, {{"k", 50}}},
		},
		{
			name: "re-register after fire",
			ops: []op{
				{'r', "k", 10}, {'a', "", 10}, {'r', "k", 10}, {'a', "", 10},
			},
			wantFired: [][]Timer{{{"k", 10}}, {{"k", 10}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s TimerService // the zero value is usable
			var fired [][]Timer
			for _, o := range tc.ops {
				switch o.kind {
				case 'r':
					s.Register(o.key, o.ts)
				case 'd':
					s.Delete(o.key, o.ts)
				case 'a':
					fired = append(fired, s.Advance(o.ts))
				}
			}
			if !slices.EqualFunc(fired, tc.wantFired, slices.Equal) {
				t.Fatalf("fired %v, want %v", fired, tc.wantFired)
			}
			if s.Len() != tc.wantLen {
				t.Fatalf("Len() = %d, want %d", s.Len(), tc.wantLen)
			}
		})
	}
}

func TestTimerRegisterDeleteReport(t *testing.T) {
	s := NewTimerService()
	if !s.Register("k", 1) || s.Register("k", 1) {
		t.Fatal("Register should report true then false")
	}
	if !s.Delete("k", 1) || s.Delete("k", 1) {
		t.Fatal("Delete should report true then false")
	}
	if s.Len() != 0 || s.Pending("k") != nil {
		t.Fatalf("not empty: Len %d Pending %v", s.Len(), s.Pending("k"))
	}
	if _, ok := s.Next(); ok {
		t.Fatal("Next on empty service reported a timer")
	}
}

func TestTimerPendingAndNext(t *testing.T) {
	s := NewTimerService()
	for _, ts := range []int64{30, -5, 10} {
		s.Register("k", ts)
	}
	s.Register("j", 7)
	if got, want := s.Pending("k"), []int64{-5, 10, 30}; !slices.Equal(got, want) {
		t.Fatalf("Pending(k) = %v, want %v", got, want)
	}
	if got := s.Pending("none"); got != nil {
		t.Fatalf("Pending(none) = %v", got)
	}
	if n, ok := s.Next(); !ok || n != (Timer{"k", -5}) {
		t.Fatalf("Next() = %v, %v", n, ok)
	}
	s.Advance(10)
	if got, want := s.Pending("k"), []int64{30}; !slices.Equal(got, want) {
		t.Fatalf("Pending(k) after Advance = %v, want %v", got, want)
	}
	if got := s.Pending("j"); got != nil {
		t.Fatalf("Pending(j) after Advance = %v", got)
	}
	s.Reset()
	if s.Len() != 0 || s.Pending("k") != nil {
		t.Fatal("Reset left timers")
	}
}

func BenchmarkTimerRegisterAdvance(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run("pending="+strconv.Itoa(n), func(b *testing.B) {
			keys := make([]record.Key, 1024)
			for i := range keys {
				keys[i] = record.Key("key-" + strconv.Itoa(i))
			}
			s := NewTimerService()
			// Keep n timers pending: each iteration registers one timer n
			// ms ahead and advances the watermark by one ms.
			for i := range n {
				s.Register(keys[i%len(keys)], int64(i))
			}
			b.ReportAllocs()
			i := n
			for b.Loop() {
				s.Register(keys[i%len(keys)], int64(i))
				s.Advance(int64(i - n))
				i++
			}
			b.ReportMetric(float64(s.Len()), "pending")
		})
	}
}
