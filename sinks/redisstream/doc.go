// Package redisstream is the Redis Streams sink: it appends each join output
// to a stream as an entry with the fields "id" (the output id) and "value"
// (the line encoded by a changelog.Format).
//
// It owns batching (one pipelined round trip per Write) and optional
// approximate trimming (MAXLEN ~). It does not dedupe: outputs replayed after
// a restart are appended again with the same ids, so readers dedupe by "id".
// With Config.Shards it writes shard streams Stream.0 … Stream.<Shards-1>
// instead, each output in the shard of its primary key (ShardOf: FNV-1a 32
// of record.Output.PK, mod Shards), so a row's changes stay in one shard,
// in order, for a sharded Redis Streams source (sources/redisstream) to
// read. go-redis types stay inside this package.
//
// Usage:
//
//	s, err := redisstream.New(ctx, redisstream.Config{Options: redisopts.Options{Addr: "localhost:6379"},
//		Stream: "joined", Format: changelog.Changelog})
//	defer s.Close()
//	err = s.Write(ctx, outputs)
package redisstream
