// Package bench is Joinery's benchmark harness (docs/performance.md: what
// is measured, how, and the figures): Nexmark-style joins and the users ⋈ domains CDC
// join, each run by the engine and by a plain Go baseline over the same
// events in the same process, alternately for several rounds, reporting the
// medians, then an open-loop latency run, then the performance targets. Run it
// with `make bench` or `go run ./cmd/bench`.
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
//     timers.TimerService and a bounded-out-of-orderness watermark
//     (max(ts) - bound - 1). The node's window join reads plain JSON
//     events, so on the node levels (node, node+redis, node+redis+budget;
//     not the stream systems) the stream's persons and auctions
//     are written as plain JSON (the fields q8 reads) to two files, read by
//     two file sources with side: left/right and the core's bound as
//     max_out_of_orderness, and the node's baseline reads those same
//     events (Workload.NodeSources, NodeBaseline). The node's output ids
//     come from its source positions, so its output is checksummed without
//     them: the joined pairs with their window's time. The stream systems
//     do not run it (they shard one Debezium input by join_on).
//   - q9 (winning bids, Flink's q9.sql: per auction the highest bid with
//     dateTime <= bid.dateTime <= expires, ties to the earlier bid, then the
//     lower bid id) is built from the engine's pieces, in this package: a
//     joins.Interval per auction id (auction left, bid right, Lower 0, Upper
//     the generator's longest lifetime; the interval join's bounds are fixed
//     per job, so its FlatJoin drops pairs past the auction's own expiry), a
//     per-auction max reducer, and a timers.TimerService timer at expires+1
//     that emits the winner once the watermark passes the expiry (Beam's
//     WinningBids timing; Flink's changelog of the current winner has the
//     same final table). No joins/ machine reduces pairs, so the reducer is
//     the bench's; the node has no such operator (core level only). The
//     baseline keeps open auctions and early bids in maps.
//   - q20-skew is q20 with auction 1000 (made category 10) pinned to take
//     55% of all bids (nexmark.Config.PinnedAuctionShare), about half of all
//     events on one key for the whole run; on the node levels too (the hot
//     key's writes are incremental: a write carries the bids that changed).
//   - cdc is internal/cdcgen's users 1:N domains history (LEFT JOIN);
//     cdc-skew is GenerateSkew's: Zipf owners and user 1 owning half of the
//     domains, so about half of the changes land on one key
//     (Result.HotKeyShare gives the measured share).
//
// Systems: core (decode, route and per-key state machines in maps, one
// goroutine: the hot path without actors), node (node.Start in-process,
// embedded store, file source, changelog file sink read back after the
// measured part) and node+redis (the same on a redis-server the harness
// starts with RDB snapshots on; its CPU time is added to the node's),
// node+redis+budget (node+redis with state.memory_budget a quarter of the
// working set, the live keys' accounted bytes after an unmeasured run with
// every key live: the budget passivates the least recently used keys and
// their next change reactivates them from Redis; the target is its
// events per CPU-second >= 0.5 × node+redis's), and the co-partitioned
// fleet (streams.go): each table's input written before the nodes start
// to 12 shard streams by its join key's key group (a move split into a
// delete and a create, cdcgen.ByJoinKey), read by sharded redis-stream
// sources with partitioned_by: join_key, state on the same Redis, each
// node its own file sink — node+streams on one node, 3nodes+streams on
// three in one process, each reading the shards whose key groups it hosts
// (no key request crosses to another node: Result.KeyRequests). Their
// measured part is the nodes' Run until every entry is acknowledged, then
// their Close, the process's CPU (every node's) plus redis-server's; the
// checksum is the union of the sinks' (order-independent, so no order
// across the files is needed). The target is 3nodes+streams >= 0.8
// × node+streams per CPU-second. 3nodes+redis (not run by default) is
// node+redis with two more nodes without sources: the one reader's keys
// spread over three nodes, most requests remote (target: >= 0.6 ×
// node+redis). node+kafka and node+kafka+eos (kafka.go; changelog joins)
// run the node on the embedded store reading the input from a Kafka topic
// (kfake in the process, the input produced before the node starts) into
// a Kafka sink, at least once and exactly once (kafka.exactly_once: Kafka
// transactions); their measured part is the node's Run until the consumer
// group committed the last input offset, then its Close (kfake's CPU
// counted on both), the output read back read_committed for the checksum.
// The exactly-once sink's cost is 1 - its events per CPU-second over the
// at-least-once one's (Result.EOSCost), printed with both latency runs'
// p99 (a read_committed consumer stamps each output when it fetches it);
// neither has a target.
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
// live key on the core level (heap after GC at end of input minus before;
// the node levels have no such figure), for node+redis the snapshot cost
// relative to the embedded store and what the node sent Redis
// (total_net_input_bytes per second of node.Run and per event: the key
// snapshots with offsets and outboxes) with the RDB saves taken and the RDB
// file's size, its CPU per event split into redis-server's (/proc) and the
// node process's, and the server's INFO commandstats per 1000 events (calls,
// µs per call), and for skewed workloads the ratio to the unskewed one on the
// same system. Events are the stream's events (the Nexmark convention),
// whatever the query keeps.
//
// Latency (Latency, OpenLoop): after a workload's throughput rounds, one
// open-loop run at LoadShare (50%) of the closed-loop events per
// wall-second just measured: event i is released at start + i/rate whether
// or not the engine kept up, and an output's latency is when it was produced
// minus its event's release (no coordinated omission); p50/p99/max are
// weighted by outputs. For q8 and q9 the event is the one whose arrival moved
// the watermark past the window end or the auction's expiry, so the figure
// counts from the moment the watermark passed it; end-of-input flush
// outputs are not counted. Core level: every workload, the Stepper (the same
// code as the throughput run) paced in one goroutine that sleeps when ahead.
// Node levels: cdc only; the node reads its stdin (a file source on "-")
// from a pipe a feeder goroutine writes on the schedule, its stdout sink
// writes to a writer that stamps each write, and an output's event is found
// by the source offset in its id. The latency run's checksum must match the
// baseline's too.
//
// Targets (Target, Report.Targets): engine/baseline
// >= 0.5 (q9, q20, cdc) or 0.7 (q3, q8) on the core and embedded-store node
// levels, node+redis >= 0.7 × node, per core (generator included, as the
// published figures are) q9 >= 115K, q20 >= 170K, cdc >= 300K, p99 <= 10 ms
// for changelog and interval joins and <= 50 ms for windows, engine heap
// overhead over the baseline's <= 1 KB per live key, skewed >= 0.5 ×
// unskewed, three nodes on co-partitioned streams >= 0.8 × one node on
// them — each printed as met or not met; 1M keys in 2 GiB is
// listed as not measured.
package bench
