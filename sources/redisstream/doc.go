// Package redisstream is the Redis Streams source: it reads one stream as a
// member of a consumer group and acknowledges entries (XACK) once they are
// committed.
//
// It owns the consumer-group protocol and the mapping of stream IDs to
// offsets. Each entry carries its payload in the field "value" (other fields
// are ignored; an entry without "value", or one deleted from the stream while
// pending, is delivered with a nil Value, which the Debezium decoder treats
// as a tombstone, so it is counted, skipped and acknowledged).
//
// A stream is one partition (0). An entry ID ms-seq becomes the offset
// ms<<20 | seq, which keeps stream order; IDs with seq >= 2^20 or ms >= 2^43
// are rejected (see Offset).
//
// Delivery is at least once: entries read but not acknowledged before a crash
// are re-delivered to the same consumer name when it starts again. Entries
// pending longer than Config.ClaimMinIdle (default 30s) on other consumers,
// presumably dead, are claimed (XAUTOCLAIM) and delivered: all of them when a
// source starts, merged in ID order with its own pending entries and before
// new ones; then, every ClaimMinIdle/2, those after the last entry the
// source delivered, so offsets keep growing. An idle entry older than that
// stays pending until a consumer starts. After a rewind to the store's
// offset (Config.Applied) the entries pending past it come again as new
// entries, in order, and no claim runs until the reads are back where the
// group was.
//
// One source of a group reads the stream at a time: it holds the stream's
// lease (Config.Lease, default 10 s, renewed every third of it), and the
// others wait as hot standbys. Several consumers reading at once would give
// key actors entries out of offset order, and their skip rule (an offset not
// above the highest applied is a replay) would drop some. A source that
// takes the lease over first claims everything its predecessors left
// pending, whatever its idle time, and delivers it in ID order before new
// entries; each read of new entries checks the lease in the same script, so
// a holder paused past its lease cannot read once it wakes (Read returns
// ErrLeaseLost; open a new source). Close releases the lease, so a standby
// takes over at once after a graceful stop.
//
// Sharded streams (Config.Shards = N, NewSharded or Open): one source reads
// the shard streams Stream.0 … Stream.<N-1> (ShardStream), shard i being
// partition i, each with its own lease as above, so a shard has one reader
// at a time and keeps its order while the shards are read by the whole
// fleet. The sources register in a sorted set in Redis (ReadersKey, renewed
// every Lease/3 and lapsing after Lease; a node that does not run the
// source never registers); the registered readers that Config.Members
// reports live are the fleet, and AssignShards (rendezvous hashing with
// bounded load) gives each its shards — floor or ceil of N/readers,
// never more than FairShare. A reader takes the free lease of a shard it is
// assigned, and announces that it waits for one another holds; the holder
// then hands it over (stops reading it, waits up to DefaultDrain for what
// it delivered to be committed, releases the lease). A shard whose lease
// stays free for a whole lease period — its reader died and the others do
// not know yet — is an orphan, taken by any reader under its fair share.
// A dead reader's shards thus move once its leases and registration lapse.
//
// A producer puts every change of a row in shard ShardOf(key as a JSON
// array, N): FNV-1a 32 of those bytes, mod N. Which key is the source's
// partitioned_by: join_key (the join column's value, streamshard.KeyGroup:
// shard i is key group i, and the node that reads it hosts its keys'
// actors, so events need no network hop) or pk (the row's primary key, as
// Debezium partitions Kafka topics; each event then goes to its key's
// owner over the network unless the source repartitions). A row whose
// join column changes moves between join_key shards: its producer writes
// the delete to the old key's shard and the create to the new one's. The
// Redis Streams sink shards its outputs by their primary key.
//
// Repartitioning (Config.RepartitionTo, sources[].repartition: stream): a
// sharded source is a sources.Repartitioner. The node routes each record of
// raw shard i to its join keys' key groups and hands them to
// Sharded.Repartition, which appends them to the repartition shard streams
// RepartitionTo.<g> (streamshard.RepartitionStream) and moves shard i's
// written mark (RepartitionedKey) in one script, skipping records at or
// below it: each raw record is written once, in its shard's order, however
// often it is re-delivered; it returns how many entries the fullest
// stream it wrote to holds (Backlog: of all of them), for the node to bound
// them. It does not route, decode or decide groups: the node does. A
// source with Config.TrimAcked (the repartition streams' reader) trims its
// stream at each Commit up to the last entry it acknowledged, or the
// store's replay floor when Config.KeptFloor names a lower one, which
// stays for the next reader's rewind check (docs/guides/producers.md,
// "Repartition streams and the replay floors").
//
// Each Commit also writes the state store's lineage it committed under
// (Config.Lineage) to LineageKey, beside the group (per shard stream); the
// next source of the group hands it to Config.Applied, so that a store gone
// back in time since — restarted empty even — is found and the entries it
// lost are read again (docs/operations/recovery.md, "Recovery").
//
// go-redis types stay inside this package.
//
// Usage:
//
//	src, err := redisstream.New(ctx, redisstream.Config{Options: redisopts.Options{Addr: "localhost:6379"},
//		Stream: "users", Group: "joinery", Consumer: "node-1"})
//	defer src.Close()
//	msgs, err := src.Read(ctx, 512) // empty, nil after Block without data
//	…
//	err = src.Commit(ctx, []record.Position{msgs[len(msgs)-1].Pos})
//
//	sharded, err := redisstream.Open(ctx, redisstream.Config{Options: redisopts.Options{Addr: "localhost:6379"},
//		Stream: "cdc", Shards: 16, Group: "joinery", Consumer: "node-1", Members: liveNodes})
package redisstream
