// Package node wires one Joinery node from a job spec: the actor system and
// its cluster membership (protoactor-go over the memberlist provider), the
// state store and its write-behind Writer, the job's key actor kind, its
// sources and sinks, and the ingest loop between them.
//
// The ingest loop of a source reads a batch, decodes and routes each record
// to its join key, sends one Apply per key to the key's virtual actor (which
// may live on another node) without waiting, and queues the batch. A collector
// takes batches in order, waits for every key's answer (an answer means the
// key's state is durable), writes the outputs to the sinks, and only then
// commits the batch's offsets to the source and the store. A bounded queue of
// batches in flight is the backpressure. Records that cannot be decoded or
// routed are logged with the reason, counted, and written to the dead-letter
// file when the job names one; their offsets are committed like any other.
//
// A repartitioned source (sources[].repartition: stream, repartition.go) is
// read by two such loops: the raw shards' loop writes each routed record to
// the repartition streams of its keys' key groups instead of sending it,
// and commits once they are written; the repartition streams' loop sends
// to keys placed on this node (keyPlacement: the key groups follow its
// shards' leases). Kafka topics keyed by the join key (partitioned_by:
// join_key on a kafka source) are key groups too: their partition count,
// asked of the brokers at start (keyGroups, through the connector's
// KeyGroups), is the group count, and their consumer groups assign
// partition p to the owner of group p.
//
// Order: one source goroutine sends to one key in order, and protoactor
// delivers one sender's messages to one actor in order, so the events of one
// key from one partition are applied in order. An Apply carries the offsets
// of the previous still-unanswered Apply to the same key; a key actor refuses
// a request that would skip over a lost one (a gap), and the node stops
// rather than be wrong (restart resumes from the committed offsets).
package node
