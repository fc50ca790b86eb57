package joins

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// needs returns the distinct watermarks a join's waits name, ascending.
func needs(ws []Wait) []int64 {
	var ns []int64
	for _, w := range ws {
		ns = append(ns, w.Needs)
	}
	slices.Sort(ns)
	return slices.Compact(ns)
}

// TestPendingMatchesTimers drives random streams through the window,
// interval and time-bounded joins and checks after every step that what
// Pending says the key waits for is exactly the set of its pending timers:
// `key why` never invents a wait and never hides one.
func TestPendingMatchesTimers(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	makers := map[string]func() Timed{
		"tumbling":         func() Timed { return NewWindowJoin(windowSpec(Tumbling(3, 0), 0)) },
		"sliding+lateness": func() Timed { return NewWindowJoin(windowSpec(Sliding(4, 2, 0), 2)) },
		"session":          func() Timed { return NewWindowJoin(windowSpec(Session(2), 1)) },
		"interval": func() Timed {
			return NewInterval(&IntervalSpec{Left: "orange", Right: "green", Lower: -2, Upper: 1})
		},
		"full outer": func() Timed {
			return NewTimeBounded(&TimeBoundedSpec{Type: TimedFullOuter, Left: "orange", Right: "green", Lower: -1, Upper: 3})
		},
	}
	for name, fresh := range makers {
		t.Run(name, func(t *testing.T) {
			for trial := range 30 {
				d := newDriver(t, fresh)
				for _, s := range randomStream(rng, 40, 6) {
					if s.advance {
						d.advance(s.wm)
					} else {
						d.el(s.side, s.ts, named(s.name))
					}
					got := needs(d.j.(Explainer).Pending(-1))
					if want := sortedTimers(d); !slices.Equal(got, want) {
						t.Fatalf("trial %d: pending needs %v, timers %v\n%s", trial, got, want, d.j.Snapshot())
					}
				}
			}
		})
	}
}

func TestPendingDescribes(t *testing.T) {
	d := windowDriver(t, windowSpec(Tumbling(2, 0), 0))
	d.script(E(lt, 0, "o0"), E(lt, 1, "o1"), E(rt, 1, "g1"), E(lt, 4, "o4"))
	ws := d.j.(Explainer).Pending(1)
	if len(ws) != 1 || ws[0].Needs != 1 || ws[0].What != "window [0,2) fires: 2 left, 1 right" {
		t.Fatalf("window waits %+v", ws)
	}

	d = temporalDriver(t, TimedLeftOuter)
	d.script(E(rt, 2, "v2"), E(lt, 5, "p5"), E(lt, 1, "p1"))
	ws = d.j.(Explainer).Pending(-1)
	if len(ws) != 2 || ws[0].Needs != 2 || !strings.Contains(ws[0].What, "probe at 1") || !strings.Contains(ws[0].What, "no version") ||
		ws[1].Needs != 6 || !strings.Contains(ws[1].What, "a version is there") {
		t.Fatalf("temporal waits %+v", ws)
	}

	d = outerDriver(t, &TimeBoundedSpec{Type: TimedLeftOuter, Left: "orange", Right: "green", Lower: 0, Upper: 5})
	d.script(E(lt, 10, "v"))
	ws = d.j.(Explainer).Pending(-1)
	if len(ws) != 1 || ws[0].Needs != 16 || !strings.Contains(ws[0].What, "emitted with nulls") {
		t.Fatalf("outer waits %+v", ws)
	}
	if ws := NewTemporalLatest(&TemporalSpec{Left: "a", Right: "b"}).Pending(-1); len(ws) != 0 {
		t.Fatalf("latest waits %+v", ws)
	}
}
