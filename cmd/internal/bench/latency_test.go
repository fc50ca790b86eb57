package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLatencyOpenLoop: the open-loop run gives sane percentiles (0 < p50
// <= p99 <= max) over the outputs it counted, and the same result as the
// baseline, for a changelog join and for window outputs. Correctness only:
// no assertion on the figures themselves.
func TestLatencyOpenLoop(t *testing.T) {
	for _, name := range []string{"cdc", "q8", "q9"} {
		t.Run(name, func(t *testing.T) {
			w, err := Find(name)
			if err != nil {
				t.Fatal(err)
			}
			in := w.Generate(Scales["tiny"], 1)
			want := w.Baseline(in.Lines, func(int) {}).Check
			lat, res := OpenLoop(w.Engine(), in.Lines, 50_000)
			if !res.Check.Equal(want) {
				t.Errorf("open-loop result %v, baseline %v", res.Check, want)
			}
			if lat.Outputs <= 0 {
				t.Fatalf("no outputs measured: %+v", lat)
			}
			if !(lat.P50Ms > 0 && lat.P50Ms <= lat.P99Ms && lat.P99Ms <= lat.MaxMs) {
				t.Errorf("percentiles not ordered or zero: %+v", lat)
			}
			if lat.Rate != 50_000 || lat.Achieved <= 0 {
				t.Errorf("rates: %+v", lat)
			}
		})
	}
}

// TestLatencyPercentiles: weighted percentiles over known samples.
func TestLatencyPercentiles(t *testing.T) {
	var l latencies
	for i := 1; i <= 98; i++ {
		l.add(time.Duration(i)*time.Millisecond, 1)
	}
	l.add(500*time.Millisecond, 2) // one event with two outputs
	var lat Latency
	l.summary(&lat)
	if lat.Outputs != 100 || lat.P50Ms != 50 || lat.P99Ms != 500 || lat.MaxMs != 500 {
		t.Errorf("got %+v, want 100 outputs, p50 50, p99 500, max 500", lat)
	}
}

// TestLatencyStampWriter: the node's stdout is split into lines, each with
// the time of the write that completed it and the source offset in its id,
// also when a line spans two writes, and two of the writer's blocks.
func TestLatencyStampWriter(t *testing.T) {
	var w stampWriter
	line := func(off int) string {
		return fmt.Sprintf(`{"id":"in/0@%d/7/0/0","op":"+I","pk":[7,1],"row":{"x":1}}`, off) + "\n"
	}
	a, b, c := line(3), line(12), line(20)
	big := strings.Repeat("x", stampBlock-len(a)-len(b)-5) + "\n" // fills the first block but for 5 bytes
	w.Write([]byte(a + b[:10]))
	w.Write([]byte(b[10:]))
	w.Write([]byte(big + c[:10]))
	w.Write([]byte(c[10:]))
	if len(w.blocks) != 2 {
		t.Fatalf("%d blocks, want 2", len(w.blocks))
	}
	var offs []int64
	var ats []time.Time
	var lens []int
	w.lines(func(l []byte, at time.Time, off int64) {
		offs, ats, lens = append(offs, off), append(ats, at), append(lens, len(l))
	})
	if !slices.Equal(offs, []int64{3, 12, 0, 20}) || !slices.Equal(lens, []int{len(a) - 1, len(b) - 1, len(big) - 1, len(c) - 1}) {
		t.Fatalf("offsets %v (lengths %v), want [3 12 0 20]", offs, lens)
	}
	for i, want := range []int{0, 1, 2, 3} {
		if !ats[i].Equal(w.base.Add(w.chunks[want].at)) {
			t.Errorf("line %d: time %v, want write %d's", i, ats[i], want)
		}
	}
	if got := outputOffset([]byte(`{"op":"+I"}`)); got != 0 {
		t.Errorf("offset of a line without id: %d", got)
	}
}
