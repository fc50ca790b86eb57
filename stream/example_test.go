package stream_test

import (
	"fmt"
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
