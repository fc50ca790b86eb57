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

func kafkaTemporalDriver(t testing.TB, typ TimedJoinType, grace, history int64) *tdriver {
	t.Helper()
	spec := &TemporalSpec{Type: typ, Left: "visit", Right: "ad", Semantics: SemanticsKafka, Grace: grace, History: history}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, ok := NewTemporalJoin(spec).(*TemporalKafka); !ok {
		t.Fatal("NewTemporalJoin does not pick TemporalKafka")
	}
	return newDriver(t, func() Timed { return NewTemporalJoin(spec) })
}

// TestJoinTemporalKafkaSteps walks one key of the versioned KStream-KTable
// join (grace 2, history 10) through each rule: a stream record waits for
// the watermark to reach t + grace, then joins the version valid at t, an
// out-of-order table record included; one behind the grace joins at once;
// a tombstone ends a version; inputs behind the history; null values.
func TestJoinTemporalKafkaSteps(t *testing.T) {
	type step struct {
		side record.Side
		ts   int64
		name string // "" with side lt: a watermark step; "~" a nil row
		kind record.Kind
	}
	wm := func(w int64) step { return step{ts: w} }
	steps := []step{
		{rt, 0, "v0", 0},
		{lt, 0, "p0", 0}, wm(0), wm(1), // buffered until 0 + 2
		{rt, 0, "v0b", 0}, // replaces v0 before p0 is released
		wm(2),             // p0 released with v0b
		{lt, 5, "p5", 0},
		{rt, 4, "v4", 0}, // out of order: p5 (still buffered) sees it
		wm(7),
		{lt, 3, "p3", 0},                   // 3 + 2 <= 7: behind the grace, joined at once
		{rt, 6, "", record.Delete},         // tombstone from 6
		{lt, 6, "p6", 0}, {lt, 8, "p8", 0}, // buffered
		{rt, 8, "v8", 0},                     // p8 sees it
		{lt, 9, "~", 0},                      // null value: dropped
		wm(20),                               // releases p6 (the tombstone: none) and p8
		{lt, 9, "p9", 0},                     // 9 < 20 - 10: behind the history; the latest version, v8, is valid at 9
		{lt, 7, "p7", 0},                     // behind the history; the latest version is not valid at 7: none
		{rt, 9, "v9", 0},                     // behind the history: late
		{lt, 10, "p10", 0},                   // at the horizon: joined at once with v8
		{rt, 15, "v15", record.UpdateBefore}, // a -U is a tombstone too
		{lt, 16, "p16", 0},
	}
	for _, c := range []struct {
		name string
		typ  TimedJoinType
		want []string // "wm: ts l,r"
		late []string // "name reason"
	}{
		{"left", TimedLeftOuter, []string{
			"2: 0 p0,v0b", "7: 5 p5,v4", "7: 3 p3,v0b", "20: 6 p6,-", "20: 8 p8,v8", "20: 9 p9,v8", "20: 7 p7,-", "20: 10 p10,v8", "20: 16 p16,-"},
			[]string{"~ null-value", "v9 behind-history"}},
		{"inner", TimedInner, []string{
			"2: 0 p0,v0b", "7: 5 p5,v4", "7: 3 p3,v0b", "20: 8 p8,v8", "20: 9 p9,v8", "20: 10 p10,v8"},
			[]string{"~ null-value", "p7 behind-history", "v9 behind-history"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := kafkaTemporalDriver(t, c.typ, 2, 10)
			var got []string
			collect := func(at string) {
				for _, l := range fmtPairs(t, "visit", "ad", d.take()) {
					got = append(got, at+": "+l)
				}
			}
			for _, s := range steps {
				if s.name == "" && s.kind == 0 {
					d.advance(s.ts)
					collect(fmt.Sprint(s.ts))
					continue
				}
				row := named(s.name)
				if s.name == "~" || s.name == "" {
					row = nil
				}
				pos := record.Position{Source: s.side.String(), Offset: d.offs[s.side&1]}
				d.offs[s.side&1]++
				d.j.OnElement(Element{Side: s.side, Ts: s.ts, Row: row, Pos: pos, Kind: s.kind}, d.wm, &d.fx)
				d.effects()
				collect(fmt.Sprint(d.wm))
			}
			d.advance(math.MaxInt64)
			collect("final")
			eqLines(t, "outputs", got, c.want)
			var late []string
			for _, l := range d.late {
				n := "~"
				if l.Element.Row != nil {
					n = l.Element.Row["n"].(string)
				}
				late = append(late, n+" "+l.Reason)
			}
			eqLines(t, "late", late, c.late)
			if !d.j.Empty() {
				// v8's tombstone at 15 is the newest entry: it stays, as the
				// versioned store keeps its latest value.
				t.Logf("state left: %s", d.j.Snapshot())
			}
		})
	}
}

// TestJoinTemporalKafkaPrunes: versions behind the history go, whatever
// their arrival order, and the newest one stays.
func TestJoinTemporalKafkaPrunes(t *testing.T) {
	for _, order := range [][]int64{{5, 10, 20}, {20, 10, 5}, {10, 20, 5}} {
		d := kafkaTemporalDriver(t, TimedLeftOuter, 0, 10)
		for _, ts := range order {
			d.el(rt, ts, named(fmt.Sprint("v", ts)))
		}
		d.advance(100)
		if snap := string(d.j.Snapshot()); !strings.Contains(snap, `"n":"v20"`) || strings.Count(snap, `"t":`) != 1 {
			t.Errorf("arrival order %v: state %s, want only v20", order, d.j.Snapshot())
		}
	}
}

// TestJoinTemporalKafkaOracle runs random streams (out-of-order table
// records and tombstones, records behind the grace and the history) with
// snapshots and restores between steps, against a model that keeps every
// version for ever: pruning must change no output.
func TestJoinTemporalKafkaOracle(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewSource(seed))
		grace := int64(rng.Intn(6))
		history := grace + int64(rng.Intn(20)) + 1
		typ := []TimedJoinType{TimedInner, TimedLeftOuter}[seed%2]
		d := kafkaTemporalDriver(t, typ, grace, history)
		d.rng, d.restore = rand.New(rand.NewSource(seed)), 0.3
		type ver struct {
			ts   int64
			name string // "" a tombstone
		}
		var versions []ver // every accepted version, by ts
		type probe struct {
			ts   int64
			name string
		}
		var pending []probe
		var want []string
		// join answers as Kafka Streams' versioned store: behind the
		// history (t < horizon) only the latest version, if valid at t.
		join := func(p probe, horizon int64) {
			name := "-"
			i := slices.IndexFunc(versions, func(v ver) bool { return v.ts > p.ts })
			if i < 0 {
				i = len(versions)
			}
			if p.ts < horizon && i < len(versions) {
				i = 0
			}
			if i > 0 && versions[i-1].name != "" {
				name = versions[i-1].name
			}
			if name != "-" || typ == TimedLeftOuter {
				want = append(want, fmt.Sprintf("%d %s,%s", p.ts, p.name, name))
			}
		}
		release := func(wm int64) {
			slices.SortStableFunc(pending, func(a, b probe) int { return int(a.ts - b.ts) })
			n := 0
			for n < len(pending) && pending[n].ts+grace <= wm {
				join(pending[n], math.MinInt64) // a buffered record is never behind the history
				n++
			}
			pending = pending[n:]
		}
		maxTs := int64(0)
		for i := range 300 {
			ts := maxTs - int64(rng.Intn(int(history)+10)) + int64(rng.Intn(5))
			maxTs = max(maxTs, ts)
			horizon := subSat(d.wm, history)
			switch r := rng.Intn(10); {
			case r < 4:
				name := fmt.Sprint("p", i)
				d.el(lt, ts, named(name))
				if ts+grace <= d.wm {
					join(probe{ts, name}, horizon)
				} else {
					pending = append(pending, probe{ts, name})
				}
			default:
				name, kind := fmt.Sprint("v", i), record.Insert
				if r == 9 {
					name, kind = "", record.Delete
				}
				row := named(name)
				if name == "" {
					row = nil
				}
				pos := record.Position{Source: "right", Offset: d.offs[1]}
				d.offs[1]++
				d.j.OnElement(Element{Side: rt, Ts: ts, Row: row, Pos: pos, Kind: kind}, d.wm, &d.fx)
				d.effects()
				if ts >= horizon {
					j := slices.IndexFunc(versions, func(v ver) bool { return v.ts >= ts })
					switch {
					case j >= 0 && versions[j].ts == ts:
						versions[j].name = name
					case j >= 0:
						versions = slices.Insert(versions, j, ver{ts, name})
					default:
						versions = append(versions, ver{ts, name})
					}
				}
			}
			if rng.Intn(3) == 0 {
				d.advance(maxTs)
				release(d.wm)
			}
		}
		d.advance(math.MaxInt64)
		release(math.MaxInt64)
		got := fmtPairs(t, "visit", "ad", d.take())
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d (grace %d, history %d, %v):\ngot  %v\nwant %v", seed, grace, history, typ, got, want)
		}
	}
}
