// Package actors is the protoactor-go shell around the key core: one
// virtual actor (a cluster kind) per join key, which drives the key's
// keycore.Core, the Writer that batches the actors' snapshots into
// pipelined Store writes, and where the key actors live (Lookup, Placement,
// Client).
//
// A key actor owns its key's mailbox: it loads the key's state on
// activation, hands each request and the time to the Core (which applies
// the events in order, skips those already applied, refuses gaps and keeps
// the outbox: the per-key protocol and the join are keycore's and joins'),
// submits the write the Core returns to the Writer and answers only once
// that write is durable: a sender that sees an answer may commit the
// offsets it covers. It passivates when idle (Deps.PassivateAfter) or when
// the node's memory Budget says so. It does not read sources or write
// sinks (package node does).
//
// Placement decides which member hosts a key actor: RendezvousPlacement
// (protoactor's own, per key) or the key groups node/ builds for sources
// sharded by the join key. Lookup is the cluster's identity lookup that
// activates actors where a Placement says, and Client sends to key actors
// through the same Placement, so both agree on one topology.
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
// A live key's heap is what pods are sized by: the Lookup's activator spawns key actors at the root
// from their kind's bare Props (bare.go: no per-activation Props clone or
// identity extension, no entry in the activator's children) with a
// lock-free mailbox, and a key drops its durable outbox JSON from memory
// (keycore's Core.Offload).
//
// Wiring sketch:
//
//	w := actors.NewWriter(store, actors.WriterOptions{Logger: log})
//	kind := actors.NewKind(&actors.Deps{Job: "users-domains", CDC: spec, Store: store, Writer: w, Logger: log})
//	// cluster.Configure(name, provider, actors.NewLookup(place), remote,
//	//	cluster.WithKinds(kind)); start the member, then
//	cl := actors.NewClient(c, actors.KindName("users-domains"), actors.ClientOptions{Placement: place})
//	apply, _ := actors.EncodeRequest(key, req, false)
//	res, err := cl.Request(string(key), apply, 5*time.Second)
package actors
