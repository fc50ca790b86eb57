package joins

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/joinery/joinery/record"
)

// tdriver drives one key of an event-time join as a key actor would: it keeps
// the watermark and a timer set, fires due timers in order when the watermark
// advances, and collects outputs and late elements. With restoreEvery > 0 it
// replaces the join by a restored copy of its snapshot at random points.
type tdriver struct {
	t       testing.TB
	j       Timed
	fresh   func() Timed // a new empty join of the same spec
	wm      int64
	timers  map[int64]bool
	out     []record.Output
	late    []Late
	fx      Effects
	offs    [2]int64
	rng     *rand.Rand
	restore float64 // probability of a snapshot/restore after a step
}

func newDriver(t testing.TB, fresh func() Timed) *tdriver {
	return &tdriver{t: t, j: fresh(), fresh: fresh, wm: math.MinInt64, timers: map[int64]bool{}}
}

func (d *tdriver) effects() {
	d.t.Helper()
	for _, ts := range d.fx.SetTimers {
		d.timers[ts] = true
	}
	for _, ts := range d.fx.DelTimers {
		if !d.timers[ts] {
			d.t.Fatalf("deleted timer %d that was not set", ts)
		}
		delete(d.timers, ts)
	}
	d.out = append(d.out, d.fx.Out...)
	d.late = append(d.late, d.fx.Late...)
	d.fx.Reset()
	// Every step: the hand-written snapshot (cached element JSON, filled
	// by earlier steps) is still the reflective encoding's bytes.
	checkSnapshotExact(d.t, d.j)
	if d.rng != nil && d.rng.Float64() < d.restore {
		snap := d.j.Snapshot()
		k := d.fresh()
		if err := k.Restore(snap); err != nil {
			d.t.Fatalf("restore of %q: %v", snap, err)
		}
		if again := k.Snapshot(); !bytes.Equal(again, snap) {
			d.t.Fatalf("snapshot round trip\n%q\n%q", snap, again)
		}
		d.j = k
	}
}

// el feeds one element; its position is side/0@n, n counting per side.
func (d *tdriver) el(side record.Side, ts int64, row record.Row) {
	d.t.Helper()
	pos := record.Position{Source: side.String(), Offset: d.offs[side&1]}
	d.offs[side&1]++
	d.j.OnElement(Element{Side: side, Ts: ts, Row: row, Pos: pos}, d.wm, &d.fx)
	d.effects()
}

// advance moves the watermark to wm (never back) and fires due timers in
// order, including timers set while firing.
func (d *tdriver) advance(wm int64) {
	d.t.Helper()
	if wm > d.wm {
		d.wm = wm
	}
	for {
		next, ok := int64(0), false
		for ts := range d.timers {
			if ts <= d.wm && (!ok || ts < next) {
				next, ok = ts, true
			}
		}
		if !ok {
			return
		}
		delete(d.timers, next)
		d.j.OnTimer(next, d.wm, &d.fx)
		d.effects()
	}
}

// take returns and forgets the outputs so far.
func (d *tdriver) take() []record.Output {
	o := d.out
	d.out = nil
	return o
}

// named is a row {"n": name}.
func named(n string) record.Row { return record.Row{"n": n} }

// fmtPair formats an output of a pair row {left: {"n"}, right: {"n"}} as
// "ts l,r" with "-" for a padded side.
func fmtPair(t testing.TB, left, right string, o record.Output) string {
	t.Helper()
	name := func(col string) string {
		v, ok := o.Row[col]
		if !ok {
			t.Fatalf("row %v lacks column %q", o.Row, col)
		}
		if v == nil {
			return "-"
		}
		r, ok := v.(record.Row)
		if !ok {
			t.Fatalf("column %q is %T", col, v)
		}
		return fmt.Sprint(r["n"])
	}
	return fmt.Sprintf("%d %s,%s", o.Ts, name(left), name(right))
}

func fmtPairs(t testing.TB, left, right string, outs []record.Output) []string {
	t.Helper()
	s := make([]string, len(outs))
	for i, o := range outs {
		s[i] = fmtPair(t, left, right, o)
	}
	return s
}

func fmtLate(ls []Late) []string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = fmt.Sprintf("%d %v %s", l.Element.Ts, l.Element.Row["n"], l.Reason)
	}
	return s
}

func eqLines(t testing.TB, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s\n%s", what, diffLines(got, want))
	}
}

// multiset formats outputs as sorted "id ts row" lines.
func multiset(outs []record.Output) []string {
	s := make([]string, len(outs))
	for i, o := range outs {
		s[i] = fmt.Sprintf("%s %d %v", o.ID, o.Ts, o.Row)
	}
	slices.Sort(s)
	return s
}

// dedup sorts and removes repeated lines.
func dedup(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// randomStream is a random arrival-ordered input with bounded
// out-of-orderness: times drift upwards, most elements come at most `bound`
// behind the largest time seen, a few come later than that (late), and the
// watermark (max seen - bound) advances at random points.
type rstep struct {
	advance bool
	wm      int64
	side    record.Side
	ts      int64
	name    string
}

func randomStream(rng *rand.Rand, n int, bound int64) []rstep {
	var steps []rstep
	var maxTs int64
	base := int64(rng.Intn(20)) - 10
	for i := range n {
		base += int64(rng.Intn(3))
		ts := base + int64(rng.Intn(int(bound)+1))
		if rng.Intn(12) == 0 {
			ts -= int64(rng.Intn(int(3 * bound)))
		}
		side := record.Side(rng.Intn(2))
		steps = append(steps, rstep{side: side, ts: ts, name: fmt.Sprintf("%c%d", "lr"[side], i)})
		maxTs = max(maxTs, ts)
		if rng.Intn(4) == 0 {
			steps = append(steps, rstep{advance: true, wm: maxTs - bound})
		}
	}
	return steps
}

// run drives a random stream, then advances the watermark to final. It
// returns, per element name, the watermark at its arrival.
func (d *tdriver) run(steps []rstep, final int64) map[string]int64 {
	d.t.Helper()
	arrival := map[string]int64{}
	for _, s := range steps {
		if s.advance {
			d.advance(s.wm)
			continue
		}
		arrival[s.name] = d.wm
		d.el(s.side, s.ts, named(s.name))
	}
	d.advance(final)
	return arrival
}

// oracleElem is an element as the oracles see it.
type oracleElem struct {
	side record.Side
	ts   int64
	name string
	pos  record.Position
	wm   int64 // watermark at arrival
}

func oracleElems(steps []rstep, arrival map[string]int64) (ls, rs []oracleElem) {
	var offs [2]int64
	for _, s := range steps {
		if s.advance {
			continue
		}
		e := oracleElem{side: s.side, ts: s.ts, name: s.name, wm: arrival[s.name],
			pos: record.Position{Source: s.side.String(), Offset: offs[s.side]}}
		offs[s.side]++
		if s.side == record.Left {
			ls = append(ls, e)
		} else {
			rs = append(rs, e)
		}
	}
	return ls, rs
}

// oracleOut formats an expected pair output as multiset does.
func oracleOut(kind string, l, r *oracleElem, extra, ts int64, left, right string) string {
	var lp, rp *record.Position
	row := record.Row{left: nil, right: nil}
	if l != nil {
		lp, row[left] = &l.pos, named(l.name)
	}
	if r != nil {
		rp, row[right] = &r.pos, named(r.name)
	}
	id, _ := outputID(kind, lp, rp, extra, 0)
	return fmt.Sprintf("%s %d %v", id, ts, row)
}

func TestTimedOutputID(t *testing.T) {
	l := record.Position{Source: "orange", Offset: 2}
	r := record.Position{Source: "green", Partition: 1, Offset: 3}
	id, pk := outputID("window", &l, &r, 4, 0)
	if id != "window|orange/0@2|green/1@3|4|0" || pk != `["orange/0@2","green/1@3",4,0]` {
		t.Fatalf("id %q pk %q", id, pk)
	}
	id, pk = outputID("outer", &l, nil, -7, 1)
	if id != "outer|orange/0@2|-|-7|1" || pk != `["orange/0@2",null,-7,1]` {
		t.Fatalf("id %q pk %q", id, pk)
	}
}

func TestTimedSatArithmetic(t *testing.T) {
	for _, c := range []struct{ a, b, sum, diff int64 }{
		{1, 2, 3, -1},
		{math.MaxInt64, 1, math.MaxInt64, math.MaxInt64 - 1},
		{math.MinInt64, -1, math.MinInt64, math.MinInt64 + 1},
		{0, math.MinInt64, math.MinInt64, math.MaxInt64},
	} {
		if got := addSat(c.a, c.b); got != c.sum {
			t.Errorf("addSat(%d, %d) = %d, want %d", c.a, c.b, got, c.sum)
		}
		if got := subSat(c.a, c.b); got != c.diff {
			t.Errorf("subSat(%d, %d) = %d, want %d", c.a, c.b, got, c.diff)
		}
	}
}

// checkRestoreErrors feeds bad snapshots to a join and checks the state is
// unchanged.
func checkRestoreErrors(t *testing.T, j Timed, extra ...string) {
	t.Helper()
	before := j.Snapshot()
	bad := append([]string{"", "\x00", "\x02W{}", "\x01", "\x01Z{}", "\x01W{", "\x01I{", "\x01O{", "\x01T{", "\x01P{",
		"\x01W[]", "\x01I[]", "\x01O[]", "\x01T[]", "\x01P[]", "\x01W{\"x\":1}", "\x01I{\"x\":1}", "\x01O{\"x\":1}",
		"\x01T{\"x\":1}", "\x01P{\"x\":1}"}, extra...)
	bad = append(bad, string(before)+" {}")
	for _, b := range bad {
		if err := j.Restore([]byte(b)); err == nil {
			t.Errorf("Restore(%q) accepted", b)
		} else if !strings.Contains(err.Error(), ErrBadTimedSnapshot.Error()) {
			t.Errorf("Restore(%q): %v, want ErrBadTimedSnapshot", b, err)
		}
		if after := j.Snapshot(); !bytes.Equal(after, before) {
			t.Fatalf("failed Restore(%q) changed the state to %q", b, after)
		}
	}
}

// fuzzRestore is the body of every Restore fuzz test: no panic, a failed
// restore leaves an empty join empty, a snapshot of a restored state
// round-trips (and is the reflective encoding's bytes, before and after
// the state is used), and the restored state is usable.
func fuzzRestore(t *testing.T, fresh func() Timed, b []byte) {
	j := fresh()
	if err := j.Restore(b); err != nil {
		if !j.Empty() {
			t.Fatal("failed restore left state behind")
		}
		return
	}
	checkSnapshotExact(t, j)
	s1 := j.Snapshot()
	k := fresh()
	if err := k.Restore(s1); err != nil {
		t.Fatalf("restore of a snapshot %q: %v", s1, err)
	}
	if s2 := k.Snapshot(); !bytes.Equal(s1, s2) {
		t.Fatalf("round trip\n%q\n%q", s1, s2)
	}
	var fx Effects
	j.OnElement(Element{Side: record.Left, Ts: 5, Row: named("x")}, 0, &fx)
	j.OnElement(Element{Side: record.Right, Ts: 6, Row: named("y")}, 0, &fx)
	checkSnapshotExact(t, j)
	for _, ts := range []int64{0, 10, 100, math.MaxInt64} {
		j.OnTimer(ts, ts, &fx)
		checkSnapshotExact(t, j)
	}
}

// benchTimed measures OnElement plus timers over a stream of n keys' worth of
// random elements, reporting events/s.
func benchTimed(b *testing.B, fresh func() Timed) {
	rng := rand.New(rand.NewSource(1))
	steps := randomStream(rng, 1<<12, 20)
	rows := make([]record.Row, len(steps))
	for i, s := range steps {
		rows[i] = named(s.name)
	}
	b.ReportAllocs()
	b.ResetTimer()
	events, outputs := 0, 0
	var d *tdriver
	for i := 0; i < b.N; i++ {
		k := i % len(steps)
		if k == 0 {
			if d != nil {
				d.advance(math.MaxInt64)
			}
			d = newDriver(b, fresh)
		}
		s := steps[k]
		if s.advance {
			d.advance(s.wm)
		} else {
			d.el(s.side, s.ts, rows[k])
			events++
		}
		outputs += len(d.out)
		d.out = d.out[:0]
		d.late = d.late[:0]
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(outputs)/float64(max(events, 1)), "outputs/event")
}
