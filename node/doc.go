// Package node wires one Joinery node from a job spec: the actor system and
// its cluster membership (protoactor-go over the memberlist provider), the
// state store and its write-behind Writer, the job's key actor kind, its
// sources and sinks, and the read path between them.
//
// Words: a "reader" is the read state of one source, and "the read path"
// is what it does, in stages, one file each. "Ingest" is kept for the HTTP
// intake (node/httpingest.go starts ingest/, the connector that turns HTTP
// posts into a source's records; sources/httpingest is its source side).
//
//	readers.go    Run: one reader per source (two for a repartitioned one), each a
//	              read loop and a collector joined by a bounded queue of batches
//	read.go       the read loop: read a batch, retry a source that is down, queue
//	route.go      decode and route each record to its join key (dispatch), build
//	              the batch's requests and send them
//	sendstate/    the sender half of the per-key protocol, pure: the requests in
//	              order, their sequence, in-flight keys and Prev, committed offsets, resends
//	transport.go  send the requests (local, or one batch per owner node) and await
//	              each key's answer, resending until it comes (remotebatch.go: the
//	              per-owner batch and its answer)
//	collect.go    complete batches in order: answers, outputs to the sinks, dead
//	              letters, then commit the offsets; late data
//	retry.go      the retry loop and backoff of commits, sink writes and key requests
//
// The read loop of a source reads a batch, decodes and routes each record to
// its join key, and builds one request per key in the batch (its events in
// order, sendstate.Request). It sends them without waiting: a request to a
// key whose actor lives in this process goes to it directly, as it is (a
// LocalApply, its rows decoded: no protobuf message, nothing encoded); the
// requests to keys on other nodes are encoded (actors.EncodeRequest, an
// Apply each) and grouped by owner node, one ApplyBatch per owner to its
// batch actor (actors.BatchActorName), which answers for each key at once. The loop then queues the batch. A collector takes
// batches in order, waits for every key's answer (an answer means the key's
// state is durable), writes the outputs to the sinks, and only then commits
// the batch's offsets to the source and the store. A bounded queue of
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
// Order: one reader sends to one key in batch order, one batch's requests
// before the next batch's, and protoactor delivers one sender's messages to
// one actor in order (the batch actor hands an owner's batch on to its keys'
// actors in order), so the events of one key from one partition are
// applied in order. An Apply carries the offsets of the unanswered Applies
// to the same key, of every reader of the node (sendstate.Keys); a key
// actor refuses a request that would skip over a lost one (a gap), the
// collector resends in order, and the node stops after retrying for two
// minutes rather than be wrong (restart resumes from the committed offsets).
package node
