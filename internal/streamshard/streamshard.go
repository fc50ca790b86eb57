// Package streamshard is the sharding rule of Redis shard streams, shared
// by the producer side (sinks/redisstream, users' producers) and the
// reader (sources/redisstream) so that neither imports the other: which
// stream a row's changes go to, and the entry field that holds a record
// (ValueField). It holds no state and does no I/O.
package streamshard

import (
	"hash/fnv"
	"strconv"
)

// ValueField is the stream entry field that holds a record, in every Redis
// Stream Joinery reads or writes: the sources/redisstream source reads it;
// the sinks/redisstream sink, the dead-letter stream (sinks/deadletter) and
// HTTP ingest (ingest/) write it. It is the one name of the field.
const ValueField = "value"

// MaxShards is the most shard streams a source or sink may name.
const MaxShards = 4096

// Stream is the stream key of shard i of stream: "stream.i".
func Stream(stream string, i int) string { return stream + "." + strconv.Itoa(i) }

// Of is the shard of a row among shards: FNV-1a 32 of key, mod shards.
// key is a compact JSON array: for a source partitioned by the primary key
// the row's key columns in key order (`[42]`, `["eu",7]`, as
// record.Output.PK is), so a row's changes stay in one shard, in order (as
// Debezium partitions Kafka topics by the row's key); for one partitioned
// by the join key the join column's value (KeyGroup), so a row that
// changes join key is written as a delete to its old key's shard and a
// create to its new one's.
func Of(key []byte, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write(key)
	return int(h.Sum32() % uint32(shards))
}

// RepartitionStream is the base name of the repartition streams of a
// source that is sharded by the row's primary key and repartitioned by the
// join key (sources[].repartition: stream): the reader of raw shard i of
// stream, read by group, writes each record to the shard stream
// Stream(RepartitionStream(stream, group), KeyGroup(join key, shards)),
// which the key group's owner reads as a source partitioned by the join
// key. Per consumer group, as each job reads the raw streams through its
// own group: "cdc:repart:joinery" (shards "cdc:repart:joinery.0", …).
func RepartitionStream(stream, group string) string { return stream + ":repart:" + group }
