package timers

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSetMatchesSortedUnique: a Set holds what a sorted, deduplicated slice
// of the same adds and deletes holds, and pops its due timers in order.
func TestSetMatchesSortedUnique(t *testing.T) {
	seed := uint64(rand.Int64())
	r := rand.New(rand.NewPCG(seed, 1))
	var s Set
	want := map[int64]bool{}
	for i := range 2000 {
		ts := int64(r.IntN(50))
		if r.IntN(3) == 0 {
			if got := s.Delete(ts); got != want[ts] {
				t.Fatalf("seed %d step %d: Delete(%d) = %v, want %v", seed, i, ts, got, want[ts])
			}
			delete(want, ts)
		} else {
			if got := s.Add(ts); got == want[ts] {
				t.Fatalf("seed %d step %d: Add(%d) = %v, want %v", seed, i, ts, got, !want[ts])
			}
			want[ts] = true
		}
		var exp []int64
		for k := range want {
			exp = append(exp, k)
		}
		slices.Sort(exp)
		if !slices.Equal(s.Timestamps(), exp) && !(len(exp) == 0 && s.Len() == 0) {
			t.Fatalf("seed %d step %d: %v, want %v", seed, i, s.Timestamps(), exp)
		}
	}
	var popped []int64
	for {
		ts, ok := s.PopDue(25)
		if !ok {
			break
		}
		popped = append(popped, ts)
	}
	if !slices.IsSorted(popped) || (len(popped) > 0 && popped[len(popped)-1] > 25) {
		t.Fatalf("popped %v", popped)
	}
	if n, ok := s.Next(); ok && n <= 25 {
		t.Fatalf("a due timer %d stayed", n)
	}
}
