package stream

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// marks records the watermarks s delivers.
func marks[T any](s *Stream[T]) *[]int64 {
	var ws []int64
	s.subscribe(func(T, int64) {}, func(w int64) { ws = append(ws, w) })
	return &ws
}

// TestStreamWatermarks checks the generated and combined watermarks:
// bounded out-of-orderness emits maxTs - d - 1 after each element when it
// rises (timers.Watermarks), explicit watermarks never go back, an
// exhausted source sends math.MaxInt64, and a two-input operator forwards
// the minimum of its inputs'.
func TestStreamWatermarks(t *testing.T) {
	const end = math.MaxInt64
	cases := []struct {
		name  string
		build func(env *Env) *Stream[int]
		want  []int64
	}{
		{"monotonous by default", func(env *Env) *Stream[int] {
			return FromSlice(env, []int{5, 3, 9}, func(n int) int64 { return int64(n) })
		}, []int64{4, 8, end}},
		{"bounded out-of-orderness", func(env *Env) *Stream[int] {
			return FromSlice(env, []int{5, 3, 9, 7, 12}, func(n int) int64 { return int64(n) },
				BoundedOutOfOrderness(2*time.Millisecond))
		}, []int64{2, 6, 9, end}},
		{"no watermarks", func(env *Env) *Stream[int] {
			return FromSlice(env, []int{5, 3, 9}, func(n int) int64 { return int64(n) }, NoWatermarks())
		}, []int64{end}},
		{"explicit, never backwards", func(env *Env) *Stream[int] {
			return FromItems(env, At(1, 1), Watermark[int](4), Watermark[int](2), At(3, 3), Watermark[int](6))
		}, []int64{4, 6, end}},
		{"union takes the minimum", func(env *Env) *Stream[int] {
			a := FromItems(env, Watermark[int](10), Watermark[int](20))
			b := FromItems(env, Watermark[int](5), Watermark[int](30), Watermark[int](40))
			return a.Union(b)
		}, []int64{5, 20, 30, 40, end}},
		{"join forwards the minimum after firing", func(env *Env) *Stream[int] {
			a := FromItems(env, At(0, 0), Watermark[int](3))
			b := FromItems(env, At(1, 1), Watermark[int](7), Watermark[int](9))
			j := Join[int, int](a, b).Where(func(int) int { return 0 }).EqualTo(func(int) int { return 0 }).
				Window(TumblingEventTime(2 * time.Millisecond))
			return j.Apply(func(l, r int) int { return l + r })
		}, []int64{3, 7, 9, end}}, // a ends (max) after its 3, then b holds the minimum
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := NewEnv()
			got := marks(c.build(env))
			if err := env.Execute(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(*got, c.want) {
				t.Fatalf("watermarks %v, want %v", *got, c.want)
			}
		})
	}
}

// TestStreamKeysForgotten checks that a key whose machine is empty and has
// no timer is dropped (with its timers and key number), so the state of a
// run over many short-lived keys stays bounded.
func TestStreamKeysForgotten(t *testing.T) {
	env := NewEnv()
	var items []Item[int]
	for i := range 100 {
		items = append(items, At(int64(i), i), Watermark[int](int64(i)))
	}
	a, b := FromItems(env, items...), FromItems(env, items...)
	spec := &joins.IntervalSpec{FlatJoin: func(l, r record.Row) []record.Row { return []record.Row{{valueCol: 1}} }}
	op := newKeyedOp[int](env, 2, func() joins.Timed { return joins.NewInterval(spec) })
	id := func(n int) int { return n }
	out := twoInput(op, a, b, id, id, boxRow[int], boxRow[int], emitValues[int], newStream[Late[int, int]](env))
	pairs, most := 0, 0
	ForEach(out, func(int, int64) {
		pairs++
		most = max(most, op.ms.Len(), len(op.ids), op.ms.Timers())
	})
	if err := env.Execute(); err != nil {
		t.Fatal(err)
	}
	if pairs != 100 {
		t.Fatalf("%d pairs, want 100", pairs)
	}
	if most > 3 {
		t.Errorf("up to %d keys or timers held at once, want <= 3", most)
	}
	if op.ms.Len() != 0 || len(op.ids) != 0 || len(op.keys) != 0 || op.ms.Timers() != 0 {
		t.Errorf("left %d machines, %d ids, %d keys, %d timers", op.ms.Len(), len(op.ids), len(op.keys), op.ms.Timers())
	}
}
