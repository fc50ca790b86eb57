// Package timers owns event time and processing time for Joinery.
//
// It holds four things:
//
//   - Watermarks: per source partition watermarks with bounded
//     out-of-orderness (as Flink's BoundedOutOfOrdernessWatermarks), idleness
//     (a partition quiet for longer than IdleTimeout stops holding the
//     combined watermark back) and a min (default) or max combine. The
//     combined watermark never goes backwards.
//   - Global: a node's global watermark when several nodes read a job's
//     sources, its local watermark combined with its peers'
//     (CombineWatermarks), and what it publishes to them, held back by
//     batches still in flight.
//   - TimerService: the event-time timer index, one timer per (key,
//     timestamp), fired in (timestamp, key) order when the watermark reaches
//     them. Its contents encode to a versioned byte form for snapshots.
//   - Clock: the processing-time source. SystemClock (clock.go, the only file
//     that reads the wall clock) for production, ManualClock for tests.
//
// What it must not do: know about Redis, actors or the cluster; start
// goroutines; read the wall clock outside clock.go. Every time is a
// parameter: event time as int64 milliseconds, processing time as a
// time.Time the caller read from its Clock. It imports only the standard
// library and record.
//
// None of the types are safe for concurrent use except ManualClock and
// SystemClock; the owner (a node's timer goroutine or a key actor) serialises
// calls.
//
// Sketch of use by a node:
//
//	wm, err := timers.NewWatermarks(timers.WatermarkConfig{
//		MaxOutOfOrderness: 5_000,
//		IdleTimeout:       time.Minute,
//	})
//	...
//	wm.Observe(ev.Pos.PartitionID(), change.TsMs, clock.Now())
//	wm.Advance(clock.Now())
//	for _, t := range ts.Advance(wm.Current()) {
//		// deliver t to the key actor of t.Key
//	}
package timers
