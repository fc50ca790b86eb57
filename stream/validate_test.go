package stream_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/stream"
)

func ints(env *stream.Env) *stream.Stream[int] {
	return stream.FromItems(env, stream.At(0, 0), stream.At(1, 1))
}

func idKey(n int) int { return 0 }

// TestStreamBuildErrors checks that pipelines built wrongly are refused by
// Execute, with an error wrapping ErrInvalid that names the problem, and
// that nothing runs.
func TestStreamBuildErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(env *stream.Env)
		want  string
	}{
		{"interval lower > upper", func(env *stream.Env) {
			stream.IntervalJoin[int](stream.KeyBy(ints(env), idKey), stream.KeyBy(ints(env), idKey)).
				Between(3*time.Millisecond, 2*time.Millisecond).
				Process(func(l, r int, _ stream.PairContext, emit func(int)) { emit(l) })
		}, "lower: must be <= upper (3 > 2)"},
		{"interval exclusive bounds leave no time", func(env *stream.Env) {
			stream.IntervalJoin[int](stream.KeyBy(ints(env), idKey), stream.KeyBy(ints(env), idKey)).
				Between(0, time.Millisecond).LowerBoundExclusive().UpperBoundExclusive().
				Process(func(l, r int, _ stream.PairContext, emit func(int)) { emit(l) })
		}, "leave no time to match"},
		{"time-bounded lower > upper", func(env *stream.Env) {
			stream.TimeBoundedJoin[int](stream.KeyBy(ints(env), idKey), stream.KeyBy(ints(env), idKey)).
				Between(time.Second, 0).FullOuter().
				Process(func(l, r *int) int { return 0 })
		}, "lower: must be <= upper (1000 > 0)"},
		{"half-bounded range without a TTL", func(env *stream.Env) {
			stream.TimeBoundedJoin[int](stream.KeyBy(ints(env), idKey), stream.KeyBy(ints(env), idKey)).
				AtLeast(time.Second).
				Process(func(l, r *int) int { return 0 })
		}, "ttl: must be set with open: upper"},
		{"half-bounded TTL below the bound's reach", func(env *stream.Env) {
			stream.TimeBoundedJoin[int](stream.KeyBy(ints(env), idKey), stream.KeyBy(ints(env), idKey)).
				AtMost(-2 * time.Second).TTL(time.Second).LeftSemi().
				Process(func(l, r *int) int { return 0 })
		}, "ttl: must be at least -upper (2000)"},
		{"TTL on a bounded range", func(env *stream.Env) {
			stream.TimeBoundedJoin[int](stream.KeyBy(ints(env), idKey), stream.KeyBy(ints(env), idKey)).
				Between(0, time.Second).TTL(time.Hour).
				Process(func(l, r *int) int { return 0 })
		}, "ttl: only for a half-bounded range"},
		{"sub-millisecond bound", func(env *stream.Env) {
			stream.IntervalJoin[int](stream.KeyBy(ints(env), idKey), stream.KeyBy(ints(env), idKey)).
				Between(-time.Microsecond, time.Millisecond).
				Process(func(l, r int, _ stream.PairContext, emit func(int)) { emit(l) })
		}, "lower bound: -1µs is not a whole number"},
		{"tumbling size 0", func(env *stream.Env) {
			stream.Join[int, int](ints(env), ints(env)).Where(idKey).EqualTo(idKey).
				Window(stream.TumblingEventTime(0)).Apply(func(l, r int) int { return l })
		}, "size: must be positive"},
		{"sliding offset too large", func(env *stream.Env) {
			stream.CoGroup[int, int](ints(env), ints(env)).Where(idKey).EqualTo(idKey).
				Window(stream.SlidingEventTime(4*time.Millisecond, 2*time.Millisecond).WithOffset(2 * time.Millisecond)).
				Apply(func(k int, l, r []int, emit func(int)) {})
		}, "offset: must be within (-slide, slide)"},
		{"session with offset", func(env *stream.Env) {
			stream.KeyBy(ints(env), idKey).Window(stream.SessionEventTime(time.Millisecond).WithOffset(time.Millisecond)).
				Reduce(func(a, b int) int { return a })
		}, "a session window takes no offset"},
		{"negative lateness", func(env *stream.Env) {
			stream.Join[int, int](ints(env), ints(env)).Where(idKey).EqualTo(idKey).
				Window(stream.TumblingEventTime(time.Millisecond)).AllowedLateness(-time.Millisecond).
				Apply(func(l, r int) int { return l })
		}, "allowed_lateness: must not be negative"},
		{"negative out-of-orderness", func(env *stream.Env) {
			stream.FromSlice(env, []int{1}, func(n int) int64 { return 0 }, stream.BoundedOutOfOrderness(-time.Millisecond))
		}, "MaxOutOfOrderness -1 is negative"},
		{"streams of two envs", func(env *stream.Env) {
			other := stream.NewEnv()
			ints(env).Union(ints(other))
		}, "different Envs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := stream.NewEnv()
			ran := false
			stream.ForEach(stream.FromItems(env, stream.At(0, 0)), func(int, int64) { ran = true })
			c.build(env)
			err := env.Execute()
			if !errors.Is(err, stream.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Execute: %v, want ErrInvalid and %q", err, c.want)
			}
			if ran {
				t.Error("an invalid pipeline ran")
			}
		})
	}
}

func TestStreamExecuteOnce(t *testing.T) {
	env := stream.NewEnv()
	got := stream.Collect(ints(env))
	if err := env.Execute(); err != nil {
		t.Fatal(err)
	}
	if err := env.Execute(); !errors.Is(err, stream.ErrExecuted) {
		t.Fatalf("second Execute: %v, want ErrExecuted", err)
	}
	if got.Len() != 2 {
		t.Fatalf("collected %d elements, want 2", got.Len())
	}
}
