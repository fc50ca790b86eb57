package timers

import (
	"flag"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/joinery/joinery/record"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests; 0 picks one")

// newRand returns a seeded source and logs the seed on failure.
func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with -seed=%d", seed)
		}
	})
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// TestTimerRandomOracle drives a TimerService and a sorted slice with the
// same random operations and compares everything observable.
func TestTimerRandomOracle(t *testing.T) {
	r := newRand(t)
	s := NewTimerService()
	var oracle []Timer // sorted by compareTimers, no duplicates
	wm := int64(-50)
	for i := range 20_000 {
		key := record.Key("k" + strconv.Itoa(r.IntN(30)))
		ts := wm + int64(r.IntN(200)) - 20
		switch x := r.IntN(100); {
		case x < 50:
			got := s.Register(key, ts)
			j, found := slices.BinarySearchFunc(oracle, Timer{key, ts}, compareTimers)
			if !found {
				oracle = slices.Insert(oracle, j, Timer{key, ts})
			}
			if got != !found {
				t.Fatalf("op %d: Register(%s,%d) = %v, want %v", i, key, ts, got, !found)
			}
		case x < 70:
			// Delete an existing timer most of the time.
			if len(oracle) > 0 && r.IntN(4) > 0 {
				o := oracle[r.IntN(len(oracle))]
				key, ts = o.Key, o.Ts
			}
			got := s.Delete(key, ts)
			j, found := slices.BinarySearchFunc(oracle, Timer{key, ts}, compareTimers)
			if found {
				oracle = slices.Delete(oracle, j, j+1)
			}
			if got != found {
				t.Fatalf("op %d: Delete(%s,%d) = %v, want %v", i, key, ts, got, found)
			}
		case x < 95:
			wm += int64(r.IntN(30))
			got := s.Advance(wm)
			n := 0
			for n < len(oracle) && oracle[n].Ts <= wm {
				n++
			}
			want := slices.Clone(oracle[:n])
			oracle = oracle[n:]
			if len(want) == 0 {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Fatalf("op %d: Advance(%d) = %v, want %v", i, wm, got, want)
			}
		default:
			var want []int64
			for _, o := range oracle {
				if o.Key == key {
					want = append(want, o.Ts)
				}
			}
			if got := s.Pending(key); !slices.Equal(got, want) {
				t.Fatalf("op %d: Pending(%s) = %v, want %v", i, key, got, want)
			}
		}
		if s.Len() != len(oracle) {
			t.Fatalf("op %d: Len() = %d, want %d", i, s.Len(), len(oracle))
		}
		if i%1000 == 0 {
			if got := s.Timers(); !slices.Equal(got, oracle) && len(oracle) > 0 {
				t.Fatalf("op %d: Timers() = %v, want %v", i, got, oracle)
			}
			// Snapshot and restore mid-run; the rest of the run uses the copy.
			var d TimerService
			if err := d.Decode(s.Encode()); err != nil {
				t.Fatalf("op %d: Decode(Encode()) = %v", i, err)
			}
			s = &d
		}
	}
}

// TestWatermarkRandomOracle checks Watermarks against a brute-force model:
// per partition the max timestamp and last event time; the combined value is
// the running max of the min (or max) over non-idle partitions.
func TestWatermarkRandomOracle(t *testing.T) {
	for _, combine := range []Combine{CombineMin, CombineMax} {
		t.Run(combine.String(), func(t *testing.T) {
			r := newRand(t)
			cfg := WatermarkConfig{MaxOutOfOrderness: 7, IdleTimeout: 50 * time.Millisecond, Combine: combine}
			w, err := NewWatermarks(cfg)
			if err != nil {
				t.Fatal(err)
			}
			type model struct {
				maxTs    int64
				lastSeen time.Time
				idle     bool
			}
			parts := map[string]*model{}
			want := int64(math.MinInt64)
			now := t0
			for i := range 5_000 {
				now = now.Add(time.Duration(r.IntN(10)) * time.Millisecond)
				if r.IntN(5) == 0 {
					w.Advance(now)
					for _, p := range parts {
						if now.Sub(p.lastSeen) >= cfg.IdleTimeout {
							p.idle = true
						}
					}
				} else {
					// Skewed partitions: p0 is busy, p3 rare.
					name := "p" + strconv.Itoa(min(r.IntN(6), 3))
					ts := int64(i) - int64(r.IntN(40))
					w.Observe(name, ts, now)
					p := parts[name]
					if p == nil {
						p = &model{maxTs: math.MinInt64}
						parts[name] = p
					}
					p.maxTs = max(p.maxTs, ts)
					p.lastSeen = now
					p.idle = false
				}
				found, c := false, int64(0)
				for _, p := range parts {
					if p.idle {
						continue
					}
					pw := p.maxTs - cfg.MaxOutOfOrderness - 1
					if !found || (combine == CombineMin && pw < c) || (combine == CombineMax && pw > c) {
						c, found = pw, true
					}
				}
				if found {
					want = max(want, c)
				}
				if got := w.Current(); got != want {
					t.Fatalf("step %d: Current() = %d, want %d", i, got, want)
				}
				if h := w.Holder(); found != (h != "") {
					t.Fatalf("step %d: Holder() = %q with active partitions %v", i, h, found)
				}
			}
		})
	}
}
