// Package bench is Joinery's benchmark harness (DESIGN §7 "How we know",
// STYLE §10 "Benchmarks"): Nexmark-style joins and the users ⋈ domains CDC
// join, each run by the engine and by a plain Go baseline over the same
// events in the same process, alternately for several rounds, reporting the
// medians. Run it with `make bench` or `go run ./cmd/bench`.
//
// Workloads (see Workloads):
//
//   - q3 and q20 are Nexmark's regular (non-windowed) inner joins of
//     insert-only streams; the changelog join (joins.CDC) models them
//     exactly: every match is +I and state is kept forever, as in Flink's
//     regular join without TTL. Their filters run after decoding on the core
//     level; the node has no filter operator, so on the node levels they are
//     pushed down to the source (the file holds only the rows the join
//     keeps) and the baseline reads that same file.
//   - q8 is joins.NewWindowJoin with 10 s tumbling windows driven by
//     timers.TimerService and a bounded-out-of-orderness watermark; core
//     level only (the node runs changelog joins only).
//   - cdc is internal/cdcgen's users 1:N domains history (LEFT JOIN);
//     cdc-skew is GenerateSkew's (Zipf owners, one user owning 20%).
//
// Systems: core (decode, route and per-key state machines in maps, one
// goroutine: the hot path without actors), node (node.Start in-process,
// embedded store, file source, changelog file sink read back after the
// measured part) and node+redis (the same on a redis-server the harness
// starts with RDB snapshots on; its CPU time is added to the node's).
//
// Correctness: every run's output is folded into an order-independent
// Checksum (signed sum of a hash per output, i.e. the digest of the final
// table); engine and baseline must agree or the result is marked invalid.
// The baseline hashes outputs straight from its maps, building no output
// records: it is the floor a join on one core can reach with the same
// decoder.
//
// Figures: events per CPU-second (getrusage around the run, so it is per
// core), with and without the generator's CPU (generation is measured once
// and added), wall-clock rate, peak RSS (VmHWM, reset before each run;
// process-wide, so it includes the pre-generated input), live heap bytes per
// live key on the core level (heap after GC at end of input minus before),
// and for node+redis the snapshot cost relative to the embedded store.
// Events are the stream's events (the Nexmark convention), whatever the
// query keeps. Latency percentiles are not measured yet.
package bench
