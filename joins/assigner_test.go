package joins

import (
	"math"
	"testing"
)

// TestJoinWindowStartExtremes: WindowStart agrees with Flink's formula where
// that does not overflow, and near the ends of the int64 range it neither
// wraps around nor makes Assign loop (a sliding assigner once walked down
// from a wrapped start of math.MaxInt64 for ts = math.MinInt64).
func TestJoinWindowStartExtremes(t *testing.T) {
	for ts := int64(-20); ts <= 20; ts++ {
		for _, c := range []struct{ offset, size int64 }{{0, 2}, {1, 2}, {-1, 2}, {3, 5}, {-4, 5}, {0, 1}} {
			want := ts - ((ts-c.offset)%c.size+c.size)%c.size
			if got := WindowStart(ts, c.offset, c.size); got != want {
				t.Fatalf("WindowStart(%d, %d, %d) = %d, want %d", ts, c.offset, c.size, got, want)
			}
		}
	}
	for _, c := range []struct{ ts, offset, size, want int64 }{
		{math.MinInt64, 1, 2, math.MinInt64},
		{math.MinInt64, 0, 2, math.MinInt64},
		{math.MaxInt64, -1, 2, math.MaxInt64},
		{math.MaxInt64, 0, 2, math.MaxInt64 - 1},
		{math.MaxInt64, 0, math.MaxInt64, math.MaxInt64},
		{math.MinInt64 + 1, math.MaxInt64 - 1, math.MaxInt64, math.MinInt64},
	} {
		if got := WindowStart(c.ts, c.offset, c.size); got != c.want {
			t.Errorf("WindowStart(%d, %d, %d) = %d, want %d", c.ts, c.offset, c.size, got, c.want)
		}
	}
	for _, a := range []Assigner{Sliding(3, 2, 1), Sliding(2, 1, 0), Sliding(5, 2, -1), Tumbling(2, 1)} {
		for _, ts := range []int64{math.MinInt64, math.MinInt64 + 1, math.MaxInt64, math.MaxInt64 - 1} {
			for _, w := range a.Assign(ts, nil) {
				if w.Start > ts || w.End < w.Start {
					t.Errorf("%v.Assign(%d): window %v", a, ts, w)
				}
			}
		}
	}
}
