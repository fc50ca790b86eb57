package joins

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/joinery/joinery/record"
)

const (
	lt = record.Left
	rt = record.Right
)

type tel struct {
	side record.Side
	ts   int64
	name string
}

// wstep is one step of a deterministic script: an element, or (wm set) a
// watermark advance.
type wstep struct {
	el tel
	wm *int64
}

func E(side record.Side, ts int64, name string) wstep { return wstep{el: tel{side, ts, name}} }
func W(wm int64) wstep                                { return wstep{wm: &wm} }

func (d *tdriver) script(steps ...wstep) {
	d.t.Helper()
	for _, s := range steps {
		if s.wm != nil {
			d.advance(*s.wm)
		} else {
			d.el(s.el.side, s.el.ts, named(s.el.name))
		}
	}
}

func windowSpec(a Assigner, lateness int64) *WindowJoinSpec {
	return &WindowJoinSpec{Left: "orange", Right: "green", Assigner: a, AllowedLateness: lateness}
}

func windowDriver(t testing.TB, spec *WindowJoinSpec) *tdriver {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return newDriver(t, func() Timed { return NewWindowJoin(spec) })
}

func TestJoinWindowAssigners(t *testing.T) {
	for _, c := range []struct {
		name string
		a    Assigner
		ts   int64
		want string
	}{
		// seed flink-joining: tumbling size 2 gives [0,1], [2,3], ... i.e. [0,2), [2,4).
		{"tumbling 2 at 0", Tumbling(2, 0), 0, "[0,2)"},
		{"tumbling 2 at 3", Tumbling(2, 0), 3, "[2,4)"},
		{"tumbling negative time", Tumbling(2, 0), -1, "[-2,0)"},
		// start = ts - ((ts - offset) % size + size) % size
		{"tumbling offset 3 below", Tumbling(10, 3), 2, "[-7,3)"},
		{"tumbling offset 3 at", Tumbling(10, 3), 3, "[3,13)"},
		{"tumbling negative offset", Tumbling(10, -3), 8, "[7,17)"},
		// seed flink-joining: sliding size 2 slide 1 gives [-1,0], [0,1], [1,2], ...
		{"sliding 2/1 at 0", Sliding(2, 1, 0), 0, "[-1,1) [0,2)"},
		{"sliding 2/1 at 2", Sliding(2, 1, 0), 2, "[1,3) [2,4)"},
		{"sliding 10/3: ceil(10/3) windows", Sliding(10, 3, 0), 9, "[0,10) [3,13) [6,16) [9,19)"},
		{"sliding with offset", Sliding(10, 5, 2), 6, "[-3,7) [2,12)"},
		{"sliding slide > size: a gap", Sliding(2, 5, 0), 3, ""},
		{"sliding slide > size: covered", Sliding(2, 5, 0), 6, "[5,7)"},
		{"session", Session(3), 4, "[4,7)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.a.Validate(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range c.a.Assign(c.ts, nil) {
				got = append(got, w.String())
			}
			if s := strings.Join(got, " "); s != c.want {
				t.Fatalf("Assign(%d) = %s, want %s", c.ts, s, c.want)
			}
		})
	}
}

func TestJoinWindowAssignerValidate(t *testing.T) {
	for _, c := range []struct {
		a    Assigner
		want []string
	}{
		{Tumbling(0, 0), []string{"size: must be positive"}},
		{Tumbling(5, 5), []string{"offset: must be within (-size, size)"}},
		{Tumbling(5, -5), []string{"offset: must be within (-size, size)"}},
		{Sliding(0, 0, 0), []string{"size: must be positive", "slide: must be positive"}},
		{Sliding(10, 5, 6), []string{"offset: must be within (-slide, slide)"}},
		{Session(0), []string{"gap: must be positive"}},
		{Assigner{}, []string{"kind: unknown window assigner"}},
	} {
		err := c.a.Validate()
		if err == nil {
			t.Errorf("%+v: no error", c.a)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v lacks %q", c.a, err, w)
			}
		}
	}
}

func TestJoinWindowSpecValidate(t *testing.T) {
	ok := windowSpec(Tumbling(2, 0), 0)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := &WindowJoinSpec{Type: 9, Left: "a", Right: "a", Assigner: Session(-1), AllowedLateness: -1,
		Join: func(l, r record.Row) record.Row { return nil }, FlatJoin: func(l, r record.Row) []record.Row { return nil },
		Project: []Column{{Name: "", Side: 7}}}
	err := bad.Validate()
	for _, w := range []string{"type: unknown join type 9", "assigner.gap: must be positive", "allowed_lateness: must not be negative",
		"flat_join: must not be set together with join", "project: must be empty", "project[0].name: must not be empty",
		"project[0].side: must be left or right", "project[0].field: must not be empty"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%v lacks %q", err, w)
		}
	}
	err = (&WindowJoinSpec{Left: "a", Right: "a", Assigner: Session(1)}).Validate()
	if err == nil || !strings.Contains(err.Error(), `right: must differ from left "a"`) {
		t.Errorf("same names: %v", err)
	}
	err = (&CoGroupSpec{Assigner: Tumbling(1, 0)}).Validate()
	if err == nil || !strings.Contains(err.Error(), "func: must be set") {
		t.Errorf("coGroup without func: %v", err)
	}
}

func TestJoinWindowSeedExamples(t *testing.T) {
	for _, c := range []struct {
		name  string
		a     Assigner
		steps []wstep
		want  []string
	}{{
		// seed flink-joining: tumbling 2 ms windows [0,1], [2,3], ...; pairs are
		// stamped with the window's largest time; window [6,7] has orange 6 and 7
		// but no green, so it emits nothing (inner join).
		name: "tumbling", a: Tumbling(2, 0),
		steps: []wstep{E(lt, 0, "o0"), E(lt, 1, "o1"), E(rt, 0, "g0"), E(rt, 1, "g1"), E(lt, 2, "o2"), E(lt, 3, "o3"),
			E(rt, 3, "g3"), E(lt, 4, "o4"), E(lt, 5, "o5"), E(rt, 4, "g4"), E(rt, 5, "g5"), E(lt, 6, "o6"), E(lt, 7, "o7"), W(100)},
		want: []string{"1 o0,g0", "1 o0,g1", "1 o1,g0", "1 o1,g1", "3 o2,g3", "3 o3,g3", "5 o4,g4", "5 o4,g5", "5 o5,g4", "5 o5,g5"},
	}, {
		// seed flink-joining: sliding size 2 slide 1; orange 2 joins green 3 in
		// window [2,3] but joins nothing in window [1,2].
		name: "sliding", a: Sliding(2, 1, 0),
		steps: []wstep{E(lt, 0, "o0"), E(rt, 0, "g0"), E(lt, 2, "o2"), E(rt, 3, "g3"), W(100)},
		want:  []string{"0 o0,g0", "1 o0,g0", "3 o2,g3"},
	}, {
		// seed flink-joining: session gap 1 ms, three sessions; the third holds
		// only orange 8 and 9 and emits nothing.
		name: "session", a: Session(1),
		steps: []wstep{E(lt, 0, "o0"), E(lt, 1, "o1"), E(rt, 1, "g1"), E(rt, 3, "g3"), E(lt, 4, "o4"), E(rt, 5, "g5"),
			E(lt, 8, "o8"), E(lt, 9, "o9"), W(100)},
		want: []string{"1 o0,g1", "1 o1,g1", "5 o4,g3", "5 o4,g5"},
	}, {
		// seed flink-joining: window [5,10) → 9, here with tumbling size 5.
		name: "window [5,10) → 9", a: Tumbling(5, 0),
		steps: []wstep{E(lt, 5, "a"), E(rt, 7, "b"), W(8), W(9)},
		want:  []string{"9 a,b"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			d := windowDriver(t, windowSpec(c.a, 0))
			d.script(c.steps...)
			eqLines(t, "outputs", fmtPairs(t, "orange", "green", d.take()), c.want)
			if !d.j.Empty() || len(d.timers) != 0 || len(d.late) != 0 {
				t.Fatalf("left state %q, timers %v, late %v", d.j.Snapshot(), d.timers, d.late)
			}
		})
	}
}

func TestJoinWindowFiresAtMaxTimestamp(t *testing.T) {
	// seed flink-joining: the pair carries the window's largest time and is
	// emitted when the watermark reaches it, not before.
	d := windowDriver(t, windowSpec(Tumbling(10, 0), 0))
	d.script(E(lt, 5, "a"), E(rt, 7, "b"), W(8))
	if len(d.out) != 0 {
		t.Fatalf("emitted before the watermark reached 9: %v", d.out)
	}
	if !slices.Equal(sortedTimers(d), []int64{9}) {
		t.Fatalf("timers %v, want [9]", sortedTimers(d))
	}
	d.advance(9)
	outs := d.take()
	eqLines(t, "outputs", fmtPairs(t, "orange", "green", outs), []string{"9 a,b"})
	o := outs[0]
	if o.ID != "window|left/0@0|right/0@0|10|0" || o.PK != `["left/0@0","right/0@0",10,0]` || o.Kind != record.Insert {
		t.Fatalf("output %+v", o)
	}
}

func sortedTimers(d *tdriver) []int64 {
	var ts []int64
	for t := range d.timers {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

func TestJoinWindowSessionMerge(t *testing.T) {
	// Sessions of both sides merge when their windows [ts, ts+gap) overlap or
	// touch (Flink's TimeWindow.intersects): b - a <= gap.
	d := windowDriver(t, windowSpec(Session(2), 0))
	d.script(E(lt, 0, "a"), E(rt, 4, "b"))
	if got := d.j.(*Windowed).Windows(); len(got) != 2 || got[0] != (Window{0, 2}) || got[1] != (Window{4, 6}) {
		t.Fatalf("windows %v", got)
	}
	if !slices.Equal(sortedTimers(d), []int64{1, 5}) {
		t.Fatalf("timers %v", sortedTimers(d))
	}
	// 2 touches [0,2) and bridges to [4,6): one session [0,6), timer 1 deleted.
	d.script(E(lt, 2, "c"))
	if got := d.j.(*Windowed).Windows(); len(got) != 1 || got[0] != (Window{0, 6}) {
		t.Fatalf("windows %v", got)
	}
	if !slices.Equal(sortedTimers(d), []int64{5}) {
		t.Fatalf("timers %v, want [5]", sortedTimers(d))
	}
	// 8 is 3 > gap after 5... but 6 = 4+gap touches: [8,10) does not touch [0,6).
	d.script(E(rt, 8, "e"), W(5))
	eqLines(t, "outputs", fmtPairs(t, "orange", "green", d.take()), []string{"5 a,b", "5 c,b"})
	d.script(W(100))
	if len(d.take()) != 0 || !d.j.Empty() {
		t.Fatal("the right-only session emitted or stayed")
	}
	// Merging moves the timer to the new end; the old one is gone.
	d = windowDriver(t, windowSpec(Session(3), 0))
	d.script(E(lt, 10, "a"), E(rt, 13, "b"), E(rt, 16, "c"))
	if !slices.Equal(sortedTimers(d), []int64{18}) {
		t.Fatalf("timers %v, want [18]", sortedTimers(d))
	}
	d.script(W(18))
	eqLines(t, "outputs", fmtPairs(t, "orange", "green", d.take()), []string{"18 a,b", "18 a,c"})
}

func TestJoinWindowAllowedLateness(t *testing.T) {
	// Tumbling 10, lateness 5: window [0,10) fires at 9 and is kept until 14.
	d := windowDriver(t, windowSpec(Tumbling(10, 0), 5))
	d.script(E(lt, 1, "l1"), E(rt, 2, "r2"), W(9))
	first := d.take()
	eqLines(t, "on time", fmtPairs(t, "orange", "green", first), []string{"9 l1,r2"})
	if !slices.Equal(sortedTimers(d), []int64{14}) {
		t.Fatalf("timers %v, want the cleanup timer [14]", sortedTimers(d))
	}
	// A late element within the lateness fires the whole window again: all
	// pairs, the old one with its old id.
	d.script(E(rt, 3, "r3"))
	again := d.take()
	eqLines(t, "late firing", fmtPairs(t, "orange", "green", again), []string{"9 l1,r2", "9 l1,r3"})
	if again[0].ID != first[0].ID {
		t.Fatalf("re-emitted id %q, first %q", again[0].ID, first[0].ID)
	}
	d.script(W(13), E(lt, 9, "l9"))
	eqLines(t, "second late firing", fmtPairs(t, "orange", "green", d.take()),
		[]string{"9 l1,r2", "9 l1,r3", "9 l9,r2", "9 l9,r3"})
	// At 14 the state is dropped; later elements of the window are late.
	d.script(W(14), E(rt, 4, "r4"))
	if len(d.take()) != 0 || !d.j.Empty() {
		t.Fatalf("state %q after cleanup", d.j.Snapshot())
	}
	eqLines(t, "late", fmtLate(d.late), []string{"4 r4 window-closed"})

	// A window first seen within its lateness fires at once and sets only its
	// cleanup timer.
	d = windowDriver(t, windowSpec(Tumbling(10, 0), 5))
	d.script(W(11), E(lt, 3, "a"), E(rt, 4, "b"))
	eqLines(t, "new late window", fmtPairs(t, "orange", "green", d.take()), []string{"9 a,b"})
	if !slices.Equal(sortedTimers(d), []int64{14}) {
		t.Fatalf("timers %v", sortedTimers(d))
	}
}

func TestJoinWindowLate(t *testing.T) {
	// No lateness: window [0,10) closes when the watermark reaches 9.
	d := windowDriver(t, windowSpec(Tumbling(10, 0), 0))
	d.script(E(lt, 1, "a"), W(9), E(rt, 9, "b"), E(rt, 10, "c"), E(lt, 12, "d"), W(19))
	eqLines(t, "late", fmtLate(d.late), []string{"9 b window-closed"})
	eqLines(t, "outputs", fmtPairs(t, "orange", "green", d.take()), []string{"19 d,c"})

	// Sliding: an element some of whose windows closed goes into the open ones
	// and is not late.
	d = windowDriver(t, windowSpec(Sliding(10, 5, 0), 0))
	d.script(E(rt, 7, "r"), W(9), E(lt, 8, "l"), W(100))
	eqLines(t, "outputs", fmtPairs(t, "orange", "green", d.take()), []string{"14 l,r"})
	if len(d.late) != 0 {
		t.Fatalf("late %v", fmtLate(d.late))
	}
	// A time in no window of a gapped sliding assigner.
	d = windowDriver(t, windowSpec(Sliding(2, 5, 0), 0))
	d.script(E(lt, 3, "x"))
	eqLines(t, "no window", fmtLate(d.late), []string{"3 x no-window"})
	// A session that would merge into a closed window is late as a whole.
	d = windowDriver(t, windowSpec(Session(5), 0))
	d.script(E(lt, 1, "a"), W(6), E(rt, 2, "b"))
	eqLines(t, "session late", fmtLate(d.late), []string{"2 b window-closed"})
	d = windowDriver(t, windowSpec(Session(5), 0))
	d.j.OnElement(Element{Side: 3, Ts: 1}, 0, &d.fx)
	if len(d.fx.Late) != 1 || d.fx.Late[0].Reason != LateUnknownSide {
		t.Fatalf("unknown side: %+v", d.fx)
	}
}

func TestJoinWindowFunctionsAndOuter(t *testing.T) {
	steps := []wstep{E(lt, 0, "a"), E(rt, 1, "b"), E(rt, 1, "c"), E(lt, 2, "x"), E(rt, 5, "y"), W(100)}
	t.Run("join function", func(t *testing.T) {
		spec := windowSpec(Tumbling(2, 0), 0)
		spec.Join = func(l, r record.Row) record.Row { return record.Row{"p": l["n"].(string) + r["n"].(string)} }
		d := windowDriver(t, spec)
		d.script(steps...)
		var got []string
		for _, o := range d.take() {
			got = append(got, o.Row["p"].(string)+" "+o.ID)
		}
		eqLines(t, "rows", got, []string{"ab window|left/0@0|right/0@0|2|0", "ac window|left/0@0|right/0@1|2|0"})
	})
	t.Run("flat join function", func(t *testing.T) {
		spec := windowSpec(Tumbling(2, 0), 0)
		spec.FlatJoin = func(l, r record.Row) []record.Row {
			if r["n"] == "c" {
				return nil // zero rows
			}
			return []record.Row{{"k": 1}, {"k": 2}}
		}
		d := windowDriver(t, spec)
		d.script(steps...)
		var got []string
		for _, o := range d.take() {
			got = append(got, o.ID)
		}
		eqLines(t, "ids", got, []string{"window|left/0@0|right/0@0|2|0", "window|left/0@0|right/0@0|2|1"})
	})
	t.Run("projection", func(t *testing.T) {
		spec := windowSpec(Tumbling(2, 0), 0)
		spec.Project = []Column{{Name: "l", Side: lt, Field: "n"}, {Name: "r", Side: rt, Field: "n"}}
		spec.Type = TimedFullOuter
		d := windowDriver(t, spec)
		d.script(steps...)
		var got []string
		for _, o := range d.take() {
			got = append(got, strings.TrimPrefix(strings.TrimPrefix(strings.ReplaceAll(
				strings.ReplaceAll(o.PK, "left/0@", "L"), "right/0@", "R"), "["), "]"))
		}
		eqLines(t, "pks", got, []string{`"L0","R0",2,0]`, `"L0","R1",2,0]`, `"L1",null,4,0]`, `null,"R2",6,0]`})
	})
	// Outer window joins built on the coGroup: a one-sided window pads.
	for _, c := range []struct {
		typ  TimedJoinType
		want []string
	}{
		{TimedInner, []string{"1 a,b", "1 a,c"}},
		{TimedLeftOuter, []string{"1 a,b", "1 a,c", "3 x,-"}},
		{TimedRightOuter, []string{"1 a,b", "1 a,c", "5 -,y"}},
		{TimedFullOuter, []string{"1 a,b", "1 a,c", "3 x,-", "5 -,y"}},
	} {
		t.Run("outer "+c.typ.String(), func(t *testing.T) {
			spec := windowSpec(Tumbling(2, 0), 0)
			spec.Type = c.typ
			d := windowDriver(t, spec)
			d.script(steps...)
			eqLines(t, "outputs", fmtPairs(t, "orange", "green", d.take()), c.want)
		})
	}
}

func TestJoinWindowCoGroup(t *testing.T) {
	var calls []string
	spec := &CoGroupSpec{Assigner: Tumbling(2, 0), AllowedLateness: 2, Func: func(l, r []record.Row) []record.Row {
		var s []string
		for _, x := range l {
			s = append(s, x["n"].(string))
		}
		s = append(s, "|")
		for _, x := range r {
			s = append(s, x["n"].(string))
		}
		calls = append(calls, strings.Join(s, " "))
		return []record.Row{{"count": len(l) + len(r)}}
	}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, func() Timed { return NewCoGroup(spec) })
	// Called per window even when one side is empty.
	d.script(E(lt, 0, "a"), E(lt, 1, "b"), E(rt, 1, "c"), E(lt, 2, "x"), E(rt, 5, "y"), W(3))
	if want := []string{"a b | c", "x |"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	outs := d.take()
	if len(outs) != 2 || outs[0].ID != "cogroup|left/0@0|-|2|0" || outs[0].Ts != 1 ||
		outs[1].ID != "cogroup|left/0@2|-|4|0" || outs[1].Ts != 3 {
		t.Fatalf("outputs %+v", outs)
	}
	// A late firing calls the function on the whole window again, same ids.
	d.script(E(rt, 3, "z"))
	outs = d.take()
	if calls[len(calls)-1] != "x | z" || len(outs) != 1 || outs[0].ID != "cogroup|left/0@2|-|4|0" {
		t.Fatalf("late firing: %q %+v", calls, outs)
	}
	d.script(W(100))
	if calls[len(calls)-1] != "| y" || !d.j.Empty() {
		t.Fatalf("calls %q", calls)
	}
}

func TestJoinWindowSnapshot(t *testing.T) {
	spec := windowSpec(Tumbling(10, 0), 5)
	d := windowDriver(t, spec)
	d.script(E(lt, 1, "a"), E(rt, 12, "b"), W(9))
	got := string(d.j.Snapshot())
	want := "\x01W" + `{"w":[{"w":{"s":0,"e":10},"a":{"source":"left","partition":0,"offset":0},"f":true,"l":[{"t":1,"p":{"source":"left","partition":0,"offset":0},"r":{"n":"a"}}]},` +
		`{"w":{"s":10,"e":20},"a":{"source":"right","partition":0,"offset":0},"r":[{"t":12,"p":{"source":"right","partition":0,"offset":0},"r":{"n":"b"}}]}]}`
	if got != want {
		t.Fatalf("snapshot\n%q\nwant\n%q", got, want)
	}
	if e := string(NewWindowJoin(spec).Snapshot()); e != "\x01W"+`{"w":null}` {
		t.Fatalf("empty snapshot %q", e)
	}
	checkRestoreErrors(t, d.j,
		"\x01W"+`{"w":[null]}`,
		"\x01W"+`{"w":[{"w":{"s":5,"e":5},"l":[{"t":5}]}]}`,
		"\x01W"+`{"w":[{"w":{"s":0,"e":10}}]}`,
		"\x01W"+`{"w":[{"w":{"s":10,"e":20},"l":[{"t":12}]},{"w":{"s":0,"e":10},"l":[{"t":1}]}]}`)
}

func FuzzWindowRestore(f *testing.F) {
	spec := windowSpec(Session(3), 2)
	d := windowDriver(f, spec)
	d.script(E(lt, 1, "a"), E(rt, 12, "b"), W(4), E(lt, 13, "c"))
	f.Add(d.j.Snapshot())
	f.Add([]byte("\x01W{\"w\":[]}"))
	f.Add([]byte("\x01W{\"w\":[{\"w\":{\"s\":-9223372036854775808,\"e\":9223372036854775807},\"l\":[{\"t\":1}]}]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRestore(t, func() Timed { return NewWindowJoin(spec) }, b)
	})
}

// floorDiv is the oracle's own window arithmetic.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// oracleWindows lists the windows of ts by brute force: starts offset + k*slide
// with start <= ts < start + size.
func oracleWindows(ts, size, slide, offset int64) []Window {
	var ws []Window
	top := offset + floorDiv(ts-offset, slide)*slide
	for s := top; s+size > ts; s -= slide {
		ws = append(ws, Window{s, s + size})
	}
	return ws
}

func TestJoinWindowOracle(t *testing.T) {
	seed := rand.Int63()
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	rng := rand.New(rand.NewSource(seed))
	for iter := range 150 {
		size := int64(1 + rng.Intn(8))
		slide := size
		sliding := iter%2 == 1
		if sliding {
			slide = int64(1 + rng.Intn(int(size)+2)) // sometimes larger than size
		}
		offset := int64(rng.Intn(int(slide)))
		if rng.Intn(2) == 0 {
			offset = -offset
		}
		var lateness int64
		if rng.Intn(2) == 0 {
			lateness = int64(rng.Intn(6))
		}
		a := Tumbling(size, offset)
		if sliding {
			a = Sliding(size, slide, offset)
		}
		spec := windowSpec(a, lateness)
		d := windowDriver(t, spec)
		d.rng, d.restore = rng, 0.1
		steps := randomStream(rng, 10+rng.Intn(60), int64(rng.Intn(6)+1))
		arrival := d.run(steps, math.MaxInt64)
		ls, rs := oracleElems(steps, arrival)

		// Brute force: per window, the elements it accepted (its cleanup time
		// was above the watermark at their arrival), joined pairwise.
		cleanup := func(w Window) int64 { return w.End - 1 + lateness }
		accepted := func(e oracleElem, w Window) bool { return cleanup(w) > e.wm }
		var want, wantLate []string
		for _, es := range [][]oracleElem{ls, rs} {
			for _, e := range es {
				ws := oracleWindows(e.ts, size, slide, offset)
				reason := "no-window"
				for _, w := range ws {
					reason = "window-closed"
					if accepted(e, w) {
						reason = ""
						break
					}
				}
				if reason != "" {
					wantLate = append(wantLate, fmtLate([]Late{{Element: Element{Ts: e.ts, Row: named(e.name)}, Reason: reason}})...)
				}
			}
		}
		for i := range ls {
			for k := range rs {
				for _, w := range oracleWindows(ls[i].ts, size, slide, offset) {
					if rs[k].ts >= w.Start && rs[k].ts < w.End && accepted(ls[i], w) && accepted(rs[k], w) {
						want = append(want, oracleOut("window", &ls[i], &rs[k], w.End, w.End-1, "orange", "green"))
					}
				}
			}
		}
		slices.Sort(want)
		got := multiset(d.out)
		if lateness > 0 {
			got = dedup(got) // late firings re-emit with the same ids
		}
		if !slices.Equal(got, want) {
			t.Fatalf("iter %d %+v lateness %d:\n%s", iter, a, lateness, diffLines(got, want))
		}
		slices.Sort(wantLate)
		gotLate := fmtLate(d.late)
		slices.Sort(gotLate)
		eqLines(t, "late", gotLate, wantLate)
		if !d.j.Empty() || len(d.timers) != 0 {
			t.Fatalf("iter %d: state %q timers %v after the final watermark", iter, d.j.Snapshot(), d.timers)
		}
	}
}

func BenchmarkWindowJoin(b *testing.B) {
	for _, c := range []struct {
		name string
		a    Assigner
	}{{"tumbling", Tumbling(10, 0)}, {"sliding", Sliding(10, 5, 0)}, {"session", Session(3)}} {
		b.Run(c.name, func(b *testing.B) {
			spec := windowSpec(c.a, 2)
			benchTimed(b, func() Timed { return NewWindowJoin(spec) })
		})
	}
}

// TestJoinWindowOnArrival: Spark's windowed join (emit on-arrival) emits a
// pair at the later row's arrival and only the unmatched outer rows at the
// window's close; Flink's (the default) emits everything at the close.
func TestJoinWindowOnArrival(t *testing.T) {
	type phase struct {
		steps []wstep
		want  []string // outputs of these steps, in order
	}
	cases := []struct {
		name   string
		typ    TimedJoinType
		a      Assigner
		rule   LateRule
		where  Condition
		phases []phase
	}{
		{name: "inner tumbling: pairs at once, nothing at the close", typ: TimedInner, a: Tumbling(10, 0),
			phases: []phase{
				{[]wstep{E(lt, 1, "a")}, nil},
				{[]wstep{E(rt, 3, "b")}, []string{"9 a,b"}},
				{[]wstep{E(lt, 5, "c")}, []string{"9 c,b"}},
				{[]wstep{E(rt, 12, "d")}, nil}, // another window
				{[]wstep{W(100)}, nil},
			}},
		{name: "left outer: padded at the close, matched never", typ: TimedLeftOuter, a: Tumbling(10, 0),
			phases: []phase{
				{[]wstep{E(lt, 1, "a"), E(lt, 2, "x")}, nil},
				{[]wstep{E(rt, 3, "b")}, []string{"9 a,b", "9 x,b"}},
				{[]wstep{E(lt, 4, "u"), E(lt, 15, "v")}, []string{"9 u,b"}},
				{[]wstep{W(9)}, nil}, // window [0,10) closes; all matched
				{[]wstep{W(19)}, []string{"19 v,-"}},
			}},
		{name: "full outer with ts<=wm: the close is at end", typ: TimedFullOuter, a: Tumbling(10, 0), rule: LateAtWatermark,
			phases: []phase{
				{[]wstep{E(lt, 1, "a"), E(rt, 2, "b")}, []string{"9 a,b"}},
				{[]wstep{E(rt, 4, "c")}, []string{"9 a,c"}},
				{[]wstep{E(rt, 14, "d"), W(9)}, nil},
				// ts 9 at watermark 9: the window [0,10) closes at 10 under
				// ts<=wm (Spark's rule is on the window's end), so it joins.
				{[]wstep{E(lt, 9, "z")}, []string{"9 z,b", "9 z,c"}},
				{[]wstep{W(10), E(lt, 8, "late")}, nil}, // window closed: late
				{[]wstep{W(20)}, []string{"19 -,d"}},
			}},
		{name: "sliding: a pair per shared window", typ: TimedInner, a: Sliding(10, 5, 0),
			phases: []phase{
				{[]wstep{E(lt, 6, "a"), E(rt, 8, "b")}, []string{"9 a,b", "14 a,b"}},
				{[]wstep{E(rt, 12, "c")}, []string{"14 a,c"}},
			}},
		{name: "condition: only passing pairs, the rest padded at the close", typ: TimedLeftOuter, a: Tumbling(10, 0),
			where: Condition{Pair: func(l, r record.Row) bool { return l["n"] != "x" || r["n"] == "y" }},
			phases: []phase{
				{[]wstep{E(lt, 1, "x"), E(rt, 2, "b")}, nil},
				{[]wstep{E(lt, 3, "a")}, []string{"9 a,b"}},
				{[]wstep{E(rt, 4, "y")}, []string{"9 x,y", "9 a,y"}},
				{[]wstep{E(lt, 5, "x")}, []string{"9 x,y"}},
				{[]wstep{W(100)}, nil},
			}},
		{name: "condition: an unmatched left row padded once", typ: TimedLeftOuter, a: Tumbling(10, 0),
			where: Condition{Pair: func(l, r record.Row) bool { return false }},
			phases: []phase{
				{[]wstep{E(lt, 1, "a"), E(rt, 2, "b")}, nil},
				{[]wstep{W(9)}, []string{"9 a,-"}},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := &WindowJoinSpec{Type: c.typ, Left: "orange", Right: "green", Assigner: c.a, Late: c.rule, Where: c.where, OnArrival: true}
			d := windowDriver(t, spec)
			d.rng, d.restore = rand.New(rand.NewSource(1)), 0.5 // matched flags survive snapshots
			for i, p := range c.phases {
				d.script(p.steps...)
				eqLines(t, fmt.Sprintf("phase %d", i), fmtPairs(t, "orange", "green", d.take()), p.want)
			}
			// The same inputs without on-arrival: the same multiset, later.
			spec2 := *spec
			spec2.OnArrival = false
			d2 := windowDriver(t, &spec2)
			d.out = nil
			d = windowDriver(t, spec)
			for _, p := range c.phases {
				d.script(p.steps...)
				d2.script(p.steps...)
			}
			d.advance(math.MaxInt64)
			d2.advance(math.MaxInt64)
			eqLines(t, "same rows as at the close", multiset(d.out), multiset(d2.out))
		})
	}
	for _, bad := range []struct {
		spec WindowJoinSpec
		want string
	}{
		{WindowJoinSpec{Left: "a", Right: "b", Assigner: Session(3), OnArrival: true}, "emit: on-arrival is for tumbling and sliding windows"},
		{WindowJoinSpec{Left: "a", Right: "b", Assigner: Tumbling(3, 0), AllowedLateness: 2, OnArrival: true}, "allowed_lateness: must be 0 with emit on-arrival"},
	} {
		if err := bad.spec.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.spec, err, bad.want)
		}
	}
}
