package stream_test

import (
	"fmt"
	"time"

	"github.com/joinery/joinery/stream"
)

// A residual condition on the seed's tumbling window join: of each window's
// pairs only those with orange < green are joined, and with LeftCondition
// odd oranges never match. In the left outer join an orange that matched
// nothing is emitted with no green: the odd ones at once (never buffered),
// the others when their window fires.
func ExampleWindowJoin_Condition() {
	env := stream.NewEnv()
	orange, green := figure(env)
	joined := stream.Join[string, string](orange, green).
		Where(key).EqualTo(key).
		Window(stream.TumblingEventTime(2 * time.Millisecond)).
		Condition(func(o, g int) bool { return o < g }).
		LeftCondition(func(o int) bool { return o%2 == 0 }).
		LeftOuterApply(func(o int, g *int) string {
			if g == nil {
				return fmt.Sprintf("%d,-", o)
			}
			return pair(o, *g)
		})
	out, err := stream.ExecuteAndCollect(joined)
	fmt.Println(out, err)
	// Output:
	// [1,- 3,- 5,- 7,- 0,1 2,3 4,5 6,-] <nil>
}

// The seed's visits/ads join with a condition on the pair: an ad joins a
// visit only if it was shown to the same device type. v1's only ad in range
// is for another device, so v1 comes out alone.
func ExampleTimeBoundedJoined_Condition() {
	type view struct {
		ID, Page, Device string
		At               int64
	}
	env := stream.NewEnv()
	visits := stream.FromSlice(env, []view{{"v1", "home", "phone", 0}, {"v2", "home", "desktop", 60_000}},
		func(v view) int64 { return v.At }, stream.BoundedOutOfOrderness(time.Minute))
	ads := stream.FromSlice(env, []view{{"a1", "home", "desktop", 90_000}},
		func(a view) int64 { return a.At }, stream.BoundedOutOfOrderness(time.Minute))
	page := func(v view) string { return v.Page }
	joined := stream.TimeBoundedJoin[string](stream.KeyBy(visits, page), stream.KeyBy(ads, page)).
		Between(0, 2*time.Minute).
		LeftOuter().
		Condition(func(v, a view) bool { return v.Device == a.Device }).
		Process(func(v *view, a *view) string {
			if a == nil {
				return v.ID + " alone"
			}
			return v.ID + " with " + a.ID
		})
	out, err := stream.ExecuteAndCollect(joined)
	fmt.Println(out, err)
	// Output:
	// [v2 with a1 v1 alone] <nil>
}

// An interval join that keeps only pairs whose values differ by exactly 1.
func ExampleIntervalJoined_Condition() {
	env := stream.NewEnv()
	orange, green := figure(env)
	joined := stream.IntervalJoin[string](stream.KeyBy(orange, key), stream.KeyBy(green, key)).
		Between(-2*time.Millisecond, time.Millisecond).
		Condition(func(o, g int) bool { return g-o == 1 || o-g == 1 }).
		RightCondition(func(g int) bool { return g != 4 }).
		Process(func(o, g int, c stream.PairContext, emit func(string)) { emit(pair(o, g)) })
	out, err := stream.ExecuteAndCollect(joined)
	fmt.Println(out, err)
	// Output:
	// [1,0 0,1 2,1 2,3 4,3 4,5 6,5] <nil>
}
