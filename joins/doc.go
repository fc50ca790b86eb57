// Package joins holds Joinery's join state machines: one pure, per-key value
// per join type that turns input events into output records.
//
// It owns the join semantics and nothing else:
//
//   - CDCSpec describes a changelog (CDC) join of two upsert streams: the
//     join type, each side's primary-key and join columns, and the output
//     projection. CDCSpec.Validate checks it and CDCSpec.Route turns one
//     Debezium change into the events for the join keys it touches (a row
//     whose join column changes becomes a retraction at the old key and an
//     insert at the new one). The join type is inner, left, right or full.
//   - Null join values are SQL's: a row whose join column is null (or
//     absent) matches nothing. In a join that keeps its side it lives at a
//     key of its own, NullRowKey(side, primary key) — "\x00null/", the side
//     and the primary key's key form — holding just that row, so it is one
//     more key actor and the per-key machine is unchanged: it emits the row
//     padded, updates and retracts it as any unmatched row of a kept side.
//     Route refuses a real string join value in that form
//     (reason.ReservedKey), so no real key takes one. In a join that does
//     not keep its side such a change routes nowhere: ErrUnmatched, which
//     callers count and do not dead-letter.
//   - CDCSpec.Where is a residual condition on a key's pairs (Condition, as
//     the event-time joins take it): with one, each change recomputes the
//     key's results and emits their difference, so an update that flips
//     the condition retracts or adds its pairs and their padding.
//   - CDC is the state of one join key: the left row (value state) and the
//     right rows by primary key (map state); when the left join column is
//     not the left primary key (CDCSpec.LeftMany) the left rows by primary
//     key too, and a change is visited pair by pair against the other
//     side's rows (Flink's regular join, cdc_many.go). CDC.OnEvent applies one event and
//     appends the resulting changelog records (+I, -U, +U, -D), following
//     Flink's streaming join conventions; with CDCSpec.Kinds KindsFlink,
//     exactly Flink's StreamingJoinOperator row kinds, with KindsKafka
//     Kafka Streams' KTable-KTable Change(new, old) records (a padded row
//     turning into a match is one -U/+U pair), and with MaxTs output times
//     as Kafka Streams' KTable-KTable join stamps them.
//     Snapshot and Restore give its versioned, deterministic encoding.
//   - MultiSpec and Multi are the multi-way changelog join on one key (as
//     Flink's multi-way join operator): a driving table and further tables
//     each inner or left joined to it, every table's rows by primary key at
//     the key and no intermediate result; the same changelog rules as CDC.
//   - The event-time joins (Timed: window and coGroup, interval,
//     time-bounded outer and semi, unbounded with a TTL, temporal, the
//     temporal join with Flink's semantics, TemporalFlink, and Kafka
//     Streams' join against a versioned table with a grace period,
//     TemporalKafka) are per-key machines driven by OnElement and OnTimer,
//     with the timers they want back in Effects. The stream-stream ones take
//     a residual Condition (a pair predicate plus one-sided ones, with
//     Spark's early state exclusion) and a LateRule (ts < watermark,
//     ts <= watermark, or never: Flink's, Spark's and Kafka Streams' rules)
//     in their specs. Those that implement Explainer say what they wait
//     for (Pending: the admin CLI's `key why`).
//   - Table materializes a changelog strictly, for a job's table sink,
//     tests and the oracle: it refuses to retract what was never emitted.
//
// The package must not do I/O, start goroutines, read a clock or use
// randomness: results come back as values (appended outputs), never as side
// effects, so that a replay of the same inputs gives the same outputs with the
// same ids. Nothing here is safe for concurrent use; the key core
// (keycore.Core) that owns a key's machine is its only caller. Persisting
// snapshots, acking inputs and emitting outputs belong to keycore/, actors/
// and the sinks.
//
// Usage sketch:
//
//	spec := &joins.CDCSpec{Type: joins.LeftOuter,
//		Left:  joins.SideSpec{Name: "users", PK: "id", JoinOn: "id"},
//		Right: joins.SideSpec{Name: "domains", PK: "id", JoinOn: "user_id"}}
//	if err := spec.Validate(); err != nil { ... }
//	evs, err := spec.Route(record.Right, change) // err: a *RouteError, count it
//	for _, e := range evs {
//		out = stateOf(e.Key).OnEvent(e, out[:0]) // one CDC per key
//		// persist stateOf(e.Key).Snapshot(), then emit out
//	}
package joins
