package joins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
)

// reflectSnapshotter is a join whose Snapshot is written by hand and whose
// snapshotReflect is the encoding/json encoding it must equal.
type reflectSnapshotter interface {
	Timed
	snapshotReflect() []byte
}

// checkSnapshotExact fails unless j's Snapshot, twice (the second from
// the cached element JSON), is its reflective encoding byte for byte.
// Joins without a hand-written snapshot pass.
func checkSnapshotExact(t testing.TB, j Timed) {
	t.Helper()
	r, ok := j.(reflectSnapshotter)
	if !ok {
		return
	}
	want := r.snapshotReflect()
	for i := range 2 {
		if got := j.Snapshot(); !bytes.Equal(got, want) {
			t.Fatalf("snapshot %d\n%q\nwant (encoding/json)\n%q", i, got, want)
		}
	}
}

// checkCachedJSON fails unless j's CachedJSON, after a Snapshot, is the
// length of its elements' encodings.
func checkCachedJSON(t *testing.T, j Timed) {
	t.Helper()
	var es []elem
	switch j := j.(type) {
	case *Windowed:
		for _, w := range j.wins {
			es = append(append(es, w.L...), w.R...)
		}
	case *Interval:
		es = append(append(es, j.left...), j.right...)
	case *TimeBounded:
		for _, m := range append(append([]matchElem(nil), j.left...), j.right...) {
			es = append(es, m.elem)
		}
	case *Temporal:
		es = append(append(es, j.versions...), j.probes...)
	case *TemporalKafka:
		es = append(append(es, j.versions...), j.probes...)
	case *TemporalFlink:
		for _, k := range append(append([]kindElem(nil), j.versions...), j.probes...) {
			es = append(es, k.elem)
		}
	case *TemporalLatest:
		if j.latest != nil {
			es = append(es, *j.latest)
		}
	}
	want := 0
	if w, ok := j.(*Windowed); ok && w.assigner.Kind == SlidingWindows {
		es = nil // overlapping windows' copies of an element cache nothing
	}
	for _, e := range es {
		b, err := jsonenc.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		want += len(b)
	}
	if got := j.(JSONCacher).CachedJSON(); got != want {
		t.Fatalf("CachedJSON %d, want %d", got, want)
	}
}

// snapStrings are strings that encoding/json escapes or treats specially.
var snapStrings = []string{"", "a", "<b>&amp;", `q"uote\back`, "ctl\x00\x01\x1f\t\n\r\b\f", "ünïcødé 日本 🎉",
	"line\u2028sep\u2029", "bad\xffutf8\xc3", "\x7f", "</script>"}

// randValue is a random decoded-JSON value, nesting up to depth.
func randValue(rng *rand.Rand, depth int) any {
	n := 7
	if depth > 0 {
		n = 11
	}
	switch rng.Intn(n) {
	case 0:
		return nil
	case 1:
		return rng.Intn(2) == 0
	case 2:
		return []float64{0, -0.0, 1.5, -3, 1e21, 1e-7, 123456789.125, 5e-324}[rng.Intn(8)]
	case 3, 4:
		return snapStrings[rng.Intn(len(snapStrings))]
	case 5:
		return json.Number([]string{"0", "-1", "12.50", "1e400", "3E-2", ""}[rng.Intn(6)])
	case 6:
		return fmt.Sprint(rng.Int63())
	case 7:
		return randRow(rng, depth-1)
	case 8:
		return map[string]any(randRow(rng, depth-1))
	case 9:
		if rng.Intn(4) == 0 {
			return []any(nil)
		}
		a := make([]any, rng.Intn(4))
		for i := range a {
			a[i] = randValue(rng, depth-1)
		}
		return a
	}
	return map[string]any(nil)
}

// randRow is a random row (sometimes nil or empty).
func randRow(rng *rand.Rand, depth int) record.Row {
	switch rng.Intn(8) {
	case 0:
		return nil
	case 1:
		return record.Row{}
	}
	r := record.Row{}
	for range 1 + rng.Intn(5) {
		r[snapStrings[rng.Intn(len(snapStrings))]+fmt.Sprint(rng.Intn(3))] = randValue(rng, depth)
	}
	return r
}

func randElems(rng *rand.Rand, n int) []elem {
	if n == 0 {
		return nil
	}
	es := make([]elem, n)
	ts := rng.Int63n(100) - 50
	for i := range es {
		ts += rng.Int63n(3)
		es[i] = elem{Ts: ts, Pos: record.Position{Source: snapStrings[rng.Intn(len(snapStrings))], Partition: rng.Int31n(4) - 1, Offset: rng.Int63()}, Row: randRow(rng, 2)}
	}
	return es
}

// randVersions are a temporal join's versions: strictly ordered times,
// a nil row a delete.
func randVersions(rng *rand.Rand) []elem {
	es := randElems(rng, rng.Intn(5))
	for i := 1; i < len(es); i++ {
		es[i].Ts = es[i-1].Ts + 1 + rng.Int63n(3)
	}
	return es
}

// randProbes are a temporal join's probes: each with a row.
func randProbes(rng *rand.Rand) []elem {
	es := randElems(rng, rng.Intn(5))
	for i := range es {
		if es[i].Row == nil {
			es[i].Row = record.Row{}
		}
	}
	return es
}

// randKinds gives es random row kinds (Insert most often: it is left out).
func randKinds(rng *rand.Rand, es []elem) []kindElem {
	if es == nil {
		return nil
	}
	ks := make([]kindElem, len(es))
	for i, e := range es {
		ks[i] = kindElem{elem: e, K: record.Kind(max(0, rng.Intn(6)-2))}
	}
	return ks
}

// randMatched is an ascending subset of [0, n), nil when empty.
func randMatched(rng *rand.Rand, n int) []int {
	var m []int
	for i := range n {
		if rng.Intn(2) == 0 {
			m = append(m, i)
		}
	}
	return m
}

// randSnapState fills j (a fresh join) with a random valid state.
func randSnapState(rng *rand.Rand, j Timed) {
	switch j := j.(type) {
	case *Windowed:
		end := rng.Int63n(20)
		for range rng.Intn(4) {
			end += 1 + rng.Int63n(10)
			ws := &winState{W: Window{Start: end - 1 - rng.Int63n(10), End: end}, Fired: rng.Intn(2) == 0,
				First: record.Position{Source: "s<&>", Offset: rng.Int63n(9)}}
			for len(ws.L)+len(ws.R) == 0 {
				ws.L, ws.R = randElems(rng, rng.Intn(4)), randElems(rng, rng.Intn(4))
			}
			ws.LM, ws.RM = randMatched(rng, len(ws.L)), randMatched(rng, len(ws.R))
			j.wins = append(j.wins, ws)
		}
	case *Interval:
		j.left, j.right = randElems(rng, rng.Intn(5)), randElems(rng, rng.Intn(5))
	case *TimeBounded:
		for _, s := range []*[]matchElem{&j.left, &j.right} {
			for _, e := range randElems(rng, rng.Intn(5)) {
				*s = append(*s, matchElem{elem: e, Matched: rng.Intn(2) == 0})
			}
		}
	case *Temporal:
		j.versions, j.probes = randVersions(rng), randProbes(rng)
	case *TemporalKafka:
		j.versions, j.probes = randVersions(rng), randProbes(rng)
	case *TemporalFlink:
		j.versions, j.probes = randKinds(rng, randVersions(rng)), randKinds(rng, randElems(rng, rng.Intn(5)))
		for i := range j.probes {
			if j.probes[i].Row == nil {
				j.probes[i].Row = record.Row{}
			}
		}
		if len(j.probes) > 0 || rng.Intn(2) == 0 { // Restore wants a timer for probes
			tm := rng.Int63n(200) - 100
			j.timer = &tm
		}
	case *TemporalLatest:
		if p := randProbes(rng); len(p) > 0 {
			j.latest = &p[0]
		}
	default:
		panic(fmt.Sprintf("randSnapState: %T", j))
	}
}

// snapJoins are fresh joins of every kind with a hand-written snapshot.
func snapJoins() map[string]func() Timed {
	return map[string]func() Timed{
		"window":   func() Timed { return NewWindowJoin(windowSpec(Tumbling(10, 0), 0)) },
		"sliding":  func() Timed { return NewWindowJoin(windowSpec(Sliding(10, 5, 0), 0)) },
		"interval": func() Timed { return NewInterval(&IntervalSpec{Left: "l", Right: "r", Lower: -2, Upper: 1}) },
		"timebound": func() Timed {
			return NewTimeBounded(&TimeBoundedSpec{Type: TimedFullOuter, Left: "l", Right: "r", Upper: 3})
		},
		"unbounded":  func() Timed { return NewUnbounded(&UnboundedSpec{Type: TimedLeftOuter, Left: "l", Right: "r", TTL: 5}) },
		"temporal":   func() Timed { return NewTemporal(&TemporalSpec{Left: "l", Right: "r"}) },
		"temporalkf": func() Timed { return NewTemporalKafka(&TemporalSpec{Left: "l", Right: "r"}) },
		"temporalfl": func() Timed { return NewTemporalFlink(&TemporalSpec{Left: "l", Right: "r"}) },
		"latest":     func() Timed { return NewTemporalLatest(&TemporalSpec{Left: "l", Right: "r"}) },
	}
}

// TestSnapshotHandWrittenRandom: for random states (rows with escapes,
// unicode, invalid UTF-8, json.Number, nested rows, maps and slices, nil
// values; windows fired or not, with matched rows) the hand-written
// snapshot is encodeSnap's bytes, before and after its elements' JSON is
// cached and after flags outside the cache change, and a Restore of it
// (without invalid UTF-8, which encoding/json replaces) is the same state:
// it snapshots to the same bytes.
func TestSnapshotHandWrittenRandom(t *testing.T) {
	seed := rand.Int63()
	rng := rand.New(rand.NewSource(seed))
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	for name, fresh := range snapJoins() {
		t.Run(name, func(t *testing.T) {
			for range 300 {
				j := fresh()
				randSnapState(rng, j)
				checkSnapshotExact(t, j)
				checkCachedJSON(t, j)
				// Invalid UTF-8 is written as U+FFFD, which a Restore
				// reads back as itself: not the same state.
				if snap := j.Snapshot(); !bytes.Contains(snap, []byte(`\ufffd`)) {
					k := fresh()
					if err := k.Restore(snap); err != nil {
						t.Fatalf("restore of %q: %v", snap, err)
					}
					checkSnapshotExact(t, k)
					if again := k.Snapshot(); !bytes.Equal(again, snap) {
						t.Fatalf("restored state snapshots to\n%q\nwant\n%q", again, snap)
					}
				}
				// Flags kept outside the element cache change in place.
				switch j := j.(type) {
				case *Windowed:
					for _, ws := range j.wins {
						ws.Fired = !ws.Fired
						ws.LM, ws.RM = randMatched(rng, len(ws.L)), randMatched(rng, len(ws.R))
					}
				case *TimeBounded:
					for i := range j.left {
						j.left[i].Matched = !j.left[i].Matched
					}
				case *TemporalFlink: // the join does not, but "k" and "tm" are outside the cache
					for i := range j.probes {
						j.probes[i].K = record.Kind(3 - j.probes[i].K)
					}
					if j.timer == nil {
						j.timer = new(int64)
					}
				}
				checkSnapshotExact(t, j)
			}
		})
	}
}

// TestSnapshotHandWrittenEdges: empty states (nil and empty buffers), and
// rows jsonenc cannot encode exactly (an int, a struct), which fall back to
// encoding/json and cache nothing.
func TestSnapshotHandWrittenEdges(t *testing.T) {
	type odd struct{ A int }
	for name, fresh := range snapJoins() {
		t.Run(name, func(t *testing.T) {
			j := fresh()
			checkSnapshotExact(t, j)
			for _, v := range []any{7, odd{3}, []string{"<"}} {
				j := fresh()
				var fx Effects
				j.OnElement(Element{Side: record.Left, Ts: 1, Row: record.Row{"x": v}}, 0, &fx)
				j.OnElement(Element{Side: record.Right, Ts: 1, Row: record.Row{"y": "<&>"}}, 0, &fx)
				checkSnapshotExact(t, j)
				if w, ok := j.(*Windowed); ok && w.wins[0].L[0].enc != nil {
					t.Fatalf("a row with %T was cached: %q", v, w.wins[0].L[0].enc)
				}
			}
		})
	}
	// Empty but not nil buffers encode as [] (Restore makes them nil).
	w := NewWindowJoin(windowSpec(Tumbling(10, 0), 0))
	w.wins = []*winState{}
	checkSnapshotExact(t, w)
	w.wins = []*winState{nil, {W: Window{0, 1}, L: []elem{}, R: []elem{{}}, LM: []int{}}}
	checkSnapshotExact(t, w)
	iv := NewInterval(&IntervalSpec{Left: "l", Right: "r", Upper: 1})
	iv.left, iv.right = []elem{}, nil
	checkSnapshotExact(t, iv)
	tb := NewTimeBounded(&TimeBoundedSpec{Left: "l", Right: "r", Upper: 1})
	tb.left = []matchElem{{}}
	checkSnapshotExact(t, tb)
	// A timer at an extreme, a kind only String names, empty buffers.
	fl := NewTemporalFlink(&TemporalSpec{Left: "l", Right: "r"})
	tm := int64(math.MinInt64)
	fl.versions, fl.probes, fl.timer = []kindElem{}, []kindElem{{K: record.Kind(9)}, {K: record.Delete}}, &tm
	checkSnapshotExact(t, fl)
	// A version that falls back to encoding/json caches nothing.
	lt := NewTemporalLatest(&TemporalSpec{Left: "l", Right: "r"})
	lt.latest = &elem{Row: record.Row{"x": 7}}
	checkSnapshotExact(t, lt)
	if lt.latest.enc != nil {
		t.Fatalf("a row with an int was cached: %q", lt.latest.enc)
	}
}

// BenchmarkWindowSnapshot is a window join key's state write on a q8-like
// stream: per op one element (sides alternating, a person- or auction-like
// row) is added, untimed, then Snapshot is timed; tumbling windows of 2n elements kept one window
// past their end, so the key holds one to two windows, n to 2n rows per
// side. "reflect" is the encoding/json path (encodeSnap, the snapshot
// before element caching), "cached" Snapshot.
func BenchmarkWindowSnapshot(b *testing.B) {
	for _, n := range []int{16, 128} {
		for _, mode := range []string{"reflect", "cached"} {
			b.Run(fmt.Sprintf("rows=%d/%s", n, mode), func(b *testing.B) {
				size := int64(2 * n)
				j := NewWindowJoin(windowSpec(Tumbling(size, 0), size))
				rows := benchSnapRows(int(2 * size))
				var fx Effects
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					ts := int64(i)
					side, row := record.Left, rows[i%len(rows)]
					if i%2 == 1 {
						side = record.Right
					}
					// At ts-1 the window ended at ts fires; the one before it is cleaned up.
					benchSnapOp(b, j, mode, Element{Side: side, Ts: ts, Row: row, Pos: record.Position{Source: "bids", Offset: ts}},
						ts%size == 0 && ts > 0, ts-1, &fx)
				}
			})
		}
	}
}

// benchSnapRows are n q8-like rows, person-like at even indexes and
// auction-like at odd ones: read-only, reused cyclically.
func benchSnapRows(n int) []record.Row {
	rows := make([]record.Row, n)
	for i := range rows {
		rows[i] = record.Row{"id": json.Number(fmt.Sprint(1000 + i)), "name": "Luke Shultz",
			"city": "Seattle", "state": "WA", "email": "luke@example.com <x&y>", "dateTime": json.Number(fmt.Sprint(i))}
		if i%2 == 1 {
			rows[i] = record.Row{"id": json.Number(fmt.Sprint(i)), "seller": json.Number("1000"),
				"itemName": "wkx mgee", "category": json.Number("10"), "initialBid": json.Number("100"), "reserve": 1234.5, "expires": json.Number(fmt.Sprint(i + 20))}
		}
	}
	return rows
}

// BenchmarkTemporalSnapshot is a temporal join key's state write: per op
// one element is added, untimed (a version every fourth op, else a
// probe; every eighth element an UpdateAfter), then Snapshot is timed.
// "flink": a Flink temporal key fired every 2n ops at a watermark n ops
// back, so it holds about n to 2n probes and the versions since the
// watermark; "latest": the latest-version join, whose state is the
// current version. "reflect" is encodeSnap (snapshotReflect), "cached"
// Snapshot.
func BenchmarkTemporalSnapshot(b *testing.B) {
	const n = 16
	spec := &TemporalSpec{Type: TimedLeftOuter, Left: "l", Right: "r", Semantics: SemanticsFlink}
	for _, join := range []string{"flink", "latest"} {
		for _, mode := range []string{"reflect", "cached"} {
			b.Run(join+"/"+mode, func(b *testing.B) {
				var j reflectSnapshotter = NewTemporalFlink(spec)
				if join == "latest" {
					j = NewTemporalLatest(spec)
				}
				rows := benchSnapRows(4 * n)
				var fx Effects
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					ts := int64(i)
					side, kind := record.Left, record.Insert
					if i%4 == 3 {
						side = record.Right
					}
					if i%8 == 5 {
						kind = record.UpdateAfter
					}
					benchSnapOp(b, j, mode, Element{Side: side, Kind: kind, Ts: ts, Row: rows[i%len(rows)], Pos: record.Position{Source: "bids", Offset: ts}},
						ts%(2*n) == 0 && ts > 0, ts-n, &fx)
				}
			})
		}
	}
}

// benchSnapOp is one op of the snapshot benchmarks: e is added (at
// watermark e.Ts-1; timed, a few hundred ns, the same in both modes) and,
// if fire, a timer at at fires (watermark at; untimed); then one snapshot:
// snapshotReflect when mode is "reflect", else Snapshot. The timer stops
// only around a firing: StopTimer and StartTimer read the memory
// statistics (stopping the world), and around every op they made the two
// benchmarks take minutes in `make bench`.
func benchSnapOp(b *testing.B, j reflectSnapshotter, mode string, e Element, fire bool, at int64, fx *Effects) {
	j.OnElement(e, e.Ts-1, fx)
	if fire {
		b.StopTimer() // the join's own work (a firing's outputs) is not measured
		j.OnTimer(at, at, fx)
		b.StartTimer()
	}
	fx.Reset()
	if mode == "reflect" {
		_ = j.snapshotReflect()
	} else {
		_ = j.Snapshot()
	}
}
