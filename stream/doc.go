// Package stream is Joinery's typed, in-process dataflow API: Flink's
// DataStream API in Go, with generics, on top of the join state machines of
// package joins and the watermarks and timers of package timers.
//
// It owns the Go API for jobs written in Go, for embedding and for tests:
// sources with event times and watermarks, the operator set of seed
// flink-operators (Map, FlatMap, Filter, KeyBy, Reduce, Union, Connect with
// CoMap and CoFlatMap, keyed windows with WindowApply, WindowAggregate and
// Reduce) and the event-time joins of seeds flink-joining and
// dynamic-joiner-watermarks (window join and coGroup with tumbling, sliding
// and session windows, outer and left semi window joins, interval join,
// Spark-style time-bounded outer and left semi joins over a bounded or a
// half-bounded range (AtLeast, AtMost, with a TTL or NoTTL), temporal as-of
// join), each with a late-data side
// output. It does not own join semantics: every join and window here runs
// the per-key machines of package joins (joins.Timed), driven per key with a
// timers.TimerService exactly as replay/ drives them; typed values travel
// through the machines inside record.Row values that carry them alongside
// (no JSON, no snapshots). It must not do I/O, read the clock or start
// goroutines: a pipeline is deterministic.
//
// # Times
//
// Event time is int64 milliseconds, as in package joins. Lengths (window
// sizes, slides, gaps, offsets, bounds, lateness, out-of-orderness) are
// time.Duration and must be whole milliseconds.
//
// # Execution
//
// NewEnv returns an empty pipeline; sources, operators and sinks are added to
// it, then Execute runs it once, on the calling goroutine. Execute takes one
// item (an element or a watermark) from each source in turn, in the order the
// sources were created, and pushes it through the operators at once; a source
// that runs out sends the final watermark math.MaxInt64 (as a bounded Flink
// source does), so every window fires and every outer row is padded before
// Execute returns. A two-input operator's watermark is the minimum of its
// inputs'. Mistakes found while building (an interval join with lower >
// upper, a window of size 0, a duration that is not whole milliseconds,
// streams of different Envs) are collected and returned by Execute, wrapping
// ErrInvalid, before anything runs; builders never panic.
//
// Go methods cannot have type parameters, so the operators that change the
// element type are top-level generic functions, and the joins are
// top-level functions returning builders whose methods carry the type
// parameters. The result type O (and for Join and CoGroup the key type K)
// is given explicitly; the input types are inferred:
//
//	env := stream.NewEnv()
//	orange := stream.FromItems(env, stream.At(0, 0), stream.At(1, 1), ...)
//	green := stream.FromItems(env, stream.At(0, 0), ...)
//	key := func(int) string { return "k" }
//	pairs := stream.Join[string, string](orange, green).
//		Where(key).EqualTo(key).
//		Window(stream.TumblingEventTime(2 * time.Millisecond)).
//		Apply(func(o, g int) string { return fmt.Sprint(o, ",", g) })
//	out := stream.Collect(pairs)
//	if err := env.Execute(); err != nil { ... }
//	fmt.Println(out.Values())
//
//	stream.IntervalJoin[string](stream.KeyBy(orange, key), stream.KeyBy(green, key)).
//		Between(-2*time.Millisecond, time.Millisecond).LowerBoundExclusive().
//		Process(func(o, g int, _ stream.PairContext, emit func(string)) { emit(...) })
//
// # Late data
//
// Nothing is dropped silently: every element a join or window reports late
// is counted (Env.LateCount) and sent to the builder's Late stream, which
// the caller may collect or process like any stream.
//
// Nothing here is safe for concurrent use: build and execute a pipeline on
// one goroutine. User functions run on that goroutine, in a deterministic
// order; they must not keep the slices they are given.
package stream
