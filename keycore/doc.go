// Package keycore owns the per-key protocol of a join, as a pure value in
// the manner of etcd-io/raft's RawNode: a Core takes a Request (events
// with their source positions, the offsets of the sender's earlier
// unanswered requests, what the sender committed, a watermark to fire) and
// the time, and returns a Ready — the outputs, the late inputs, the answer,
// and the Write that must be durable before that answer is given. The
// driver persists the Write and calls Durable.
//
// What the core keeps per key: the join Machine (the changelog join, the
// multi-way changelog join on one key, or an event-time join with its
// timers.Set and watermark), the highest applied
// offset per source partition (inputs at or below it are skipped, their
// kept outputs re-sent), the last Debezium source position per row
// (replays at new offsets are dropped), the outbox of outputs not yet
// committed, the key's output sequence, and the owner epoch its driver took
// the key with. The persisted encoding of all of it (keyState, version 1)
// lives here too, and so does its incremental form (Config.Parts,
// parts.go): a small base and named parts — rows, outbox entries, Debezium
// positions — of which a Write after the first carries only those that
// changed (docs/concepts/per-key-protocol.md, "Incremental state writes").
//
// It must not do I/O, start goroutines, read the clock or know protoactor,
// Redis or the sinks: internal/lint checks the imports. Every runner of a
// key drives it: the protoactor key actor (actors/) is a shell around a
// Core; replay/ drives one Core per key with every write durable at once;
// the Go API (stream/) and the benchmarks' engine systems drive Machines
// through Machines/Index, which fire many keys' timers in (time, key) order.
//
// Sketch of a driver:
//
//	c := keycore.New(cfg, key)
//	c.SetEpoch(epoch)              // after Store.Acquire
//	_ = c.Restore(offsets, state)  // or c.Init() when the store has nothing
//	r := c.Step(req, nowMs)
//	if r.Reload { c.Reset(); /* acquire, load */; r = c.Step(req, nowMs) }
//	if r.Write != nil { persist(r.Write); c.Durable() }
//	c.Offload()                    // optional, after a write that succeeded: outbox JSON the store holds leaves memory
//	answer(r)
//
// A driver that offloads must reload on Reload (as above): an input
// re-sent before it is committed answers Reload when its outputs are in
// the store only.
//
// The protocol's transcripts are in testdata/*.txt (go test ./keycore/
// -run TestCoreInteraction -rewrite); docs/concepts/architecture.md describes it.
package keycore
