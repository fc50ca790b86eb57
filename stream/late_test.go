package stream_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/stream"
)

// lateStrings renders late elements as "L<v>/reason" or "R<v>/reason".
func lateStrings[L, R any](ls []stream.Late[L, R]) []string {
	var out []string
	for _, l := range ls {
		switch {
		case l.Left != nil:
			out = append(out, fmt.Sprintf("L%v@%d/%s", *l.Left, l.Ts, l.Reason))
		case l.Right != nil:
			out = append(out, fmt.Sprintf("R%v@%d/%s", *l.Right, l.Ts, l.Reason))
		}
	}
	return out
}

// lateScript: the watermark 10 comes from both sides before the late
// elements (orange 3, green 4), then on-time ones (orange 12, green 12).
// Execute delivers o1 g2 o2 g5 (wm) (wm) o3 g4 o12 g12.
func lateScript(env *stream.Env) (orange, green *stream.Stream[int]) {
	orange = stream.FromItems(env, stream.At(1, 1), stream.At(2, 2), stream.Watermark[int](10), stream.At(3, 3), stream.At(12, 12))
	green = stream.FromItems(env, stream.At(2, 2), stream.At(5, 5), stream.Watermark[int](10), stream.At(4, 4), stream.At(12, 12))
	return orange, green
}

// TestStreamLateSideOutput checks that every join and window sends its late
// elements to its Late stream and counts them, and that the on-time ones
// still join.
func TestStreamLateSideOutput(t *testing.T) {
	type result struct {
		out  []string
		late []string
	}
	cases := []struct {
		name  string
		build func(env *stream.Env) (*stream.Collected[string], func() []string)
		want  result
	}{
		{"window join", func(env *stream.Env) (*stream.Collected[string], func() []string) {
			o, g := lateScript(env)
			j := stream.Join[string, string](o, g).Where(key).EqualTo(key).
				Window(stream.TumblingEventTime(4 * time.Millisecond))
			out, late := stream.Collect(j.Apply(pair)), stream.Collect(j.Late())
			return out, func() []string { return lateStrings(late.Values()) }
		}, result{[]string{"1,2", "2,2", "12,12"}, []string{"L3@3/window-closed", "R4@4/window-closed"}}},
		// [0,4) fires at watermark 10 and is kept until 3+8 = 11: orange 3
		// fires it again, whole; green 4 refires [4,8), which has no pair.
		{"window join within allowed lateness fires again", func(env *stream.Env) (*stream.Collected[string], func() []string) {
			o, g := lateScript(env)
			j := stream.Join[string, string](o, g).Where(key).EqualTo(key).
				Window(stream.TumblingEventTime(4 * time.Millisecond)).AllowedLateness(8 * time.Millisecond)
			out, late := stream.Collect(j.Apply(pair)), stream.Collect(j.Late())
			return out, func() []string { return lateStrings(late.Values()) }
		}, result{[]string{"1,2", "2,2", "1,2", "2,2", "3,2", "12,12"}, nil}},
		{"coGroup", func(env *stream.Env) (*stream.Collected[string], func() []string) {
			o, g := lateScript(env)
			j := stream.CoGroup[string, string](o, g).Where(key).EqualTo(key).
				Window(stream.TumblingEventTime(4 * time.Millisecond))
			out := stream.Collect(j.Apply(func(k string, os, gs []int, emit func(string)) { emit(fmt.Sprint(os, gs)) }))
			late := stream.Collect(j.Late())
			return out, func() []string { return lateStrings(late.Values()) }
		}, result{[]string{"[1 2] [2]", "[] [5]", "[12] [12]"}, []string{"L3@3/window-closed", "R4@4/window-closed"}}},
		{"interval join", func(env *stream.Env) (*stream.Collected[string], func() []string) {
			o, g := lateScript(env)
			j := stream.IntervalJoin[string](stream.KeyBy(o, key), stream.KeyBy(g, key)).Between(-time.Millisecond, time.Millisecond)
			out := stream.Collect(j.Process(func(a, b int, _ stream.PairContext, emit func(string)) { emit(pair(a, b)) }))
			late := stream.Collect(j.Late())
			return out, func() []string { return lateStrings(late.Values()) }
		}, result{[]string{"1,2", "2,2", "12,12"}, []string{"L3@3/behind-watermark", "R4@4/behind-watermark"}}},
		{"time-bounded full outer", func(env *stream.Env) (*stream.Collected[string], func() []string) {
			o, g := lateScript(env)
			j := stream.TimeBoundedJoin[string](stream.KeyBy(o, key), stream.KeyBy(g, key)).Between(0, time.Millisecond).FullOuter()
			out := stream.Collect(j.Process(func(a, b *int) string {
				switch {
				case a == nil:
					return fmt.Sprintf("-,%d", *b)
				case b == nil:
					return fmt.Sprintf("%d,-", *a)
				}
				return pair(*a, *b)
			}))
			late := stream.Collect(j.Late())
			return out, func() []string { return lateStrings(late.Values()) }
		}, result{[]string{"1,2", "2,2", "-,5", "12,12"}, []string{"L3@3/behind-watermark", "R4@4/behind-watermark"}}},
		{"temporal", func(env *stream.Env) (*stream.Collected[string], func() []string) {
			o, g := lateScript(env)
			j := stream.TemporalJoin[string](stream.KeyBy(o, key), stream.KeyBy(g, key))
			out := stream.Collect(j.Process(func(p int, v *int) string { return pair(p, *v) }))
			late := stream.Collect(j.Late())
			return out, func() []string { return lateStrings(late.Values()) }
		}, result{[]string{"2,2", "12,12"}, []string{"L3@3/behind-watermark", "R4@4/behind-watermark"}}},
		{"temporal late delete", func(env *stream.Env) (*stream.Collected[string], func() []string) {
			o, g := lateScript(env)
			j := stream.TemporalJoin[string](stream.KeyBy(o, key), stream.KeyBy(g, key)).
				Deletes(func(v int) bool { return v == 4 }).LeftOuter()
			out := stream.Collect(j.Process(func(p int, v *int) string {
				if v == nil {
					return fmt.Sprintf("%d,-", p)
				}
				return pair(p, *v)
			}))
			late := stream.Collect(j.Late())
			return out, func() []string { return lateStrings(late.Values()) }
		}, result{[]string{"1,-", "2,2", "12,12"}, []string{"L3@3/behind-watermark", "R4@4/behind-watermark"}}},
		{"keyed window", func(env *stream.Env) (*stream.Collected[string], func() []string) {
			o, _ := lateScript(env)
			w := stream.KeyBy(o, key).Window(stream.TumblingEventTime(4 * time.Millisecond))
			out := stream.Collect(stream.Map(w.Reduce(func(a, b int) int { return a + b }), func(n int) string { return fmt.Sprint(n) }))
			late := stream.Collect(w.Late())
			return out, func() []string {
				var s []string
				for _, v := range late.Timestamped() {
					s = append(s, fmt.Sprintf("L%d@%d/%s", v.Value, v.Ts, joins.LateWindowClosed))
				}
				return s
			}
		}, result{[]string{"3", "12"}, []string{"L3@3/window-closed"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := stream.NewEnv()
			out, late := c.build(env)
			if err := env.Execute(); err != nil {
				t.Fatal(err)
			}
			if got := out.Values(); !slices.Equal(got, c.want.out) {
				t.Errorf("out  %q\nwant %q", got, c.want.out)
			}
			if got := late(); !slices.Equal(got, c.want.late) {
				t.Errorf("late %q\nwant %q", got, c.want.late)
			}
			if env.LateCount() != len(c.want.late) {
				t.Errorf("LateCount %d, want %d", env.LateCount(), len(c.want.late))
			}
		})
	}
}

// TestStreamTemporalProcessingTime: the processing-time variant joins each
// probe with the version current on arrival, at once; nothing is late.
func TestStreamTemporalProcessingTime(t *testing.T) {
	env := stream.NewEnv()
	probes := stream.FromItems(env, stream.At(100, 1), stream.Watermark[int](1000), stream.At(5, 2), stream.At(6, 3))
	versions := stream.FromItems(env, stream.At(50, 10), stream.At(1, 20), stream.At(2, 0))
	j := stream.TemporalJoin[string](stream.KeyBy(probes, key), stream.KeyBy(versions, key)).
		ProcessingTime().LeftOuter().Deletes(func(v int) bool { return v == 0 })
	out, err := stream.ExecuteAndCollect(j.Process(func(p int, v *int) string {
		if v == nil {
			return fmt.Sprintf("%d,-", p)
		}
		return pair(p, *v)
	}))
	if err != nil {
		t.Fatal(err)
	}
	// Arrivals: p1, v10, (wm), v20, p2, v-delete, p3.
	if want := []string{"1,-", "2,20", "3,-"}; !slices.Equal(out, want) {
		t.Fatalf("got %q, want %q", out, want)
	}
	if env.LateCount() != 0 {
		t.Fatalf("LateCount %d, want 0", env.LateCount())
	}
}
