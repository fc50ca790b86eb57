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
//	<prefix>:{<job>}:epoch:<key>   string: the key's owner epoch (decimal, by INCR); missing = 0
//	<prefix>:{<job>}:timers        sorted set: member <key>, score its next event-time timer (ms)
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
// Save sends a whole batch as one call of a Lua script (EVALSHA; EVAL the
// first time a server lacks the script), so one round trip. The script gets
// the epoch, state, keys-set and timers key of every snapshot as KEYS and
// the writer's epoch, the join key, the encoded value ("" deletes) and the
// next timer (decimal, "" for none) as ARGV. It first compares each
// snapshot's epoch with GET of its epoch key (missing = "0", compared as
// decimal strings), then, for the snapshots that match and in batch order,
// runs SET, SADD and ZADD (ZREM when the snapshot has no timer), or DEL,
// SREM and ZREM for empty state. It replies with the 1-based batch index
// and holder epoch of each refused snapshot, which Save turns into
// *persistence.FencedError values. A script runs atomically, so no Acquire
// falls between a check and its write, and neither the keys set nor the
// timers set ever disagrees with the state keys; a fenced snapshot touches
// none of them.
//
// # Timer index
//
// The timers set holds each key with a pending event-time timer, scored by
// Snapshot.NextTimer. Scores are doubles, exact for integers up to 2^53 in
// magnitude, hence the contract's range [persistence.MinTimer,
// persistence.MaxTimer] (±2^53 ms, about ±285,000 years): Save refuses a
// batch with a timer beyond it (persistence.ErrTimerRange) before sending
// anything, so every stored score is an exact integer. DueTimers is one
// ZRANGE <timers> -inf <upTo> BYSCORE LIMIT 0 <limit> WITHSCORES; equal
// scores come back ordered by member bytes. The set is as large as the
// number of keys with a pending timer; it lives in the job's slot, like
// every other key of the job.
//
// Acquire is one INCR of the epoch key, and Epoch one GET. Epoch keys are
// never deleted, also not with their snapshot: a reset to 0 would let a
// stale owner's epoch be issued again. With appendonly yes and appendfsync
// always they survive a crash of Redis, as the snapshots do.
//
// go-redis retries a command after a network error. For Save that is safe:
// its writes set absolute values, and a retry finds the same epochs unless
// an Acquire came between, which then correctly fences it. A retried
// Acquire may skip an epoch, which the contract allows.
//
// CommitOffsets runs a Lua script that sets each hash field to the maximum
// of its old and new value, comparing the decimal strings exactly (Lua
// numbers are doubles and would round offsets above 2^53).
//
// # Scope
//
// New connects to one Redis server (or a proxy in front of a cluster). The
// layout is ready for Redis Cluster: all keys one script call touches share
// the job's hash tag. A Save batch spanning several jobs is still one script
// call, which a cluster would refuse as CROSSSLOT; callers batch per job.
//
// Usage:
//
//	s, err := redisstore.New(ctx, redisstore.Config{Addr: "redis:6379"})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
package redisstore
