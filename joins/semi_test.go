package joins

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/joinery/joinery/record"
)

// fmtSemi formats a left semi join's outputs as "ts name id": the row must
// hold the left column only.
func fmtSemi(t testing.TB, left string, outs []record.Output) []string {
	t.Helper()
	s := make([]string, len(outs))
	for i, o := range outs {
		if len(o.Row) != 1 {
			t.Fatalf("semi output %v: want the left column only", o.Row)
		}
		r, ok := o.Row[left].(record.Row)
		if !ok {
			t.Fatalf("semi output %v: no left row", o.Row)
		}
		if o.Kind != record.Insert {
			t.Fatalf("semi output kind %v", o.Kind)
		}
		s[i] = fmt.Sprintf("%d %v %s", o.Ts, r["n"], o.ID)
	}
	return s
}

// TestJoinSemiTimeBounded is Spark's "left semi join with watermark range
// condition" (StreamingLeftSemiJoinSuite) on one key per row: a left row
// comes out once, at its first match, alone and stamped with its own time;
// an unmatched one never; a left row matched on arrival is not buffered,
// one matched later stays buffered (marked) until its range passes.
func TestJoinSemiTimeBounded(t *testing.T) {
	spec := &TimeBoundedSpec{Type: TimedLeftSemi, Left: "l", Right: "r", Lower: -5, Upper: 5, Late: LateAtWatermark}
	for _, restore := range []float64{0, 0.5} {
		d := outerDriver(t, spec)
		if restore > 0 {
			d.rng, d.restore = rand.New(rand.NewSource(1)), restore
		}
		d.script(E(lt, 5, "l5"), E(lt, 5, "l5b"))
		eqLines(t, "nothing yet", fmtSemi(t, "l", d.take()), nil)
		d.script(E(rt, 10, "r10"))
		eqLines(t, "first match", fmtSemi(t, "l", d.take()), []string{"5 l5 semi|left/0@0|-|5|0", "5 l5b semi|left/0@1|-|5|0"})
		d.script(E(rt, 9, "r9"))
		eqLines(t, "matched rows never again", fmtSemi(t, "l", d.take()), nil)
		d.script(E(lt, 7, "l7"), E(lt, 30, "l30"), W(0))
		eqLines(t, "a match on arrival", fmtSemi(t, "l", d.take()), []string{"7 l7 semi|left/0@2|-|7|0"})
		if s := string(d.j.Snapshot()); strings.Contains(s, `"p":"left/0@2"`) {
			t.Fatalf("a left row matched on arrival is buffered: %s", s)
		}
		d.script(E(rt, 30, "r30"))
		eqLines(t, "l30 matches r30", fmtSemi(t, "l", d.take()), []string{"30 l30 semi|left/0@3|-|30|0"})
		d.script(W(20), E(rt, 20, "late"), W(1000))
		eqLines(t, "nothing padded, ever", fmtSemi(t, "l", d.take()), nil)
		if !d.j.Empty() || len(d.late) != 1 || d.late[0].Element.Row["n"] != "late" {
			t.Fatalf("state %q late %v", d.j.Snapshot(), fmtLate(d.late))
		}
	}
}

// TestJoinSemiCondition: a left row failing its own side's condition is
// dropped (never padded, never buffered); a pair failing the pair condition
// is no match.
func TestJoinSemiCondition(t *testing.T) {
	spec := &TimeBoundedSpec{Type: TimedLeftSemi, Left: "l", Right: "r", Lower: 0, Upper: 10, Where: testCond}
	d := outerDriver(t, spec)
	d.vscript(VE(lt, 0, "neg", -1), VE(lt, 0, "a", 5), VE(rt, 1, "small", 3), VE(rt, 2, "big", 8), VE(rt, 3, "big2", 9))
	eqLines(t, "outputs", fmtSemi(t, "l", d.take()), []string{"0 a semi|left/0@1|-|0|0"})
	if s := string(d.j.Snapshot()); strings.Contains(s, "neg") {
		t.Fatalf("an excluded left row is buffered: %s", s)
	}
	d.vscript(VE(rt, 4, "r99", 99), VE(lt, 1, "b", 1))
	eqLines(t, "r99 excluded, b matches small", fmtSemi(t, "l", d.take()), []string{"1 b semi|left/0@2|-|1|0"})
}

// TestJoinSemiUnbounded: a left semi join without a time range; rows are
// kept until their TTL passes.
func TestJoinSemiUnbounded(t *testing.T) {
	spec := &UnboundedSpec{Type: TimedLeftSemi, Left: "l", Right: "r", TTL: 10}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, func() Timed { return NewUnbounded(spec) })
	d.script(E(lt, 0, "a"), E(rt, 8, "x"), E(rt, 9, "y"), E(lt, 9, "b"), W(11), E(lt, 11, "c"), W(30), E(rt, 30, "z"))
	eqLines(t, "outputs", fmtSemi(t, "l", d.take()), []string{"0 a semi|left/0@0|-|0|0", "9 b semi|left/0@1|-|9|0", "11 c semi|left/0@2|-|11|0"})
}

// TestJoinSemiWindow: Spark's windowed left semi join (on arrival) and the
// Flink-style one (at the close): each left row of a window with a match
// once, stamped end - 1.
func TestJoinSemiWindow(t *testing.T) {
	steps := []wstep{E(lt, 1, "a"), E(lt, 2, "b"), E(rt, 3, "x"), E(rt, 4, "y"), E(lt, 5, "c"), E(lt, 12, "d"), W(100)}
	for _, onArrival := range []bool{false, true} {
		spec := &WindowJoinSpec{Type: TimedLeftSemi, Left: "l", Right: "r", Assigner: Tumbling(10, 0), OnArrival: onArrival}
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		d := newDriver(t, func() Timed { return NewWindowJoin(spec) })
		d.script(steps...)
		got := fmtSemi(t, "l", d.take())
		want := []string{"9 a window|left/0@0|-|10|0", "9 b window|left/0@1|-|10|0", "9 c window|left/0@2|-|10|0"}
		eqLines(t, fmt.Sprintf("on arrival %v", onArrival), got, want)
	}
	// With a condition (on arrival): a right row that fails it matches
	// nothing; a left row matched once is not emitted again.
	spec := &WindowJoinSpec{Type: TimedLeftSemi, Left: "l", Right: "r", Assigner: Tumbling(10, 0), OnArrival: true, Where: testCond}
	d := newDriver(t, func() Timed { return NewWindowJoin(spec) })
	d.vscript(VE(lt, 1, "a", 1), VE(rt, 2, "x", 99), VE(rt, 3, "y", 5), VE(rt, 4, "z", 6), VE(lt, 5, "b", 7), VW(100))
	eqLines(t, "condition", fmtSemi(t, "l", d.take()), []string{"9 a window|left/0@0|-|10|0"})
}

// TestJoinSemiValidate: a left semi join outputs the left row only.
func TestJoinSemiValidate(t *testing.T) {
	right := []Column{{Name: "x", Side: record.Right, Field: "v"}}
	for name, err := range map[string]error{
		"time-bounded": (&TimeBoundedSpec{Type: TimedLeftSemi, Left: "l", Right: "r", Project: right}).Validate(),
		"unbounded":    (&UnboundedSpec{Type: TimedLeftSemi, Left: "l", Right: "r", TTL: 1, Project: right}).Validate(),
		"window":       (&WindowJoinSpec{Type: TimedLeftSemi, Left: "l", Right: "r", Assigner: Tumbling(10, 0), Project: right}).Validate(),
	} {
		if err == nil || !strings.Contains(err.Error(), "project[0].side: a left semi join outputs the left row only") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := (&TemporalSpec{Type: TimedLeftSemi, Left: "l", Right: "r"}).Validate(); err == nil {
		t.Error("a temporal semi join is valid")
	}
	if typ, err := ParseTimedJoinType("semi"); err != nil || typ != TimedLeftSemi || typ.String() != "semi" {
		t.Errorf("parse semi: %v %v", typ, err)
	}
}
