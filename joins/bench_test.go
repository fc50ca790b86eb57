package joins

import (
	"math/rand"
	"testing"

	"github.com/joinery/joinery/record"
)

// BenchmarkCDCOnEvent measures Route plus OnEvent over a random valid CDC
// history over the oracle's small id spaces (few, hot keys; moves, id changes
// and deletes included), per join type.
func BenchmarkCDCOnEvent(b *testing.B) {
	for _, typ := range []JoinType{Inner, LeftOuter, FullOuter} {
		b.Run(typ.String(), func(b *testing.B) {
			spec := projSpec(typ)
			w := &world{rng: rand.New(rand.NewSource(1)), users: map[int]record.Row{}, domains: map[int]record.Row{}}
			type input struct {
				side record.Side
				c    record.Change
			}
			const n = 1 << 14
			inputs := make([]input, n)
			for i := range inputs {
				side, c := w.next()
				c.Pos = record.Position{Source: side.String(), Offset: int64(i)}
				inputs[i] = input{side, c}
			}
			var events []record.Event
			for _, in := range inputs {
				evs, err := spec.Route(in.side, in.c)
				if err != nil {
					b.Fatal(err)
				}
				events = append(events, evs...)
			}
			b.ReportAllocs()
			b.ResetTimer()
			keys := map[record.Key]*CDC{}
			var out []record.Output
			outputs := 0
			for i := 0; i < b.N; i++ {
				if i%len(events) == 0 {
					clear(keys) // start the history again from empty state
				}
				e := events[i%len(events)]
				st := keys[e.Key]
				if st == nil {
					st = NewCDC(spec)
					keys[e.Key] = st
				}
				out = st.OnEvent(e, out[:0])
				outputs += len(out)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(outputs)/float64(b.N), "outputs/event")
		})
	}
}

// BenchmarkCDCSnapshot measures encoding and decoding one key's state with a
// user and 8 domains.
func BenchmarkCDCSnapshot(b *testing.B) {
	spec := projSpec(LeftOuter)
	j := NewCDC(spec)
	j.OnEvent(record.Event{Side: record.Left, Op: record.OpCreate, After: egor1}, nil)
	for i := 1; i <= 8; i++ {
		j.OnEvent(record.Event{Side: record.Right, Op: record.OpCreate, After: domain(i, 1, "Approval")}, nil)
	}
	snap := j.Snapshot()
	b.ReportAllocs()
	for b.Loop() {
		if err := NewCDC(spec).Restore(j.Snapshot()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(snap)), "bytes/key")
}
