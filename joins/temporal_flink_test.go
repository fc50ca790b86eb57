package joins

import (
	"fmt"
	"math/rand"
	randv2 "math/rand/v2"
	"testing"

	"github.com/joinery/joinery/record"
)

func flinkTemporalDriver(t testing.TB, typ TimedJoinType) *tdriver {
	t.Helper()
	spec := &TemporalSpec{Type: typ, Left: "visit", Right: "ad", Semantics: SemanticsFlink}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, ok := NewTemporalJoin(spec).(*TemporalFlink); !ok {
		t.Fatal("NewTemporalJoin does not pick TemporalFlink")
	}
	return newDriver(t, func() Timed { return NewTemporalJoin(spec) })
}

// kel feeds an element with a row kind (a nil row for a version's -U/-D).
func (d *tdriver) kel(side record.Side, ts int64, name string, k record.Kind) {
	d.t.Helper()
	pos := record.Position{Source: side.String(), Offset: d.offs[side&1]}
	d.offs[side&1]++
	d.j.OnElement(Element{Side: side, Ts: ts, Row: named(name), Pos: pos, Kind: k}, d.wm, &d.fx)
	d.effects()
}

// fmtKinds is fmtPairs with each output's row kind in front.
func fmtKinds(t testing.TB, outs []record.Output) []string {
	s := fmtPairs(t, "visit", "ad", outs)
	for i, o := range outs {
		s[i] = o.Kind.String() + " " + s[i]
	}
	return s
}

// TestJoinTemporalFlinkOperatorTest transcribes Flink's
// TemporalRowTimeJoinOperatorTest (flink-table-runtime):
// testRowTimeTemporalJoin, testRowTimeLeftTemporalJoin and the two
// OnUpsertSource tests, one key at a time (the harness is keyed by the
// second field; here each key is its own machine, outputs merged by
// watermark in Flink's order, which is per key here).
func TestJoinTemporalFlinkOperatorTest(t *testing.T) {
	type step struct {
		side  record.Side
		ts    int64
		name  string
		kind  record.Kind
		wm    int64 // a watermark step when name is ""
		key   string
		upser bool // only in the OnUpsertSource variant
		plain bool // only in the plain variant
	}
	I, UB, UA, D := record.Insert, record.UpdateBefore, record.UpdateAfter, record.Delete
	steps := func(upsert bool) []step {
		all := []step{
			{wm: 1},
			{side: lt, ts: 1, name: "1a1", kind: I, key: "k1"},
			{side: rt, ts: 2, name: "1a2", kind: I, key: "k1"},
			{wm: 2},
			{side: lt, ts: 1, name: "1a1", kind: I, key: "k1", plain: true},
			{side: lt, ts: 3, name: "1a3", kind: I, key: "k1", plain: true},
			{side: lt, ts: 3, name: "1a3", kind: UA, key: "k1", upser: true},
			{side: rt, ts: 4, name: "2a4", kind: I, key: "k2"},
			{wm: 5},
			{side: lt, ts: 6, name: "2a3", kind: I, key: "k2"},
			{side: rt, ts: 7, name: "2a4", kind: UB, key: "k2", plain: true},
			{side: rt, ts: 7, name: "2a5", kind: UA, key: "k2"},
			{wm: 8}, // processWatermark1(8), processWatermark2(9)
			{side: lt, ts: 9, name: "5a11", kind: I, key: "k2"},
			{side: lt, ts: 11, name: "5a12", kind: I, key: "k2"},
			{side: rt, ts: 9, name: "2a5", kind: D, key: "k2"},
			{side: rt, ts: 10, name: "2a6", kind: I, key: "k2"},
			{wm: 9}, // processWatermark1(13): the combined watermark is 9
			{wm: 13},
		}
		var out []step
		for _, s := range all {
			if (s.upser && !upsert) || (s.plain && upsert) {
				continue
			}
			out = append(out, s)
		}
		return out
	}
	for _, c := range []struct {
		name   string
		typ    TimedJoinType
		upsert bool
		want   []string // per watermark, "wm: kind ts l,r"
	}{
		{"testRowTimeTemporalJoin", TimedInner, false, []string{
			"5: +I 3 1a3,1a2", "8: +I 6 2a3,2a4", "13: +I 11 5a12,2a6"}},
		{"testRowTimeLeftTemporalJoin", TimedLeftOuter, false, []string{
			"2: +I 1 1a1,-", "5: +I 1 1a1,-", "5: +I 3 1a3,1a2", "8: +I 6 2a3,2a4", "9: +I 9 5a11,-", "13: +I 11 5a12,2a6"}},
		{"testRowTimeTemporalJoinOnUpsertSource", TimedInner, true, []string{
			"5: +U 3 1a3,1a2", "8: +I 6 2a3,2a4", "13: +I 11 5a12,2a6"}},
		{"testRowTimeLeftTemporalJoinOnUpsertSource", TimedLeftOuter, true, []string{
			"2: +I 1 1a1,-", "5: +U 3 1a3,1a2", "8: +I 6 2a3,2a4", "9: +I 9 5a11,-", "13: +I 11 5a12,2a6"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			keys := map[string]*tdriver{"k1": flinkTemporalDriver(t, c.typ), "k2": flinkTemporalDriver(t, c.typ)}
			var got []string
			for _, s := range steps(c.upsert) {
				if s.name == "" {
					for _, k := range []string{"k1", "k2"} {
						keys[k].advance(s.wm)
						for _, line := range fmtKinds(t, keys[k].take()) {
							got = append(got, fmt.Sprintf("%d: %s", s.wm, line))
						}
					}
					continue
				}
				keys[s.key].kel(s.side, s.ts, s.name, s.kind)
			}
			eqLines(t, "outputs", got, c.want)
			for k, d := range keys {
				if len(d.late) > 0 {
					t.Errorf("key %s: late %v", k, fmtLate(d.late))
				}
			}
		})
	}
}

// TestJoinTemporalFlinkLateAndCleanup: a late probe joins the version valid
// at its time while that version is kept, and a late version is kept until
// a firing's cleanup drops it.
func TestJoinTemporalFlinkLateAndCleanup(t *testing.T) {
	d := flinkTemporalDriver(t, TimedLeftOuter)
	d.script(E(rt, 10, "v10"), E(rt, 20, "v20"), E(lt, 25, "p25"), W(25))
	eqLines(t, "on time, at t == watermark", fmtKinds(t, d.take()), []string{"+I 25 p25,v20"})
	// v10 is gone (older than v20, the newest at or before 25); a late probe
	// at 15 finds nothing older than v20 and is padded.
	d.script(E(lt, 15, "p15"), E(lt, 22, "p22"), W(26))
	eqLines(t, "late probes", fmtKinds(t, d.take()), []string{"+I 15 p15,-", "+I 22 p22,v20"})
	// A late version at 21 is kept and joins a late probe at 23 at the next
	// firing; that firing drops v20 and keeps v21.
	d.script(E(rt, 21, "v21"), E(lt, 23, "p23"), E(lt, 21, "p21"), W(27))
	eqLines(t, "late version, arrival order", fmtKinds(t, d.take()), []string{"+I 23 p23,v21", "+I 21 p21,v21"})
	d.script(E(lt, 20, "p20"), W(28))
	eqLines(t, "cleaned up", fmtKinds(t, d.take()), []string{"+I 20 p20,-"})
	// A delete is kept as the newest version at or before the watermark, so
	// a late version before it cannot come back for later probes.
	d.kel(rt, 30, "x", record.Delete)
	d.script(W(40), E(rt, 29, "v29"), E(lt, 35, "p35"), W(41))
	eqLines(t, "deleted", fmtKinds(t, d.take()), []string{"+I 35 p35,-"})
	if len(d.late) != 0 {
		t.Fatalf("late %v", fmtLate(d.late))
	}
}

// TestJoinTemporalFlinkOneTimer: like Flink, a key keeps one timer, at the
// smallest time since the last firing; a version newer than it sets none.
func TestJoinTemporalFlinkOneTimer(t *testing.T) {
	d := flinkTemporalDriver(t, TimedInner)
	d.script(E(rt, 2, "v2"), E(rt, 10, "v10"), E(lt, 7, "p7"))
	if len(d.timers) != 1 || !d.timers[2] {
		t.Fatalf("timers %v, want {2}", d.timers)
	}
	d.script(W(5))
	if len(d.timers) != 1 || !d.timers[7] {
		t.Fatalf("after firing at 5: timers %v, want {7} (the oldest probe left)", d.timers)
	}
	// Watermark 12 fires 7: p7 joins v2, then v2 goes (v10 is the newest at
	// or before 12) and no timer is left.
	d.script(W(12))
	eqLines(t, "p7", fmtKinds(t, d.take()), []string{"+I 7 p7,v2"})
	if len(d.timers) != 0 {
		t.Fatalf("timers %v, want none", d.timers)
	}
}

// TestJoinTemporalFlinkSnapshot restores the state after random steps and
// checks the outputs equal those of a run without restores.
func TestJoinTemporalFlinkSnapshot(t *testing.T) {
	run := func(restore float64) []string {
		d := flinkTemporalDriver(t, TimedLeftOuter)
		d.rng, d.restore = rand.New(rand.NewSource(1)), restore
		gen := randv2.New(randv2.NewPCG(5, 6))
		kinds := []record.Kind{record.Insert, record.UpdateAfter, record.UpdateBefore, record.Delete}
		for i := range 400 {
			ts := int64(i) + int64(gen.IntN(40)) - 20
			switch gen.IntN(5) {
			case 0:
				d.script(W(int64(i) - 10))
			case 1, 2:
				d.kel(rt, ts, fmt.Sprint("v", i), kinds[gen.IntN(4)])
			default:
				d.kel(lt, ts, fmt.Sprint("p", i), kinds[gen.IntN(4)])
			}
		}
		d.script(W(1 << 40))
		return fmtKinds(t, d.take())
	}
	plain, restored := run(0), run(0.5)
	if len(plain) < 100 {
		t.Fatalf("only %d outputs", len(plain))
	}
	eqLines(t, "with restores", restored, plain)
	if err := NewTemporalFlink(&TemporalSpec{}).Restore([]byte("\x01F{\"v\":[],\"p\":[{\"t\":1,\"p\":{\"source\":\"\",\"partition\":0,\"offset\":0},\"r\":{}}]}")); err == nil {
		t.Fatal("probes without a timer restored")
	}
}

func FuzzTemporalFlinkRestore(f *testing.F) {
	spec := &TemporalSpec{Type: TimedLeftOuter, Left: "visit", Right: "ad", Semantics: SemanticsFlink}
	d := flinkTemporalDriver(f, TimedLeftOuter)
	d.kel(rt, 10, "v", record.UpdateAfter)
	d.kel(lt, 12, "p", record.Delete)
	f.Add(d.j.Snapshot())
	f.Add([]byte("\x01F{\"v\":[{\"t\":1,\"r\":null,\"k\":\"-D\"}],\"p\":null,\"tm\":3}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRestore(t, func() Timed { return NewTemporalFlink(spec) }, b)
	})
}
