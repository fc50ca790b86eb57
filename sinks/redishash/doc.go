// Package redishash is the Redis hash sink: a queryable materialized view of
// a join's result. The hash Config.Key maps each primary key of the result to
// its current row, so HGET <Key> '[1,7]' answers "what is the joined row for
// this key now" and HGETALL lists the whole result.
//
// It owns the view's layout and its update protocol:
//
//   - +I and +U outputs: HSET <Key> <PK> <row JSON> (the row's JSON object,
//     keys sorted, numbers as written by the source);
//   - -D outputs: HDEL <Key> <PK>;
//   - -U outputs are skipped (the +U that follows overwrites the row).
//
// Next to each row it stores the id of the output that wrote it, in the hash
// Config.IDsKey (default <Key>:ids), PK → output id; a -D removes both. And
// it keeps, in Config.SeqsKey (default <Key>:seq), the Seq of the last output
// applied to each PK (record.Output.Seq, zero-padded to 20 digits), also
// after a delete: an output whose Seq is not above it is skipped, so the
// view does not depend on the order in which outputs arrive.
//
// # Replays
//
// A batch is applied in one round trip by a Lua script, so readers never see
// half a batch. Every command overwrites: applying an
// output whose id is the one stored for its PK writes the same row and id
// again, so a replay of the same output (a Write retried after a timeout,
// outputs re-emitted after a restart) changes nothing; a replayed sequence of
// outputs, applied in order, ends in the same view. HGET <IDsKey> <PK> tells
// which output a row comes from, so a reader can check whether an output id
// has been applied. Outputs with a Seq are ordered by it: a
// replayed older output is skipped. Outputs without one (Seq 0) are applied
// as they come, so while an older sequence of those is replayed the view can
// briefly show an older row for a PK.
//
// The three hashes are on one server; with Redis Cluster, give Key a hash
// tag ({view}): the default IDsKey and SeqsKey share it. go-redis types stay
// inside this package.
//
// Usage:
//
//	s, err := redishash.New(ctx, redishash.Config{Options: redisopts.Options{Addr: "localhost:6379"},
//		Key: "users_domains"})
//	defer s.Close()
//	err = s.Write(ctx, outputs)
package redishash
