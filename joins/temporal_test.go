package joins

import (
	"strconv"
	"strings"
	"testing"

	"github.com/joinery/joinery/record"
)

func temporalDriver(t testing.TB, typ TimedJoinType) *tdriver {
	t.Helper()
	spec := &TemporalSpec{Type: typ, Left: "visit", Right: "ad"}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return newDriver(t, func() Timed { return NewTemporal(spec) })
}

// D is a delete of the versioned side at ts (an element with a nil Row).
func (d *tdriver) del(ts int64) {
	d.t.Helper()
	d.j.OnElement(Element{Side: rt, Ts: ts, Pos: record.Position{Source: "right", Offset: d.offs[rt]}}, d.wm, &d.fx)
	d.offs[rt]++
	d.effects()
}

func TestJoinTemporalVersionChoice(t *testing.T) {
	// seed dynamic-joiner-watermarks: a probe at t joins the version with the
	// greatest version time <= t; a delete ends the version before it.
	for _, c := range []struct {
		typ  TimedJoinType
		want []string
	}{
		{TimedInner, []string{"10 p10,v10", "15 p15,v10", "20 p20,v20", "25 p25,v20", "40 p40,v40", "45 p45,v40"}},
		{TimedLeftOuter, []string{"5 p5,-", "10 p10,v10", "15 p15,v10", "20 p20,v20", "25 p25,v20", "30 p30,-", "35 p35,-", "40 p40,v40", "45 p45,v40"}},
	} {
		t.Run(c.typ.String(), func(t *testing.T) {
			d := temporalDriver(t, c.typ)
			d.script(E(rt, 10, "v10"), E(rt, 20, "v20"))
			d.del(30)
			d.script(E(rt, 40, "v40"))
			for _, ts := range []int64{45, 5, 10, 15, 20, 25, 30, 35, 40} {
				d.script(E(lt, ts, "p"+strconv.FormatInt(ts, 10)))
			}
			d.script(W(1000))
			eqLines(t, "outputs", fmtPairs(t, "visit", "ad", d.take()), c.want)
			// Only the newest version stays: a probe can still reach it.
			if got := string(d.j.Snapshot()); !strings.Contains(got, "v40") || strings.Contains(got, "v20") || d.j.Empty() {
				t.Fatalf("state %q", got)
			}
		})
	}
}

func TestJoinTemporalWatermark(t *testing.T) {
	d := temporalDriver(t, TimedLeftOuter)
	// A probe at 15 waits until the watermark passes 15: a version at exactly
	// the watermark is still on time and is taken.
	d.script(E(rt, 10, "v10"), E(lt, 15, "p15"), W(15))
	if len(d.out) != 0 {
		t.Fatalf("emitted at watermark 15: %v", d.out)
	}
	d.script(E(rt, 15, "v15"), W(16))
	outs := d.take()
	eqLines(t, "outputs", fmtPairs(t, "visit", "ad", outs), []string{"15 p15,v15"})
	if outs[0].ID != "temporal|left/0@0|right/0@1|15|0" {
		t.Fatalf("id %q", outs[0].ID)
	}
	// Elements below the watermark are late, on both sides.
	d.script(E(rt, 12, "v12"), E(lt, 14, "p14"))
	eqLines(t, "late", fmtLate(d.late), []string{"12 v12 behind-watermark", "14 p14 behind-watermark"})
	// At equal version times the later arrival wins, a delete included.
	d.script(E(rt, 20, "a"), E(rt, 20, "b"), E(lt, 20, "p20"), W(21))
	eqLines(t, "same time", fmtPairs(t, "visit", "ad", d.take()), []string{"20 p20,b"})
	d.script(E(rt, 30, "c"))
	d.del(30)
	d.script(E(lt, 31, "p31"), W(40))
	eqLines(t, "deleted at the same time", fmtPairs(t, "visit", "ad", d.take()), []string{"31 p31,-"})
}

func TestJoinTemporalVersionDrop(t *testing.T) {
	d := temporalDriver(t, TimedInner)
	d.script(E(rt, 10, "v10"), E(rt, 20, "v20"), E(rt, 30, "v30"), W(25))
	// Every probe from now on is at >= 25: v10 is out of reach.
	if got := string(d.j.Snapshot()); strings.Contains(got, "v10") || !strings.Contains(got, "v20") {
		t.Fatalf("state %q after watermark 25", got)
	}
	d.del(40)
	d.script(W(40))
	if !d.j.Empty() {
		t.Fatalf("state %q: the delete at 40 leaves nothing reachable", d.j.Snapshot())
	}
	// A delete before any version is kept until no older version can come.
	d = temporalDriver(t, TimedLeftOuter)
	d.del(50)
	d.script(E(rt, 45, "v45"), E(lt, 47, "p47"), E(lt, 52, "p52"), W(100))
	eqLines(t, "delete after a late-arriving older version", fmtPairs(t, "visit", "ad", d.take()), []string{"47 p47,v45", "52 p52,-"})
	if !d.j.Empty() || len(d.timers) != 0 {
		t.Fatalf("state %q timers %v", d.j.Snapshot(), d.timers)
	}
}

func TestJoinTemporalSpecValidate(t *testing.T) {
	err := (&TemporalSpec{Type: TimedFullOuter, Left: "a", Right: ""}).Validate()
	for _, w := range []string{"type: must be inner or left", "right: must not be empty"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%v lacks %q", err, w)
		}
	}
}

func TestJoinTemporalLatest(t *testing.T) {
	spec := &TemporalSpec{Type: TimedLeftOuter, Left: "visit", Right: "ad"}
	d := newDriver(t, func() Timed { return NewTemporalLatest(spec) })
	// Processing time: the version current at arrival, emitted at once,
	// whatever the times.
	d.script(E(lt, 5, "p1"), E(rt, 100, "v1"), E(lt, 7, "p2"), E(rt, 1, "v2"), E(lt, 8, "p3"))
	d.del(0)
	d.script(E(lt, 9, "p4"))
	eqLines(t, "outputs", fmtPairs(t, "visit", "ad", d.take()), []string{"5 p1,-", "7 p2,v1", "8 p3,v2", "9 p4,-"})
	if !d.j.Empty() || len(d.timers) != 0 || len(d.late) != 0 {
		t.Fatal("state, timers or late left")
	}
	d.script(E(rt, 3, "v3"))
	if got := string(d.j.Snapshot()); got != "\x01P"+`{"v":{"t":3,"p":{"source":"right","partition":0,"offset":3},"r":{"n":"v3"}}}` {
		t.Fatalf("snapshot %q", got)
	}
	checkRestoreErrors(t, d.j, "\x01P"+`{"v":{"t":3}}`)
}

func TestJoinTemporalSnapshot(t *testing.T) {
	d := temporalDriver(t, TimedInner)
	d.script(E(rt, 10, "v"), E(lt, 12, "p"))
	d.del(20)
	want := "\x01T" + `{"v":[{"t":10,"p":{"source":"right","partition":0,"offset":0},"r":{"n":"v"}},` +
		`{"t":20,"p":{"source":"right","partition":0,"offset":1},"r":null}],` +
		`"p":[{"t":12,"p":{"source":"left","partition":0,"offset":0},"r":{"n":"p"}}]}`
	if got := string(d.j.Snapshot()); got != want {
		t.Fatalf("snapshot\n%q\nwant\n%q", got, want)
	}
	checkRestoreErrors(t, d.j,
		"\x01T"+`{"v":[{"t":10,"r":{}},{"t":10,"r":{}}]}`,
		"\x01T"+`{"p":[{"t":10,"r":{}},{"t":9,"r":{}}]}`,
		"\x01T"+`{"p":[{"t":10}]}`)
}

func FuzzTemporalRestore(f *testing.F) {
	spec := &TemporalSpec{Type: TimedLeftOuter, Left: "visit", Right: "ad"}
	d := newDriver(f, func() Timed { return NewTemporal(spec) })
	d.script(E(rt, 10, "v"), E(lt, 12, "p"))
	d.del(20)
	f.Add(d.j.Snapshot())
	f.Add([]byte("\x01T{\"v\":[{\"t\":1,\"r\":null}],\"p\":null}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRestore(t, func() Timed { return NewTemporal(spec) }, b)
	})
}

func FuzzTemporalLatestRestore(f *testing.F) {
	spec := &TemporalSpec{Type: TimedLeftOuter, Left: "visit", Right: "ad"}
	j := NewTemporalLatest(spec)
	var fx Effects
	j.OnElement(Element{Side: rt, Ts: 3, Row: named("v")}, 0, &fx)
	f.Add(j.Snapshot())
	f.Add([]byte("\x01P{\"v\":null}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRestore(t, func() Timed { return NewTemporalLatest(spec) }, b)
	})
}

func BenchmarkTemporalJoin(b *testing.B) {
	spec := &TemporalSpec{Type: TimedLeftOuter, Left: "visit", Right: "ad"}
	b.Run("event-time", func(b *testing.B) { benchTimed(b, func() Timed { return NewTemporal(spec) }) })
	b.Run("latest", func(b *testing.B) { benchTimed(b, func() Timed { return NewTemporalLatest(spec) }) })
}

// TestJoinTemporalLatestKafka: Kafka Streams' KStream-KTable rules. A
// probe without a row is dropped (null-value); a version without one is a
// tombstone; at NullKey (a null-key probe of a left join, KIP-962) no
// version is there, so the probe comes out padded.
func TestJoinTemporalLatestKafka(t *testing.T) {
	spec := &TemporalSpec{Type: TimedLeftOuter, Left: "s", Right: "t", Semantics: SemanticsKafka}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, func() Timed { return NewTemporalLatest(spec) })
	d.script(E(rt, 0, "y0"), E(lt, 1, "x1"))
	d.el(lt, 2, nil)
	d.el(rt, 3, nil) // tombstone
	d.script(E(lt, 4, "x4"))
	eqLines(t, "outputs", fmtPairs(t, "s", "t", d.take()), []string{"1 x1,y0", "4 x4,-"})
	if len(d.late) != 1 || d.late[0].Reason != LateNullValue || d.late[0].Element.Ts != 2 {
		t.Fatalf("late %v", fmtLate(d.late))
	}
	if s, err := ParseTemporalSemantics("kafka"); err != nil || s != SemanticsKafka || s.String() != "kafka" {
		t.Errorf("parse kafka: %v %v", s, err)
	}
}
