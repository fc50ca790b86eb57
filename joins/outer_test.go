package joins

import (
	"math"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func outerDriver(t testing.TB, spec *TimeBoundedSpec) *tdriver {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return newDriver(t, func() Timed { return NewTimeBounded(spec) })
}

const minute = 60_000

func TestJoinOuterSeedAds(t *testing.T) {
	// seed dynamic-joiner-watermarks: display_time BETWEEN event_time AND
	// event_time + INTERVAL 2 MINUTES, left_outer: a visit gets the ads shown
	// within 2 minutes after it, and is emitted alone once the watermark
	// passes its range when none came.
	spec := &TimeBoundedSpec{Type: TimedLeftOuter, Left: "visit", Right: "ad", Lower: 0, Upper: 2 * minute}
	d := outerDriver(t, spec)
	d.script(E(lt, 0, "v0"), E(rt, 1*minute, "ad1"))
	eqLines(t, "match at once", fmtPairs(t, "visit", "ad", d.take()), []string{"60000 v0,ad1"})
	d.script(E(lt, 5*minute, "v5"), W(7*minute))
	if len(d.out) != 0 {
		t.Fatalf("padded before the watermark passed 7 min: %v", fmtPairs(t, "visit", "ad", d.out))
	}
	d.script(W(7*minute + 1))
	eqLines(t, "padded when the watermark passes", fmtPairs(t, "visit", "ad", d.take()), []string{"300000 v5,-"})
	// The matched visit is never padded; an ad with no visit is dropped
	// silently in a left outer join (it is not late).
	d.script(E(rt, 8*minute, "ad8"), W(minutes(100)))
	if len(d.take()) != 0 || len(d.late) != 0 || !d.j.Empty() {
		t.Fatalf("outputs/late/state after the end: %q", d.j.Snapshot())
	}
}

func minutes(m int64) int64 { return m * minute }

func TestJoinOuterTypes(t *testing.T) {
	// l.ts + 0 <= r.ts <= l.ts + 5: l10 matches r12; l30 and r50 match nothing.
	steps := []wstep{E(lt, 10, "l10"), E(rt, 12, "r12"), E(lt, 30, "l30"), E(rt, 50, "r50"), W(34), W(35), W(49), W(50), W(51)}
	for _, c := range []struct {
		typ  TimedJoinType
		want []string
	}{
		{TimedInner, []string{"12 l10,r12"}},
		{TimedLeftOuter, []string{"12 l10,r12", "30 l30,-"}},
		{TimedRightOuter, []string{"12 l10,r12", "50 -,r50"}},
		{TimedFullOuter, []string{"12 l10,r12", "30 l30,-", "50 -,r50"}},
	} {
		t.Run(c.typ.String(), func(t *testing.T) {
			d := outerDriver(t, &TimeBoundedSpec{Type: c.typ, Left: "l", Right: "r", Lower: 0, Upper: 5})
			var got []string
			for _, s := range steps {
				d.script(s)
				for _, line := range fmtPairs(t, "l", "r", d.take()) {
					wm := "el"
					if s.wm != nil {
						wm = "wm " + strconv.FormatInt(*s.wm, 10)
					}
					got = append(got, wm+": "+line)
				}
			}
			// Padded rows appear exactly when the watermark passes the end of
			// their range: left 30 at 36 (after 35), right 50 right away at 51
			// (its range r.ts - upper .. r.ts - lower = 45..50).
			var want []string
			for _, w := range c.want {
				switch {
				case strings.HasSuffix(w, ",-"):
					want = append(want, "wm 49: "+w) // first advance past 35
				case strings.HasPrefix(w, "50 -"):
					want = append(want, "wm 51: "+w)
				default:
					want = append(want, "el: "+w)
				}
			}
			eqLines(t, "outputs", got, want)
			if !d.j.Empty() {
				t.Fatalf("state %q", d.j.Snapshot())
			}
		})
	}
}

func TestJoinOuterLateAndExpired(t *testing.T) {
	spec := &TimeBoundedSpec{Type: TimedFullOuter, Left: "l", Right: "r", Lower: -10, Upper: -5}
	d := outerDriver(t, spec)
	// Late elements are reported and take no part.
	d.script(W(100), E(lt, 99, "late"), E(rt, 95, "r95"))
	eqLines(t, "late", fmtLate(d.late), []string{"99 late behind-watermark", "95 r95 behind-watermark"})
	// A left row at 100 ranges over rights 90..95, already behind the
	// watermark: with nothing buffered it is padded at once.
	d.script(E(lt, 100, "l100"))
	eqLines(t, "expired on arrival", fmtPairs(t, "l", "r", d.take()), []string{"100 l100,-"})
	// A right at 101 (lefts 106..111) is buffered; a left at 108 matches it
	// at once and is itself past its range, so neither is padded later.
	d.script(E(rt, 101, "r101"), W(104), E(lt, 108, "l108"), W(200))
	eqLines(t, "matched", fmtPairs(t, "l", "r", d.take()), []string{"108 l108,r101"})
	if !d.j.Empty() {
		t.Fatalf("state %q", d.j.Snapshot())
	}
}

func TestJoinOuterSpecValidate(t *testing.T) {
	err := (&TimeBoundedSpec{Type: 7, Left: "a", Right: "b", Lower: 3, Upper: 2}).Validate()
	for _, w := range []string{"type: unknown join type 7", "lower: must be <= upper (3 > 2)"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%v lacks %q", err, w)
		}
	}
}

func TestJoinOuterSnapshot(t *testing.T) {
	spec := &TimeBoundedSpec{Type: TimedLeftOuter, Left: "l", Right: "r", Lower: 0, Upper: 5}
	d := outerDriver(t, spec)
	d.script(E(lt, 5, "a"), E(rt, 6, "b"), E(lt, 7, "c"))
	want := "\x01O" + `{"l":[{"t":5,"p":{"source":"left","partition":0,"offset":0},"r":{"n":"a"},"m":true},` +
		`{"t":7,"p":{"source":"left","partition":0,"offset":1},"r":{"n":"c"}}],` +
		`"r":[{"t":6,"p":{"source":"right","partition":0,"offset":0},"r":{"n":"b"},"m":true}]}`
	if got := string(d.j.Snapshot()); got != want {
		t.Fatalf("snapshot\n%q\nwant\n%q", got, want)
	}
	checkRestoreErrors(t, d.j, "\x01O"+`{"r":[{"t":5},{"t":4}]}`)
}

func FuzzOuterRestore(f *testing.F) {
	spec := &TimeBoundedSpec{Type: TimedFullOuter, Left: "l", Right: "r", Lower: -1, Upper: 3}
	d := outerDriver(f, spec)
	d.script(E(lt, 5, "a"), E(rt, 6, "b"), E(lt, 9, "c"))
	f.Add(d.j.Snapshot())
	f.Add([]byte("\x01O{\"l\":[{\"t\":1,\"m\":false}],\"r\":null}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRestore(t, func() Timed { return NewTimeBounded(spec) }, b)
	})
}

func TestJoinOuterOracle(t *testing.T) {
	seed := rand.Int63()
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	rng := rand.New(rand.NewSource(seed))
	for iter := range 200 {
		lower := int64(rng.Intn(11) - 5)
		spec := &TimeBoundedSpec{Type: TimedJoinType(rng.Intn(4)), Left: "orange", Right: "green", Lower: lower, Upper: lower + int64(rng.Intn(7))}
		d := outerDriver(t, spec)
		d.rng, d.restore = rng, 0.1
		steps := randomStream(rng, 10+rng.Intn(60), int64(rng.Intn(6)+1))
		// Padded rows come only once the watermark has passed their range.
		arrival := map[string]int64{}
		for _, s := range steps {
			n := len(d.out)
			if s.advance {
				d.advance(s.wm)
			} else {
				arrival[s.name] = d.wm
				d.el(s.side, s.ts, named(s.name))
			}
			for _, o := range d.out[n:] {
				if o.Row["green"] == nil && d.wm <= o.Ts+spec.Upper || o.Row["orange"] == nil && d.wm <= o.Ts-spec.Lower {
					t.Fatalf("iter %d: %v padded at watermark %d, before its range ended", iter, o.Row, d.wm)
				}
			}
		}
		d.advance(math.MaxInt64)
		ls, rs := oracleElems(steps, arrival)
		onTime := func(e oracleElem) bool { return e.ts >= e.wm }
		var want []string
		lm, rm := make([]bool, len(ls)), make([]bool, len(rs))
		for i := range ls {
			for k := range rs {
				if onTime(ls[i]) && onTime(rs[k]) && intervalMatch(ls[i].ts, rs[k].ts, spec.Lower, spec.Upper, false, false) {
					ts := max(ls[i].ts, rs[k].ts)
					want = append(want, oracleOut("outer", &ls[i], &rs[k], ts, ts, "orange", "green"))
					lm[i], rm[k] = true, true
				}
			}
		}
		for i := range ls {
			if onTime(ls[i]) && !lm[i] && (spec.Type == TimedLeftOuter || spec.Type == TimedFullOuter) {
				want = append(want, oracleOut("outer", &ls[i], nil, ls[i].ts, ls[i].ts, "orange", "green"))
			}
		}
		for k := range rs {
			if onTime(rs[k]) && !rm[k] && (spec.Type == TimedRightOuter || spec.Type == TimedFullOuter) {
				want = append(want, oracleOut("outer", nil, &rs[k], rs[k].ts, rs[k].ts, "orange", "green"))
			}
		}
		slices.Sort(want)
		if got := multiset(d.out); !slices.Equal(got, want) {
			t.Fatalf("iter %d %+v:\n%s", iter, spec, diffLines(got, want))
		}
		if !d.j.Empty() {
			t.Fatalf("iter %d: state %q after the final watermark", iter, d.j.Snapshot())
		}
	}
}

func BenchmarkOuterJoin(b *testing.B) {
	for _, typ := range []TimedJoinType{TimedInner, TimedFullOuter} {
		b.Run(typ.String(), func(b *testing.B) {
			spec := &TimeBoundedSpec{Type: typ, Left: "orange", Right: "green", Lower: -2, Upper: 3}
			benchTimed(b, func() Timed { return NewTimeBounded(spec) })
		})
	}
}

// TestJoinHalfBounded: Spark's "stream stream inner join with time range -
// with watermark - one side condition" (leftTime < rightTime - 5 s: lower
// 5001 ms, no upper bound) in ms/1000, and its mirror with no lower bound.
// Rows on the open side wait for TTL; NoTTL keeps them until the input
// ends, when an outer row is padded.
func TestJoinHalfBounded(t *testing.T) {
	spec := &TimeBoundedSpec{Type: TimedInner, Left: "l", Right: "r", Lower: 5001, Open: OpenUpper, TTL: NoTTL, Late: LateAtWatermark}
	d := outerDriver(t, spec)
	d.script(E(lt, 5000, "l5"), E(rt, 11000, "r11"), E(rt, 10000, "r10"))
	d.script(E(lt, 3000, "l3"), E(lt, 30000, "l30"), W(20000)) // Spark's right (0, 30) is another key
	d.script(E(rt, 20000, "r20"), E(rt, 21000, "r21"), E(rt, 28000, "r28"))
	d.script(E(lt, 20000, "l20"), E(lt, 21000, "l21"))
	eqLines(t, "Spark's rows", fmtPairs(t, "l", "r", d.take()), []string{
		"11000 l5,r11", "10000 l3,r10", "11000 l3,r11", "21000 l3,r21", "21000 l5,r21", "28000 l3,r28", "28000 l5,r28", "28000 l21,r28"})
	if fmtLate(d.late)[0] != "20000 r20 behind-watermark" || len(d.late) != 2 {
		t.Fatalf("late %v", fmtLate(d.late))
	}
	// Left rows are kept for ever; right rows until the watermark passes
	// r.ts - 5001.
	if s := string(d.j.Snapshot()); !strings.Contains(s, `"n":"l3"`) || strings.Contains(s, `"n":"r11"`) {
		t.Fatalf("state %s", s)
	}
	// No lower bound, a TTL: leftTime > rightTime (upper -1), right rows
	// kept 10 after their time; left outer rows padded when the range ends.
	spec = &TimeBoundedSpec{Type: TimedLeftOuter, Left: "l", Right: "r", Upper: -1, Open: OpenLower, TTL: 10}
	d = outerDriver(t, spec)
	d.script(E(rt, 0, "r0"), E(lt, 5, "l5"), E(lt, 10, "l10"), E(lt, 11, "l11"), E(lt, 0, "l0"), W(100))
	eqLines(t, "lower open", fmtPairs(t, "l", "r", d.take()), []string{"5 l5,r0", "10 l10,r0", "0 l0,-", "11 l11,-"})
	// An unbounded join with NoTTL pads at the end of input only.
	u := &UnboundedSpec{Type: TimedLeftOuter, Left: "l", Right: "r", TTL: NoTTL}
	d = newDriver(t, func() Timed { return NewUnbounded(u) })
	d.script(E(lt, 0, "a"), W(1<<60), E(rt, 1<<60, "x"), E(lt, 5, "late"))
	eqLines(t, "kept for ever", fmtPairs(t, "l", "r", d.take()), []string{"1152921504606846976 a,x"})
	d.script(E(lt, 1<<61, "b"), W(math.MaxInt64))
	eqLines(t, "x is kept for ever too", fmtPairs(t, "l", "r", d.take()), []string{"2305843009213693952 b,x"})
	d = newDriver(t, func() Timed { return NewUnbounded(u) })
	d.script(E(lt, 0, "c"), W(1<<62))
	eqLines(t, "not padded while the input goes on", fmtPairs(t, "l", "r", d.take()), nil)
	d.script(W(math.MaxInt64))
	eqLines(t, "padded at the end", fmtPairs(t, "l", "r", d.take()), []string{"0 c,-"})
	if !d.j.Empty() {
		t.Fatalf("state after the end: %s", d.j.Snapshot())
	}
	for _, c := range []struct {
		spec TimeBoundedSpec
		want string
	}{
		{TimeBoundedSpec{Open: OpenUpper, Lower: 0}, "ttl: must be set with open: upper"},
		{TimeBoundedSpec{Open: OpenUpper, Upper: 5, TTL: 10}, "upper: must not be set with open: upper"},
		{TimeBoundedSpec{Open: OpenLower, Upper: -20, TTL: 10}, "ttl: must be at least -upper (20)"},
		{TimeBoundedSpec{Open: OpenUpper, Lower: 20, TTL: 10}, "ttl: must be at least lower (20)"},
		{TimeBoundedSpec{Upper: 5, TTL: 10}, "ttl: only for a half-bounded range"},
	} {
		c.spec.Left, c.spec.Right = "l", "r"
		if err := c.spec.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
}
