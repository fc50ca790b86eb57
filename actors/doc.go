// Package actors owns the key actor: one protoactor-go virtual actor (a
// cluster kind) per join key, which drives a joins state machine, and the
// Writer that batches the actors' snapshots into pipelined Store writes.
//
// The key actor applies the events of an Apply request in order, skips events
// it already applied (its state holds the highest applied offset per source
// partition), hands the new snapshot to the Writer and answers the request
// only once the snapshot is durable: a sender that sees an answer may commit
// the offsets it covers. It does not decide join semantics (package joins
// does) and it does not read sources or write sinks (package node does).
//
// Each node also runs a key batch actor (BatchActorName): a sender's
// requests to this node's keys come in one ApplyBatch per batch, which it
// hands to the key actors as LocalApply and answers once, in order. Rows
// between nodes travel in a binary encoding (AppendRow, DecodeRowBin). See
// docs/concepts/architecture.md, "Batched requests".
//
// Snapshots are incremental (keycore's Config.Parts): a key's write
// carries the rows, outbox entries and positions that changed, and the
// Writer merges one key's deltas of a batch (persistence.MergeSnapshots).
// Activations that load at once share round trips (loader.go: one
// persistence.BatchLoader.LoadMany per flight, no timer). See
// docs/concepts/per-key-protocol.md, "Incremental state writes".
//
// A live key's heap is what pods are sized by (docs/performance/2026-12-05-bench.md, "Bytes
// per live key"): the Lookup's activator spawns key actors at the root
// from their kind's bare Props (bare.go: no per-activation Props clone or
// identity extension, no entry in the activator's children) with a
// lock-free mailbox, and a key drops its durable outbox JSON from memory
// (keycore's Core.Offload).
//
// Wiring sketch:
//
//	w := actors.NewWriter(store, actors.WriterOptions{Logger: log})
//	kind := actors.NewKind(&actors.Deps{Job: "users-domains", CDC: spec, Store: store, Writer: w, Logger: log})
//	// pass kind to cluster.Configure(..., cluster.WithKinds(kind)), then
//	// c.RequestFuture(string(key), actors.KindName(job), &keypb.Apply{...})
package actors
