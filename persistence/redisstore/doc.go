// Package redisstore is the persistence.Store on Redis, through
// go-redis/v9. It is the only package of the persistence tree that imports
// go-redis, and no go-redis type appears in its API: callers see Config,
// Store and the persistence errors.
//
// # Key layout
//
// Every key of one job carries the hash tag {<job>}, so all of a job's keys
// live in one Redis Cluster slot and a multi-key transaction over them is
// legal there:
//
//	<prefix>:{<job>}:state:<key>   string: the key's snapshot (offsets and state, one value)
//	<prefix>:{<job>}:keys          set: the keys of the job that have a snapshot
//	<prefix>:{<job>}:offsets       hash: partition id -> committed offset (decimal)
//
// <prefix> is Config.KeyPrefix ("joinery" by default; it may not contain
// braces). <key> is the join key's bytes as they are; it comes last, so any
// bytes are fine. <job> is escaped inside the braces so that a job name
// cannot end the hash tag early or make two jobs' keys collide: "%" becomes
// "%25", "{" "%7B", "}" "%7D", and the empty job name is written "%"
// (Redis would hash an empty tag "{}" as if there were no tag).
//
// # Snapshot value (version 1)
//
// The state key's value holds the applied offsets and the state together,
// so one SET replaces both atomically:
//
//	0x01 | uvarint n | n × (uvarint len, partition id, varint offset) | state bytes to the end
//
// Partition ids are sorted, so equal snapshots encode to equal bytes. An
// unknown version byte makes Load fail rather than guess.
//
// # Writes
//
// Save sends a whole batch as one MULTI/EXEC transaction in one pipeline: a
// SET and SADD per snapshot, or a DEL and SREM for a snapshot with empty
// state. The batch is applied atomically, and the keys set never disagrees
// with the state keys. go-redis retries a pipeline after a network error;
// that is safe because every write in it sets an absolute value.
//
// CommitOffsets runs a Lua script that sets each hash field to the maximum
// of its old and new value, comparing the decimal strings exactly (Lua
// numbers are doubles and would round offsets above 2^53).
//
// # Scope
//
// New connects to one Redis server (or a proxy in front of a cluster). The
// layout is ready for Redis Cluster, but a Save batch spanning several jobs
// is one transaction and would be refused there as CROSSSLOT. Write fencing
// of key owners (an owner epoch checked in Redis) is not part of this store.
//
// Usage:
//
//	s, err := redisstore.New(ctx, redisstore.Config{Addr: "redis:6379"})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
package redisstore
