package stream_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/stream"
)

func ts(n int) int64 { return int64(n) }

// TestStreamOperators checks the operators of seed flink-operators, each
// on a small input, values and times.
func TestStreamOperators(t *testing.T) {
	type tc struct {
		name  string
		build func(env *stream.Env) *stream.Stream[string]
		want  []string // "value@ts"
	}
	nums := func(env *stream.Env) *stream.Stream[int] {
		return stream.FromSlice(env, []int{0, 1, 2, 3}, ts)
	}
	str := func(s *stream.Stream[int]) *stream.Stream[string] {
		return stream.Map(s, func(n int) string { return fmt.Sprint(n) })
	}
	cases := []tc{
		{"map doubles and keeps times", func(env *stream.Env) *stream.Stream[string] {
			return str(stream.Map(nums(env), func(n int) int { return 2 * n }))
		}, []string{"0@0", "2@1", "4@2", "6@3"}},
		{"flatMap splits sentences", func(env *stream.Env) *stream.Stream[string] {
			s := stream.FromSlice(env, []string{"hello apache flink", "", "streaming compute"}, func(string) int64 { return 7 })
			return stream.FlatMap(s, func(v string, emit func(string)) {
				for _, w := range strings.Fields(v) {
					emit(w)
				}
			})
		}, []string{"hello@7", "apache@7", "flink@7", "streaming@7", "compute@7"}},
		{"filter drops zeros", func(env *stream.Env) *stream.Stream[string] {
			return str(nums(env).Filter(func(n int) bool { return n != 0 }))
		}, []string{"1@1", "2@2", "3@3"}},
		{"union interleaves in arrival order", func(env *stream.Env) *stream.Stream[string] {
			a := stream.FromItems(env, stream.At(0, "a0"), stream.At(1, "a1"))
			b := stream.FromItems(env, stream.At(5, "b5"))
			c := stream.FromItems(env, stream.At(9, "c9"), stream.At(8, "c8"))
			return a.Union(b, c)
		}, []string{"a0@0", "b5@5", "c9@9", "a1@1", "c8@8"}},
		{"union with itself doubles", func(env *stream.Env) *stream.Stream[string] {
			a := stream.FromItems(env, stream.At(0, "x"))
			return a.Union(a)
		}, []string{"x@0", "x@0"}},
		{"rolling reduce per key", func(env *stream.Env) *stream.Stream[string] {
			type kv struct {
				N int
				K string
			}
			s := stream.FromSlice(env, []kv{{1, "a"}, {2, "a"}, {10, "b"}, {3, "a"}, {20, "b"}},
				func(v kv) int64 { return int64(v.N) })
			red := stream.KeyBy(s, func(v kv) string { return v.K }).
				Reduce(func(acc, v kv) kv { return kv{acc.N + v.N, v.K} })
			return stream.Map(red, func(v kv) string { return fmt.Sprint(v.K, v.N) })
		}, []string{"a1@1", "a3@2", "b10@10", "a6@3", "b30@20"}},
		{"coMap keeps both types", func(env *stream.Env) *stream.Stream[string] {
			a := stream.FromItems(env, stream.At(1, 1), stream.At(2, 2))
			b := stream.FromItems(env, stream.At(3, "three"))
			return stream.CoMap(stream.Connect(a, b),
				func(n int) string { return fmt.Sprint("int ", n) },
				func(s string) string { return "str " + s })
		}, []string{"int 1@1", "str three@3", "int 2@2"}},
		{"coFlatMap", func(env *stream.Env) *stream.Stream[string] {
			a := stream.FromItems(env, stream.At(1, 2))
			b := stream.FromItems(env, stream.At(3, "x y"))
			return stream.CoFlatMap(stream.Connect(a, b),
				func(n int, emit func(string)) {
					for i := range n {
						emit(fmt.Sprint(i))
					}
				},
				func(s string, emit func(string)) {
					for _, w := range strings.Fields(s) {
						emit(w)
					}
				})
		}, []string{"0@1", "1@1", "x@3", "y@3"}},
		{"tumbling window reduce per key", func(env *stream.Env) *stream.Stream[string] {
			s := stream.FromSlice(env, []int{0, 1, 2, 3, 4, 5, 6}, ts)
			w := stream.KeyBy(s, func(n int) bool { return n%2 == 0 }).
				Window(stream.TumblingEventTime(3 * time.Millisecond)).
				Reduce(func(a, b int) int { return a + b })
			return str(w)
		}, []string{"2@2", "1@2", "8@5", "4@5", "6@8"}}, // keys fire in order of (re)appearance
		{"sliding window apply sees the window", func(env *stream.Env) *stream.Stream[string] {
			s := stream.FromSlice(env, []int{0, 1, 2}, ts)
			return stream.WindowApply(stream.KeyBy(s, func(int) int { return 0 }).
				Window(stream.SlidingEventTime(2*time.Millisecond, time.Millisecond)),
				func(k int, w stream.Window, elems []int, emit func(string)) { emit(fmt.Sprint(w, elems)) })
		}, []string{"[-1,1) [0]@0", "[0,2) [0 1]@1", "[1,3) [1 2]@2", "[2,4) [2]@3"}},
		{"session window aggregate sees the session", func(env *stream.Env) *stream.Stream[string] {
			s := stream.FromSlice(env, []int{1, 2, 3, 10, 11, 20}, ts)
			return stream.WindowAggregate(stream.KeyBy(s, func(int) string { return "k" }).
				Window(stream.SessionEventTime(2*time.Millisecond)), 0,
				func(acc, n int) int { return acc + n },
				func(k string, w stream.Window, sum int) string { return fmt.Sprint(k, w, sum) })
		}, []string{"k[1,5) 6@4", "k[10,13) 21@12", "k[20,22) 20@21"}},
		{"tumbling window with offset", func(env *stream.Env) *stream.Stream[string] {
			s := stream.FromSlice(env, []int{0, 1, 2, 5, 6}, ts)
			return stream.WindowApply(stream.KeyBy(s, func(int) int { return 0 }).
				Window(stream.TumblingEventTime(5*time.Millisecond).WithOffset(time.Millisecond)),
				func(k int, w stream.Window, elems []int, emit func(string)) { emit(fmt.Sprint(w, elems)) })
		}, []string{"[-4,1) [0]@0", "[1,6) [1 2 5]@5", "[6,11) [6]@10"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := stream.NewEnv()
			got := stream.Collect(c.build(env))
			if err := env.Execute(); err != nil {
				t.Fatal(err)
			}
			var gs []string
			for _, e := range got.Timestamped() {
				gs = append(gs, fmt.Sprintf("%s@%d", e.Value, e.Ts))
			}
			if !slices.Equal(gs, c.want) {
				t.Errorf("got  %q\nwant %q", gs, c.want)
			}
		})
	}
}
