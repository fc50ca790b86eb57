package joins

import (
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

func intervalDriver(t testing.TB, spec *IntervalSpec) *tdriver {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return newDriver(t, func() Timed { return NewInterval(spec) })
}

func TestJoinIntervalBounds(t *testing.T) {
	// seed flink-joining: orangeElem.ts + lowerBound <= greenElem.ts <=
	// orangeElem.ts + upperBound, inclusive by default, lowerBoundExclusive
	// and upperBoundExclusive exclude a bound, bounds may be negative; the
	// pair gets the larger of the two timestamps.
	rights := func() []wstep {
		var s []wstep
		for ts := int64(6); ts <= 14; ts++ {
			s = append(s, E(rt, ts, "g"+string(rune('0'+ts-6))))
		}
		return s
	}
	for _, c := range []struct {
		name         string
		lower, upper int64
		lex, uex     bool
		want         []string // right times joined with orange at 10 (g0 is 6)
	}{
		{"seed [-2, 1]", -2, 1, false, false, []string{"10 o,g2", "10 o,g3", "10 o,g4", "11 o,g5"}},
		{"lower exclusive", -2, 1, true, false, []string{"10 o,g3", "10 o,g4", "11 o,g5"}},
		{"upper exclusive", -2, 1, false, true, []string{"10 o,g2", "10 o,g3", "10 o,g4"}},
		{"both exclusive", -2, 1, true, true, []string{"10 o,g3", "10 o,g4"}},
		{"negative bounds", -3, -1, false, false, []string{"10 o,g1", "10 o,g2", "10 o,g3"}},
		{"positive bounds", 1, 3, false, false, []string{"11 o,g5", "12 o,g6", "13 o,g7"}},
		{"zero width", 0, 0, false, false, []string{"10 o,g4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := &IntervalSpec{Left: "orange", Right: "green", Lower: c.lower, Upper: c.upper, LowerExclusive: c.lex, UpperExclusive: c.uex}
			// Left first: emitted as each right arrives.
			d := intervalDriver(t, spec)
			d.script(E(lt, 10, "o"))
			d.script(rights()...)
			eqLines(t, "left first", fmtPairs(t, "orange", "green", d.take()), c.want)
			// Rights first: emitted at once when the left arrives.
			d = intervalDriver(t, spec)
			d.script(rights()...)
			if len(d.out) != 0 {
				t.Fatal("output without a left element")
			}
			d.script(E(lt, 10, "o"))
			eqLines(t, "rights first", fmtPairs(t, "orange", "green", d.take()), c.want)
		})
	}
}

func TestJoinIntervalSpecValidate(t *testing.T) {
	for _, c := range []struct {
		spec IntervalSpec
		want string
	}{
		{IntervalSpec{Left: "a", Right: "b", Lower: 2, Upper: 1}, "lower: must be <= upper (2 > 1)"},
		{IntervalSpec{Left: "a", Right: "b", Lower: 1, Upper: 1, LowerExclusive: true}, "upper_exclusive: the exclusive bounds (1, 1) leave no time"},
		{IntervalSpec{Left: "a", Right: "b", Lower: 1, Upper: 2, LowerExclusive: true, UpperExclusive: true}, "leave no time"},
		{IntervalSpec{Left: "", Right: "b"}, "left: must not be empty"},
	} {
		if err := c.spec.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	if err := (&IntervalSpec{Left: "a", Right: "b", Lower: -2, Upper: -2}).Validate(); err != nil {
		t.Errorf("negative equal bounds: %v", err)
	}
}

func TestJoinIntervalLateAndCleanup(t *testing.T) {
	spec := &IntervalSpec{Left: "orange", Right: "green", Lower: -2, Upper: 1}
	d := intervalDriver(t, spec)
	// An element below the watermark is late; one at the watermark is not.
	d.script(W(10), E(lt, 9, "o9"), E(lt, 10, "o10"), E(rt, 10, "g10"))
	eqLines(t, "late", fmtLate(d.late), []string{"9 o9 behind-watermark"})
	eqLines(t, "outputs", fmtPairs(t, "orange", "green", d.take()), []string{"10 o10,g10"})
	// Left 10 can match rights up to 11: dropped once the watermark passes 11
	// (timer 12). Right 10 can match lefts up to 12: dropped after 12 (timer 13).
	if !slices.Equal(sortedTimers(d), []int64{12, 13}) {
		t.Fatalf("timers %v, want [12 13]", sortedTimers(d))
	}
	d.script(W(11), E(rt, 11, "g11"))
	eqLines(t, "before cleanup", fmtPairs(t, "orange", "green", d.take()), []string{"11 o10,g11"})
	d.script(W(12))
	if got := string(d.j.Snapshot()); strings.Contains(got, "o10") || !strings.Contains(got, "g10") {
		t.Fatalf("after 12: %q", got)
	}
	d.script(E(lt, 12, "o12"))
	eqLines(t, "right 10 still matches left 12", fmtPairs(t, "orange", "green", d.take()), []string{"12 o12,g10", "12 o12,g11"})
	d.script(W(100))
	if !d.j.Empty() {
		t.Fatalf("state %q", d.j.Snapshot())
	}
	// An element whose range is already behind the watermark matches the
	// buffer but is not buffered.
	d = intervalDriver(t, &IntervalSpec{Left: "orange", Right: "green", Lower: 3, Upper: 5})
	d.script(E(rt, 20, "g"), W(19), E(lt, 15, "late-o"), W(19))
	d.j.OnElement(Element{Side: lt, Ts: 19, Row: named("o")}, 25, &d.fx)
	if len(d.fx.Out) != 0 || len(d.fx.SetTimers) != 0 {
		t.Fatalf("expired element: %+v", d.fx)
	}
	d.fx.Reset()
	d = intervalDriver(t, &IntervalSpec{Left: "orange", Right: "green", Lower: -5, Upper: -3})
	d.script(E(rt, 17, "g"), W(20), E(lt, 20, "o"))
	eqLines(t, "expired left matches the buffer", fmtPairs(t, "orange", "green", d.take()), []string{"20 o,g"})
	if strings.Contains(string(d.j.Snapshot()), `"o"`) {
		t.Fatalf("expired left buffered: %q", d.j.Snapshot())
	}
}

func TestJoinIntervalSnapshot(t *testing.T) {
	spec := &IntervalSpec{Left: "orange", Right: "green", Lower: -2, Upper: 1}
	d := intervalDriver(t, spec)
	d.script(E(lt, 5, "a"), E(rt, 4, "b"))
	want := "\x01I" + `{"l":[{"t":5,"p":{"source":"left","partition":0,"offset":0},"r":{"n":"a"}}],` +
		`"r":[{"t":4,"p":{"source":"right","partition":0,"offset":0},"r":{"n":"b"}}]}`
	if got := string(d.j.Snapshot()); got != want {
		t.Fatalf("snapshot\n%q\nwant\n%q", got, want)
	}
	checkRestoreErrors(t, d.j, "\x01I"+`{"l":[{"t":5},{"t":4}]}`)
}

func FuzzIntervalRestore(f *testing.F) {
	spec := &IntervalSpec{Left: "orange", Right: "green", Lower: -2, Upper: 1}
	d := intervalDriver(f, spec)
	d.script(E(lt, 5, "a"), E(rt, 4, "b"), E(rt, 9, "c"))
	f.Add(d.j.Snapshot())
	f.Add([]byte("\x01I{\"l\":null,\"r\":[]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRestore(t, func() Timed { return NewInterval(spec) }, b)
	})
}

// intervalMatch is the oracle's condition, with the bounds as written.
func intervalMatch(l, r, lower, upper int64, lex, uex bool) bool {
	lowOK := r >= l+lower
	if lex {
		lowOK = r > l+lower
	}
	highOK := r <= l+upper
	if uex {
		highOK = r < l+upper
	}
	return lowOK && highOK
}

func TestJoinIntervalOracle(t *testing.T) {
	seed := rand.Int63()
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	rng := rand.New(rand.NewSource(seed))
	for iter := 0; iter < 200; iter++ {
		lower := int64(rng.Intn(11) - 5)
		spec := &IntervalSpec{Left: "orange", Right: "green", Lower: lower, Upper: lower + int64(rng.Intn(7)),
			LowerExclusive: rng.Intn(3) == 0, UpperExclusive: rng.Intn(3) == 0}
		if spec.Validate() != nil {
			continue // an empty exclusive range
		}
		d := intervalDriver(t, spec)
		d.rng, d.restore = rng, 0.1
		steps := randomStream(rng, 10+rng.Intn(60), int64(rng.Intn(6)+1))
		arrival := d.run(steps, math.MaxInt64)
		ls, rs := oracleElems(steps, arrival)
		var want, wantLate []string
		onTime := func(e oracleElem) bool { return e.ts >= e.wm }
		for _, e := range append(slices.Clone(ls), rs...) {
			if !onTime(e) {
				wantLate = append(wantLate, fmtLate([]Late{{Element: Element{Ts: e.ts, Row: named(e.name)}, Reason: "behind-watermark"}})...)
			}
		}
		for i := range ls {
			for k := range rs {
				if onTime(ls[i]) && onTime(rs[k]) && intervalMatch(ls[i].ts, rs[k].ts, spec.Lower, spec.Upper, spec.LowerExclusive, spec.UpperExclusive) {
					ts := max(ls[i].ts, rs[k].ts)
					want = append(want, oracleOut("interval", &ls[i], &rs[k], ts, ts, "orange", "green"))
				}
			}
		}
		slices.Sort(want)
		if got := multiset(d.out); !slices.Equal(got, want) {
			t.Fatalf("iter %d %+v:\n%s", iter, spec, diffLines(got, want))
		}
		slices.Sort(wantLate)
		gotLate := fmtLate(d.late)
		slices.Sort(gotLate)
		eqLines(t, "late", gotLate, wantLate)
		if !d.j.Empty() {
			t.Fatalf("iter %d: state %q after the final watermark", iter, d.j.Snapshot())
		}
	}
}

func BenchmarkIntervalJoin(b *testing.B) {
	spec := &IntervalSpec{Left: "orange", Right: "green", Lower: -2, Upper: 1}
	benchTimed(b, func() Timed { return NewInterval(spec) })
}

// TestJoinIntervalRightOrder checks pairs follow the buffered side's time order.
func TestJoinIntervalRightOrder(t *testing.T) {
	d := intervalDriver(t, &IntervalSpec{Left: "orange", Right: "green", Lower: -5, Upper: 5})
	d.script(E(rt, 12, "c"), E(rt, 8, "a"), E(rt, 10, "b1"), E(rt, 10, "b2"), E(lt, 10, "o"))
	eqLines(t, "order", fmtPairs(t, "orange", "green", d.take()), []string{"10 o,a", "10 o,b1", "10 o,b2", "12 o,c"})
}
