package stream_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/joinery/joinery/stream"
)

// figure returns the seed's orange and green streams (flink-joining,
// tumbling figure): orange elements 0 to 7 and green 0, 1, 3, 4, 5, each
// element its own time in ms, all of one key. No watermark comes before the
// end, so every element is on time.
func figure(env *stream.Env) (orange, green *stream.Stream[int]) {
	var o, g []stream.Item[int]
	for _, t := range []int{0, 1, 2, 3, 4, 5, 6, 7} {
		o = append(o, stream.At(int64(t), t))
	}
	for _, t := range []int{0, 1, 3, 4, 5} {
		g = append(g, stream.At(int64(t), t))
	}
	return stream.FromItems(env, o...), stream.FromItems(env, g...)
}

func key(int) string { return "k" }

func pair(o, g int) string { return fmt.Sprintf("%d,%d", o, g) }

// The seed's tumbling window join: size 2 ms gives windows [0,1], [2,3],
// ... ([0,2), [2,4), ...); every pair of a window is joined and stamped with
// the window's largest time. Window [6,7] holds orange 6 and 7 but no green,
// so it emits nothing.
func ExampleJoin() {
	env := stream.NewEnv()
	orange, green := figure(env)
	joined := stream.Join[string, string](orange, green).
		Where(key).EqualTo(key).
		Window(stream.TumblingEventTime(2 * time.Millisecond)).
		Apply(pair)
	stream.ForEach(joined, func(v string, ts int64) { fmt.Printf("%s @%d\n", v, ts) })
	if err := env.Execute(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 0,0 @1
	// 0,1 @1
	// 1,0 @1
	// 1,1 @1
	// 2,3 @3
	// 3,3 @3
	// 4,4 @5
	// 4,5 @5
	// 5,4 @5
	// 5,5 @5
}

// The seed's sliding window join: size 2 ms sliding by 1 ms gives windows
// [-1,0], [0,1], [1,2], [2,3], ... Orange 2 joins green 3 in window [2,3]
// but nothing in window [1,2]; orange 0 and green 0 meet in two windows.
func ExampleJoin_sliding() {
	env := stream.NewEnv()
	orange := stream.FromItems(env, stream.At(0, 0), stream.At(2, 2))
	green := stream.FromItems(env, stream.At(0, 0), stream.At(3, 3))
	joined := stream.Join[string, string](orange, green).
		Where(key).EqualTo(key).
		Window(stream.SlidingEventTime(2*time.Millisecond, time.Millisecond)).
		Apply(pair)
	stream.ForEach(joined, func(v string, ts int64) { fmt.Printf("%s @%d\n", v, ts) })
	if err := env.Execute(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 0,0 @0
	// 0,0 @1
	// 2,3 @3
}

// The seed's session window join with a gap of 1 ms: three sessions; the
// first two hold both sides and emit their pairs, the third holds only
// orange 8 and 9 and emits nothing.
func ExampleJoin_session() {
	env := stream.NewEnv()
	orange := stream.FromItems(env, stream.At(0, 0), stream.At(1, 1), stream.At(4, 4), stream.At(8, 8), stream.At(9, 9))
	green := stream.FromItems(env, stream.At(1, 1), stream.At(3, 3), stream.At(5, 5))
	joined := stream.Join[string, string](orange, green).
		Where(key).EqualTo(key).
		Window(stream.SessionEventTime(time.Millisecond)).
		Apply(pair)
	stream.ForEach(joined, func(v string, ts int64) { fmt.Printf("%s @%d\n", v, ts) })
	if err := env.Execute(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 0,1 @1
	// 1,1 @1
	// 4,3 @5
	// 4,5 @5
}

// A FlatJoinFunction emits zero or more results per pair: here only the
// pairs of equal values.
func ExampleWindowJoin_ApplyFlat() {
	env := stream.NewEnv()
	orange, green := figure(env)
	joined := stream.Join[string, string](orange, green).
		Where(key).EqualTo(key).
		Window(stream.TumblingEventTime(2 * time.Millisecond)).
		ApplyFlat(func(o, g int, emit func(string)) {
			if o == g {
				emit(pair(o, g))
			}
		})
	out, err := stream.ExecuteAndCollect(joined)
	fmt.Println(out, err)
	// Output:
	// [0,0 1,1 3,3 4,4 5,5] <nil>
}

// The session join again as a full outer window join (built on the
// coGroup): the third session, orange 8 and 9 alone, now emits each of them
// with no green.
func ExampleWindowJoin_FullOuterApply() {
	env := stream.NewEnv()
	orange := stream.FromItems(env, stream.At(0, 0), stream.At(1, 1), stream.At(4, 4), stream.At(8, 8), stream.At(9, 9))
	green := stream.FromItems(env, stream.At(1, 1), stream.At(3, 3), stream.At(5, 5))
	joined := stream.Join[string, string](orange, green).
		Where(key).EqualTo(key).
		Window(stream.SessionEventTime(time.Millisecond)).
		FullOuterApply(func(o, g *int) string {
			if g == nil {
				return fmt.Sprintf("%d,-", *o)
			}
			if o == nil {
				return fmt.Sprintf("-,%d", *g)
			}
			return pair(*o, *g)
		})
	out, err := stream.ExecuteAndCollect(joined)
	fmt.Println(out, err)
	// Output:
	// [0,1 1,1 4,3 4,5 8,- 9,-] <nil>
}

// The seed's interval join, orange.ts - 2 ms <= green.ts <= orange.ts + 1
// ms, over the tumbling figure's elements (the seed's text names no
// elements for the interval figure). A pair is emitted as soon as both
// elements are there, stamped with the larger time.
func ExampleIntervalJoin() {
	env := stream.NewEnv()
	orange, green := figure(env)
	joined := stream.IntervalJoin[string](stream.KeyBy(orange, key), stream.KeyBy(green, key)).
		Between(-2*time.Millisecond, time.Millisecond).
		Process(func(o, g int, c stream.PairContext, emit func(string)) {
			emit(fmt.Sprintf("%d,%d@%d", o, g, c.Ts))
		})
	out, err := stream.ExecuteAndCollect(joined)
	fmt.Println(out, err)
	// Output:
	// [0,0@0 1,0@1 0,1@1 1,1@1 2,0@2 2,1@2 2,3@3 3,1@3 3,3@3 3,4@4 4,3@4 4,4@4 4,5@5 5,3@5 5,4@5 5,5@5 6,4@6 6,5@6 7,5@7] <nil>
}

// LowerBoundExclusive drops the pairs at exactly orange.ts - 2 ms.
func ExampleIntervalJoined_LowerBoundExclusive() {
	env := stream.NewEnv()
	orange, green := figure(env)
	joined := stream.IntervalJoin[string](stream.KeyBy(orange, key), stream.KeyBy(green, key)).
		Between(-2*time.Millisecond, time.Millisecond).
		LowerBoundExclusive().
		Process(func(o, g int, _ stream.PairContext, emit func(string)) { emit(pair(o, g)) })
	out, err := stream.ExecuteAndCollect(joined)
	fmt.Println(out, err)
	// Output:
	// [0,0 1,0 0,1 1,1 2,1 2,3 3,3 3,4 4,3 4,4 4,5 5,4 5,5 6,5] <nil>
}

// Bounds with lower > upper are refused when the pipeline executes.
func ExampleIntervalJoinBuilder_Between() {
	env := stream.NewEnv()
	orange, green := figure(env)
	stream.IntervalJoin[string](stream.KeyBy(orange, key), stream.KeyBy(green, key)).
		Between(time.Millisecond, -time.Millisecond).
		Process(func(o, g int, _ stream.PairContext, emit func(string)) { emit(pair(o, g)) })
	fmt.Println(env.Execute())
	// Output:
	// stream: invalid pipeline: interval join: lower: must be <= upper (1 > -1)
}

// A window coGroup sees both sides' elements of each key and window, either
// list possibly empty: the session figure, with orange 8 and 9 alone.
func ExampleCoGroup() {
	env := stream.NewEnv()
	orange := stream.FromItems(env, stream.At(0, 0), stream.At(1, 1), stream.At(4, 4), stream.At(8, 8), stream.At(9, 9))
	green := stream.FromItems(env, stream.At(1, 1), stream.At(3, 3), stream.At(5, 5))
	groups := stream.CoGroup[string, string](orange, green).
		Where(key).EqualTo(key).
		Window(stream.SessionEventTime(time.Millisecond)).
		Apply(func(k string, os, gs []int, emit func(string)) {
			emit(fmt.Sprintf("%s: orange %v green %v", k, os, gs))
		})
	stream.ForEach(groups, func(v string, ts int64) { fmt.Printf("%s @%d\n", v, ts) })
	if err := env.Execute(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// k: orange [0 1] green [1] @1
	// k: orange [4] green [3 5] @5
	// k: orange [8 9] green [] @9
}

type visit struct {
	ID   string
	Page string
	At   int64 // ms
}

type ad struct {
	Name string
	Page string
	At   int64 // ms
}

// The seed's temporal table join: each visit joins the latest ad of its
// page as of the visit's time. Ads of page home: A from 0, B from 10, none
// from 20 (a delete), C from 30. Left outer, so visit p25 comes without an
// ad.
func ExampleTemporalJoin() {
	env := stream.NewEnv()
	visits := stream.FromSlice(env, []visit{
		{"p3", "home", 3}, {"p10", "home", 10}, {"p15", "home", 15}, {"p25", "home", 25}, {"p35", "home", 35},
	}, func(v visit) int64 { return v.At }, stream.NoWatermarks())
	ads := stream.FromSlice(env, []ad{
		{"A", "home", 0}, {"B", "home", 10}, {"", "home", 20}, {"C", "home", 30},
	}, func(a ad) int64 { return a.At }, stream.NoWatermarks())
	joined := stream.TemporalJoin[string](
		stream.KeyBy(visits, func(v visit) string { return v.Page }),
		stream.KeyBy(ads, func(a ad) string { return a.Page })).
		Deletes(func(a ad) bool { return a.Name == "" }).
		LeftOuter().
		Process(func(v visit, a *ad) string {
			if a == nil {
				return v.ID + ":-"
			}
			return v.ID + ":" + a.Name
		})
	out, err := stream.ExecuteAndCollect(joined)
	fmt.Println(out, err)
	// Output:
	// [p3:A p10:B p15:B p25:- p35:C] <nil>
}

// The seed's dynamic joiner (Spark): attach the ad shown within 2 minutes
// after a page visit, and emit the visit alone when no ad came (left
// outer), once the watermark — the greatest time seen minus 10 minutes —
// passes the end of its range: v2's range ends at 7 min, and the watermark
// passes it only when a3 (31 min) arrives, after a3 has matched v3.
func ExampleTimeBoundedJoin() {
	const minute = int64(time.Minute / time.Millisecond)
	env := stream.NewEnv()
	visits := stream.FromSlice(env, []visit{{"v1", "home", 0}, {"v2", "cart", 5 * minute}, {"v3", "home", 30 * minute}},
		func(v visit) int64 { return v.At }, stream.BoundedOutOfOrderness(10*time.Minute))
	ads := stream.FromSlice(env, []ad{{"a1", "home", 1 * minute}, {"a2", "cart", 7*minute + 1}, {"a3", "home", 31 * minute}},
		func(a ad) int64 { return a.At }, stream.BoundedOutOfOrderness(10*time.Minute))
	joined := stream.TimeBoundedJoin[string](
		stream.KeyBy(visits, func(v visit) string { return v.Page }),
		stream.KeyBy(ads, func(a ad) string { return a.Page })).
		Between(0, 2*time.Minute).
		LeftOuter().
		Process(func(v *visit, a *ad) string {
			if a == nil {
				return v.ID + " alone"
			}
			return v.ID + " with " + a.Name
		})
	stream.ForEach(joined, func(v string, ts int64) { fmt.Printf("%s @%dmin\n", v, ts/minute) })
	if err := env.Execute(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// v1 with a1 @1min
	// v3 with a3 @31min
	// v2 alone @5min
}

// Late elements go to the join's Late stream, never silently dropped: the
// watermark 5 closes windows [0,2) and [2,4), so orange 2 and green 3 come
// too late. (Execute takes one item from each source in turn, so green 3
// arrives before orange 2.)
func ExampleWindowJoin_Late() {
	env := stream.NewEnv()
	orange := stream.FromItems(env, stream.At(0, 0), stream.At(1, 1), stream.Watermark[int](5), stream.At(2, 2))
	green := stream.FromItems(env, stream.At(0, 0), stream.Watermark[int](5), stream.At(3, 3))
	j := stream.Join[string, string](orange, green).
		Where(key).EqualTo(key).
		Window(stream.TumblingEventTime(2 * time.Millisecond))
	joined := stream.Collect(j.Apply(pair))
	stream.ForEach(j.Late(), func(l stream.Late[int, int], ts int64) {
		if l.Left != nil {
			fmt.Println("late orange", *l.Left, l.Reason)
		} else {
			fmt.Println("late green", *l.Right, l.Reason)
		}
	})
	if err := env.Execute(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(joined.Values(), env.LateCount())
	// Output:
	// late green 3 window-closed
	// late orange 2 window-closed
	// [0,0 1,0] 2
}

// Window aggregation after a join: the tumbling figure's pairs counted per
// key in windows of 4 ms.
func ExampleWindowAggregate() {
	env := stream.NewEnv()
	orange, green := figure(env)
	joined := stream.Join[string, string](orange, green).
		Where(key).EqualTo(key).
		Window(stream.TumblingEventTime(2 * time.Millisecond)).
		Apply(pair)
	counts := stream.WindowAggregate(
		stream.KeyBy(joined, func(string) string { return "k" }).Window(stream.TumblingEventTime(4*time.Millisecond)),
		0,
		func(n int, _ string) int { return n + 1 },
		func(k string, w stream.Window, n int) string { return fmt.Sprintf("%s %v: %d pairs", k, w, n) })
	stream.ForEach(counts, func(v string, ts int64) { fmt.Printf("%s @%d\n", v, ts) })
	if err := env.Execute(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// k [0,4): 6 pairs @3
	// k [4,8): 4 pairs @7
}

// The operators of seed flink-operators: map, flatMap, filter, keyBy with a
// rolling reduce, union, and connect with coMap.
func Example_operators() {
	env := stream.NewEnv()
	nums := stream.FromSlice(env, []int{0, 1, 2, 3, 4, 5}, func(n int) int64 { return int64(n) })
	doubled := stream.Map(nums, func(n int) int { return 2 * n })
	nonZero := doubled.Filter(func(n int) bool { return n != 0 })
	sentences := stream.FromSlice(env, []string{"hello apache flink", "streaming compute"}, func(string) int64 { return 0 })
	words := stream.FlatMap(sentences, func(s string, emit func(string)) {
		for _, w := range strings.Fields(s) {
			emit(w)
		}
	})
	type tuple struct {
		N int
		K string
	}
	tuples := stream.FromSlice(env, []tuple{{1, "a"}, {2, "a"}, {3, "a"}, {4, "b"}}, func(tuple) int64 { return 0 })
	sums := stream.KeyBy(tuples, func(t tuple) string { return t.K }).
		Reduce(func(acc, t tuple) tuple { return tuple{acc.N + t.N, t.K} })
	both := stream.CoMap(stream.Connect(nonZero, words),
		func(n int) string { return fmt.Sprint("n=", n) },
		func(w string) string { return "w=" + w })
	all := both.Union(stream.Map(sums, func(t tuple) string { return fmt.Sprint(t.K, "=", t.N) }))
	out, err := stream.ExecuteAndCollect(all)
	fmt.Println(out, err)
	// Output:
	// [w=hello w=apache w=flink a=1 n=2 w=streaming w=compute a=3 n=4 a=6 n=6 b=4 n=8 n=10] <nil>
}
