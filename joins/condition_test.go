package joins

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/joinery/joinery/record"
)

// vrow is a row {"n": name, "v": v}.
func vrow(name string, v int64) record.Row { return record.Row{"n": name, "v": v} }

// rowV reads column v of a row, as given (int64) or restored (json.Number).
func rowV(r record.Row) int64 {
	switch x := r["v"].(type) {
	case int64:
		return x
	case json.Number:
		i, _ := x.Int64()
		return i
	}
	panic(fmt.Sprintf("row %v has no integer v", r))
}

// testCond: pairs need l.v < r.v; left rows need v >= 0; right rows v != 99.
var testCond = Condition{
	Pair:  func(l, r record.Row) bool { return rowV(l) < rowV(r) },
	Left:  func(l record.Row) bool { return rowV(l) >= 0 },
	Right: func(r record.Row) bool { return rowV(r) != 99 },
}

type vstep struct {
	side record.Side
	ts   int64
	row  record.Row
	wm   int64 // a watermark step when row is nil
}

func VE(side record.Side, ts int64, name string, v int64) vstep {
	return vstep{side: side, ts: ts, row: vrow(name, v)}
}
func VW(wm int64) vstep { return vstep{wm: wm} }

func (d *tdriver) vscript(steps ...vstep) {
	d.t.Helper()
	for _, s := range steps {
		if s.row == nil {
			d.advance(s.wm)
		} else {
			d.el(s.side, s.ts, s.row)
		}
	}
}

// TestJoinConditionTable runs one script with the residual condition
// testCond through every stream-stream join: b (left, v -1) and z (right,
// v 99) fail their own side's condition; a×x passes; a×y (1 < 0) fails.
// Outer sides pad b and z at once (early state exclusion; a session window
// keeps them until it fires, as they still shape the session), pad y when
// its range or window closes, and never pad a or x, which matched
// (SPARK-26187).
func TestJoinConditionTable(t *testing.T) {
	steps := []vstep{
		VE(lt, 10, "a", 1), VE(lt, 10, "b", -1), VE(rt, 11, "x", 2), VE(rt, 12, "y", 0), VE(rt, 12, "z", 99),
		VW(13), VW(1000),
	}
	window := func(a Assigner, typ TimedJoinType) func() Timed {
		spec := &WindowJoinSpec{Type: typ, Left: "l", Right: "r", Assigner: a, Where: testCond}
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		return func() Timed { return NewWindowJoin(spec) }
	}
	bounded := func(typ TimedJoinType) func() Timed {
		spec := &TimeBoundedSpec{Type: typ, Left: "l", Right: "r", Lower: -5, Upper: 5, Where: testCond}
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		return func() Timed { return NewTimeBounded(spec) }
	}
	interval := func() Timed {
		return NewInterval(&IntervalSpec{Left: "l", Right: "r", Lower: -5, Upper: 5, Where: testCond})
	}
	for _, c := range []struct {
		name  string
		fresh func() Timed
		// want: outputs up to watermark 13 ("|"), then the rest.
		want string
	}{
		{"interval", interval, "11 a,x | "},
		{"time-bounded inner", bounded(TimedInner), "11 a,x | "},
		{"time-bounded left", bounded(TimedLeftOuter), "10 b,- 11 a,x | "},
		{"time-bounded right", bounded(TimedRightOuter), "11 a,x 12 -,z | 12 -,y"},
		{"time-bounded full", bounded(TimedFullOuter), "10 b,- 11 a,x 12 -,z | 12 -,y"},
		{"window inner", window(Tumbling(10, 0), TimedInner), "| 19 a,x"},
		{"window left", window(Tumbling(10, 0), TimedLeftOuter), "19 b,- | 19 a,x"},
		{"window full", window(Tumbling(10, 0), TimedFullOuter), "19 b,- 19 -,z | 19 a,x 19 -,y"},
		{"sliding full", window(Sliding(10, 5, 0), TimedFullOuter),
			"14 b,- 19 b,- 14 -,z 19 -,z | 14 a,x 14 -,y 19 a,x 19 -,y"},
		{"session full", window(Session(3), TimedFullOuter), "| 14 a,x 14 b,- 14 -,y 14 -,z"},
		{"session inner", window(Session(3), TimedInner), "| 14 a,x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDriver(t, c.fresh)
			d.vscript(steps[:6]...)
			early := fmtPairs(t, "l", "r", d.take())
			d.vscript(steps[6:]...)
			got := strings.TrimSpace(strings.Join(early, " ") + " | " + strings.Join(fmtPairs(t, "l", "r", d.take()), " "))
			if got != strings.TrimSpace(c.want) {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if len(d.late) != 0 || !d.j.Empty() {
				t.Fatalf("late %v, state %q", fmtLate(d.late), d.j.Snapshot())
			}
		})
	}
}

// TestJoinConditionExcludedNotBuffered checks that a row failing its own
// side's condition is never in the state (Spark's early state exclusion).
func TestJoinConditionExcludedNotBuffered(t *testing.T) {
	for name, j := range map[string]Timed{
		"time-bounded": NewTimeBounded(&TimeBoundedSpec{Type: TimedFullOuter, Left: "l", Right: "r", Lower: -5, Upper: 5, Where: testCond}),
		"interval":     NewInterval(&IntervalSpec{Left: "l", Right: "r", Lower: -5, Upper: 5, Where: testCond}),
		"window":       NewWindowJoin(&WindowJoinSpec{Type: TimedFullOuter, Left: "l", Right: "r", Assigner: Tumbling(10, 0), Where: testCond}),
	} {
		var fx Effects
		j.OnElement(Element{Side: lt, Ts: 10, Row: vrow("b", -1)}, 0, &fx)
		j.OnElement(Element{Side: rt, Ts: 10, Row: vrow("z", 99)}, 0, &fx)
		if !j.Empty() || len(fx.SetTimers) != 0 {
			t.Errorf("%s: excluded rows buffered: %q, timers %v", name, j.Snapshot(), fx.SetTimers)
		}
	}
}

// TestJoinLateRules runs one script under each late rule: at watermark 10,
// left rows at 9, 10 and 11; then right rows at 12 and (at watermark 16) 16.
func TestJoinLateRules(t *testing.T) {
	steps := []vstep{VW(10), VE(lt, 9, "l9", 0), VE(lt, 10, "l10", 0), VE(lt, 11, "l11", 0), VE(rt, 12, "r12", 0),
		VW(15), VW(16), VE(rt, 16, "r16", 0), VE(lt, 30, "l30", 0), VW(1000)}
	interval := func(rule LateRule) func() Timed {
		spec := &IntervalSpec{Left: "l", Right: "r", Lower: 0, Upper: 5, Late: rule}
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		return func() Timed { return NewInterval(spec) }
	}
	bounded := func(rule LateRule) func() Timed {
		spec := &TimeBoundedSpec{Type: TimedLeftOuter, Left: "l", Right: "r", Lower: 0, Upper: 5, Late: rule}
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		return func() Timed { return NewTimeBounded(spec) }
	}
	for _, c := range []struct {
		name       string
		fresh      func() Timed
		want, late string
	}{
		{"interval ts<wm", interval(LateBeforeWatermark), "12 l10,r12 12 l11,r12 16 l11,r16", "9 l9"},
		// Spark: ts == watermark is late; a row is dropped once the
		// watermark reaches the end of its range (l11: 16).
		{"interval ts<=wm", interval(LateAtWatermark), "12 l11,r12", "9 l9 10 l10 16 r16"},
		// Kafka Streams: nothing is late; l9 (behind the watermark) joins.
		{"interval none", interval(LateNever), "12 l9,r12 12 l10,r12 12 l11,r12 16 l11,r16", ""},
		{"time-bounded ts<wm", bounded(LateBeforeWatermark), "12 l10,r12 12 l11,r12 16 l11,r16 30 l30,-", "9 l9"},
		{"time-bounded ts<=wm", bounded(LateAtWatermark), "12 l11,r12 30 l30,-", "9 l9 10 l10 16 r16"},
		{"time-bounded none", bounded(LateNever), "12 l9,r12 12 l10,r12 12 l11,r12 16 l11,r16 30 l30,-", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDriver(t, c.fresh)
			d.vscript(steps...)
			if got := strings.Join(fmtPairs(t, "l", "r", d.take()), " "); got != c.want {
				t.Errorf("outputs\n got %s\nwant %s", got, c.want)
			}
			var late []string
			for _, l := range d.late {
				late = append(late, fmt.Sprintf("%d %v", l.Element.Ts, l.Element.Row["n"]))
			}
			if got := strings.Join(late, " "); got != c.late {
				t.Errorf("late\n got %s\nwant %s", got, c.late)
			}
		})
	}
}

// TestJoinWindowLateRules: a tumbling window [10,15) fires at watermark 14
// under ts<wm (Flink) and at 15 under ts<=wm (Spark: complete once end <=
// watermark), so the right row at 14 arriving at watermark 14 is late under
// the first and joins under the second.
func TestJoinWindowLateRules(t *testing.T) {
	steps := []vstep{VE(lt, 12, "a", 0), VE(rt, 13, "b", 0), VW(14), VE(rt, 14, "c", 0), VW(15), VE(lt, 15, "d", 0), VE(rt, 16, "e", 0), VW(100)}
	for _, c := range []struct {
		rule             LateRule
		atWM14, want     string
		late             string
		timersAfterFirst []int64
	}{
		{LateBeforeWatermark, "14 a,b", "19 d,e", "14 c window-closed", []int64{14}},
		{LateAtWatermark, "", "14 a,b 14 a,c 19 d,e", "", []int64{15}},
	} {
		t.Run(c.rule.String(), func(t *testing.T) {
			spec := &WindowJoinSpec{Left: "l", Right: "r", Assigner: Tumbling(5, 0), Late: c.rule}
			d := windowDriver(t, spec)
			d.vscript(steps[0])
			if got := sortedTimers(d); !slices.Equal(got, c.timersAfterFirst) {
				t.Fatalf("timers %v, want %v", got, c.timersAfterFirst)
			}
			d.vscript(steps[1:3]...)
			if got := strings.Join(fmtPairs(t, "l", "r", d.take()), " "); got != c.atWM14 {
				t.Fatalf("at watermark 14: %q, want %q", got, c.atWM14)
			}
			d.vscript(steps[3:]...)
			var all []string
			all = append(all, fmtPairs(t, "l", "r", d.take())...)
			if got := strings.Join(all, " "); got != c.want {
				t.Errorf("outputs %q, want %q", got, c.want)
			}
			if got := strings.Join(fmtLate(d.late), " "); got != c.late {
				t.Errorf("late %q, want %q", got, c.late)
			}
		})
	}
	if err := (&WindowJoinSpec{Left: "l", Right: "r", Assigner: Tumbling(5, 0), Late: LateNever}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "late: rule none is for interval, time-bounded and unbounded joins") {
		t.Errorf("window join with rule none: %v", err)
	}
	if err := (&IntervalSpec{Left: "l", Right: "r", Late: LateRule(9)}).Validate(); err == nil || !strings.Contains(err.Error(), "late: unknown late rule") {
		t.Errorf("interval with rule 9: %v", err)
	}
}

func TestParseLateRule(t *testing.T) {
	for s, want := range map[string]LateRule{"": LateBeforeWatermark, "ts<wm": LateBeforeWatermark, "ts<=wm": LateAtWatermark, "none": LateNever} {
		if got, err := ParseLateRule(s); err != nil || got != want {
			t.Errorf("ParseLateRule(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseLateRule("ts<=watermark"); err == nil {
		t.Error("ParseLateRule accepted a bad rule")
	}
}

// randomCond is one of the residual conditions the oracle draws from, over
// the rows' v columns.
func randomCond(rng *rand.Rand) (Condition, string) {
	pair := func(l, r record.Row) bool { return (rowV(l)+rowV(r))%3 != 0 }
	left := func(l record.Row) bool { return rowV(l)%4 != 1 }
	right := func(r record.Row) bool { return rowV(r)%5 != 2 }
	switch rng.Intn(5) {
	case 0:
		return Condition{}, "none"
	case 1:
		return Condition{Pair: pair}, "pair"
	case 2:
		return Condition{Left: left}, "left"
	case 3:
		return Condition{Right: right}, "right"
	}
	return Condition{Pair: pair, Left: left, Right: right}, "all"
}

// oracleVOut formats an expected output of the oracle as multiset does.
func oracleVOut(kind string, l, r *oracleElem, extra, ts int64) string {
	var lp, rp *record.Position
	row := record.Row{"l": nil, "r": nil}
	if l != nil {
		lp, row["l"] = &l.pos, vrow(l.name, nameV(l.name))
	}
	if r != nil {
		rp, row["r"] = &r.pos, vrow(r.name, nameV(r.name))
	}
	id, _ := outputID(kind, lp, rp, extra, 0)
	return fmt.Sprintf("%s %d %v", id, ts, row)
}

// nameV is the v of the element named name ("l17": 17*7 mod 11).
func nameV(name string) int64 {
	var i int64
	fmt.Sscanf(name[1:], "%d", &i)
	return i * 7 % 11
}

// TestJoinConditionOracle runs random streams through interval,
// time-bounded and window joins with random residual conditions and late
// rules, snapshotting and restoring at random, and compares the outputs and
// late elements with a brute force over all pairs: a pair is emitted iff
// both elements are on time under the rule, in range (or in one accepted
// window), pass the whole condition, and the earlier one was still
// buffered when the later one came; an outer side's row is padded iff it
// is on time and matched nothing.
func TestJoinConditionOracle(t *testing.T) {
	seed := rand.Int63()
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	rng := rand.New(rand.NewSource(seed))
	for iter := range 400 {
		cond, condName := randomCond(rng)
		typ := TimedJoinType(rng.Intn(4))
		kind := []string{"interval", "time-bounded", "window", "unbounded"}[iter%4]
		rule := LateRule(rng.Intn(3))
		if kind == "window" {
			rule = LateRule(rng.Intn(2))
		}
		if kind == "interval" {
			typ = TimedInner
		}
		lower := int64(rng.Intn(11) - 5)
		upper := lower + int64(rng.Intn(7))
		size := int64(1 + rng.Intn(8))
		slide := size
		if rng.Intn(2) == 0 {
			slide = int64(1 + rng.Intn(int(size)+2))
		}
		a := Sliding(size, slide, 0)
		// Window joins emit on arrival (Spark's) half the time: the same
		// rows, pairs at the later row's arrival, padded rows at the close.
		onArrival := kind == "window" && rng.Intn(2) == 0
		var fresh func() Timed
		var specErr error
		switch kind {
		case "interval":
			s := &IntervalSpec{Left: "l", Right: "r", Lower: lower, Upper: upper, Where: cond, Late: rule}
			specErr, fresh = s.Validate(), func() Timed { return NewInterval(s) }
		case "time-bounded":
			s := &TimeBoundedSpec{Type: typ, Left: "l", Right: "r", Lower: lower, Upper: upper, Where: cond, Late: rule}
			specErr, fresh = s.Validate(), func() Timed { return NewTimeBounded(s) }
		case "unbounded":
			upper = 1 + int64(rng.Intn(8)) // the TTL
			lower = -upper
			s := &UnboundedSpec{Type: typ, Left: "l", Right: "r", TTL: upper, Where: cond, Late: rule}
			specErr, fresh = s.Validate(), func() Timed { return NewUnbounded(s) }
		default:
			s := &WindowJoinSpec{Type: typ, Left: "l", Right: "r", Assigner: a, Where: cond, Late: rule, OnArrival: onArrival}
			specErr, fresh = s.Validate(), func() Timed { return NewWindowJoin(s) }
		}
		if specErr != nil {
			t.Fatal(specErr)
		}
		d := newDriver(t, fresh)
		d.rng, d.restore = rng, 0.1
		steps := randomStream(rng, 10+rng.Intn(60), int64(rng.Intn(6)+1))
		arrival := map[string]int64{}
		// emittedBy: per output, the element whose arrival emitted it ("" at
		// a watermark).
		var emittedBy []string
		for _, s := range steps {
			if s.advance {
				d.advance(s.wm)
			} else {
				arrival[s.name] = d.wm
				d.el(s.side, s.ts, vrow(s.name, nameV(s.name)))
			}
			for len(emittedBy) < len(d.out) {
				emittedBy = append(emittedBy, s.name)
			}
		}
		d.advance(math.MaxInt64)
		for len(emittedBy) < len(d.out) {
			emittedBy = append(emittedBy, "")
		}
		if onArrival {
			// A pair comes out when its later row arrives, a padded row at a
			// watermark (or at once, excluded by its side's condition).
			pos := map[string]int{}
			for i, s := range steps {
				pos[s.name] = i
			}
			for i, o := range d.out {
				l, _ := o.Row["l"].(record.Row)
				r, _ := o.Row["r"].(record.Row)
				switch {
				case l != nil && r != nil:
					later := l["n"].(string)
					if pos[r["n"].(string)] > pos[later] {
						later = r["n"].(string)
					}
					if emittedBy[i] != later {
						t.Fatalf("iter %d on-arrival: pair %v emitted by %q, want at the arrival of %q", iter, o.Row, emittedBy[i], later)
					}
				case l != nil && emittedBy[i] != "" && emittedBy[i] != l["n"],
					r != nil && emittedBy[i] != "" && emittedBy[i] != r["n"]:
					t.Fatalf("iter %d on-arrival: padded %v emitted by the arrival of %q", iter, o.Row, emittedBy[i])
				}
			}
		}
		ls, rs := oracleElems(steps, arrival)
		lrow := func(e oracleElem) record.Row { return vrow(e.name, nameV(e.name)) }
		// The condition's functions, called directly (not through the
		// methods under test).
		passes := func(e oracleElem) bool {
			if e.side == record.Left {
				return cond.Left == nil || cond.Left(lrow(e))
			}
			return cond.Right == nil || cond.Right(lrow(e))
		}
		pairOK := func(l, r oracleElem) bool { return cond.Pair == nil || cond.Pair(lrow(l), lrow(r)) }
		var want, wantLate []string
		lateLine := func(e oracleElem, reason string) {
			wantLate = append(wantLate, fmt.Sprintf("%d %s %s", e.ts, e.name, reason))
		}
		if kind == "window" {
			fireAt := func(w Window) int64 {
				if rule == LateAtWatermark {
					return w.End
				}
				return w.End - 1
			}
			accepted := func(e oracleElem, w Window) bool { return fireAt(w) > e.wm }
			for _, es := range [][]oracleElem{ls, rs} {
				for _, e := range es {
					reason := "no-window"
					for _, w := range oracleWindows(e.ts, size, slide, 0) {
						reason = "window-closed"
						if accepted(e, w) {
							reason = ""
							break
						}
					}
					if reason != "" {
						lateLine(e, reason)
					}
				}
			}
			// Per window: the accepted elements of each side.
			wins := map[Window]bool{}
			for _, es := range [][]oracleElem{ls, rs} {
				for _, e := range es {
					for _, w := range oracleWindows(e.ts, size, slide, 0) {
						wins[w] = true
					}
				}
			}
			for w := range wins {
				in := func(e oracleElem) bool { return e.ts >= w.Start && e.ts < w.End && accepted(e, w) }
				lm, rm := make([]bool, len(ls)), make([]bool, len(rs))
				for i := range ls {
					for k := range rs {
						if in(ls[i]) && in(rs[k]) && passes(ls[i]) && passes(rs[k]) && pairOK(ls[i], rs[k]) {
							want = append(want, oracleVOut("window", &ls[i], &rs[k], w.End, w.End-1))
							lm[i], rm[k] = true, true
						}
					}
				}
				for i := range ls {
					if in(ls[i]) && !lm[i] && typ.padLeft() {
						want = append(want, oracleVOut("window", &ls[i], nil, w.End, w.End-1))
					}
				}
				for k := range rs {
					if in(rs[k]) && !rm[k] && typ.padRight() {
						want = append(want, oracleVOut("window", nil, &rs[k], w.End, w.End-1))
					}
				}
			}
		} else {
			lo, hi := lower, upper
			outKind := map[string]string{"interval": "interval", "time-bounded": "outer", "unbounded": "unbounded"}[kind]
			onTime := func(e oracleElem) bool {
				switch rule {
				case LateAtWatermark:
					return e.ts > e.wm
				case LateNever:
					return true
				}
				return e.ts >= e.wm
			}
			for _, es := range [][]oracleElem{ls, rs} {
				for _, e := range es {
					if !onTime(e) {
						lateLine(e, LateBehindWatermark)
					}
				}
			}
			end := func(e oracleElem) int64 {
				if e.side == record.Left {
					return e.ts + hi
				}
				return e.ts - lo
			}
			// The earlier-arriving element must still be buffered when the
			// later one arrives.
			order := map[string]int{}
			for i, s := range steps {
				order[s.name] = i
			}
			buffered := func(earlier, later oracleElem) bool {
				if rule == LateAtWatermark {
					return end(earlier) > later.wm
				}
				return end(earlier) >= later.wm
			}
			lm, rm := make([]bool, len(ls)), make([]bool, len(rs))
			for i := range ls {
				for k := range rs {
					l, r := ls[i], rs[k]
					inRange := kind == "unbounded" || r.ts >= l.ts+lo && r.ts <= l.ts+hi
					if !onTime(l) || !onTime(r) || !passes(l) || !passes(r) || !inRange {
						continue
					}
					if order[l.name] < order[r.name] && !buffered(l, r) || order[r.name] < order[l.name] && !buffered(r, l) {
						continue
					}
					if !pairOK(l, r) {
						continue
					}
					ts := max(l.ts, r.ts)
					want = append(want, oracleVOut(outKind, &ls[i], &rs[k], ts, ts))
					lm[i], rm[k] = true, true
				}
			}
			for i := range ls {
				if onTime(ls[i]) && !lm[i] && typ.padLeft() {
					want = append(want, oracleVOut(outKind, &ls[i], nil, ls[i].ts, ls[i].ts))
				}
			}
			for k := range rs {
				if onTime(rs[k]) && !rm[k] && typ.padRight() {
					want = append(want, oracleVOut(outKind, nil, &rs[k], rs[k].ts, rs[k].ts))
				}
			}
		}
		slices.Sort(want)
		if got := multiset(d.out); !slices.Equal(got, want) {
			t.Fatalf("iter %d %s %s rule %s cond %s [%d,%d] %+v on-arrival %v:\n%s", iter, kind, typ, rule, condName, lower, upper, a, onArrival, diffLines(got, want))
		}
		var gotLate []string
		for _, l := range d.late {
			gotLate = append(gotLate, fmt.Sprintf("%d %v %s", l.Element.Ts, l.Element.Row["n"], l.Reason))
		}
		slices.Sort(gotLate)
		slices.Sort(wantLate)
		eqLines(t, fmt.Sprintf("iter %d %s rule %s: late", iter, kind, rule), gotLate, wantLate)
		if !d.j.Empty() || len(d.timers) != 0 {
			t.Fatalf("iter %d: state %q timers %v after the final watermark", iter, d.j.Snapshot(), d.timers)
		}
	}
}
