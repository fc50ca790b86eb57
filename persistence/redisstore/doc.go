// Package redisstore is the persistence.Store on Redis, through
// go-redis/v9. It is the only package of the persistence tree that imports
// go-redis, and no go-redis type appears in its API: callers see Config,
// Store and the persistence errors.
//
// # Key layout
//
// The keys of a job are spread over 256 slot groups. Every key of a group
// lies in one Redis Cluster slot, so a script over its keys is legal
// there; the groups of a job lie in 256 different slots, spread evenly
// over the slot range. This is layout version 3: one Redis key per join
// key, named as shortly as a hash tag allows.
//
//	{<id><letters>}<key>           hash: the join key (below, "Key hash")
//	o{<id><letters>}<key>          hash: the join key's outbox entries (below)
//	<prefix>:{<tag>}:timers        sorted set: member <key>, score its next event-time timer (ms)
//	<prefix>:{<tag>}:offsets       hash: partition id -> committed offset (decimal), for the group's partitions
//	<prefix>:{<tag0>}:wm           hash: the job's watermark board (group 0 only)
//	<prefix>:{<tag0>}:incarnation  string: "<id>:<floor>", the job's incarnation (group 0 only)
//	<prefix>:{<tag0>}:seq          string: the job's commit sequence (decimal, by INCR; group 0 only)
//	<prefix>:{<tag>}:gen           string: the group's write generation (decimal, by INCR; on one
//	                               server only group 0's, the job's)
//	<prefix>:{<tag>}:floor         hash: partition id -> a recent committed offset, the group's
//	                               replay floor (cluster only)
//	joinery:jobs                   hash: the job registry, "<prefix>\x00<job>" -> the job's id, "#<id>" -> "<prefix>\x00<job>"
//
// A join key belongs to group FNV-1a-64(key bytes) mod 256, and so does a
// partition id's committed offset. A group's keys are named by its group
// tag: <tag> is "<job>:<g>:<n>": the escaped job name, the group number g
// (0..255) in decimal, and the least n >= 0 (decimal) for which
// CRC16(tag) mod 16384 — the key's slot — lies in [64g, 64g+64). The
// search takes some 256 tries per group; its result is cached per job. So
// group g of every job sits in the g-th 64-slot window, and a master that
// serves a share of the slot range, as `redis-cli --cluster create` and
// `rebalance` assign them, serves about that share of every job's groups,
// and so of its keys: with 1000 keys on three masters each holds 33% ±
// 1.5% (TestStoreClusterSpread).
//
// A join key's own hashes, one per key and so most of a store's memory,
// are named by a short tag instead: "{<id><letters>}" with the job's id,
// two letters (a-z, A-Z), and the first string of one to four more letters
// (shortest first) whose CRC16 slot is the slot of the group's tag
// (shortTags; some 100,000 CRC16s per job, cached). So a key's hash is in
// its group's slot, as the group's keys are, and its name is the key plus
// seven or eight bytes: for a five-digit key 12 bytes, which Redis keeps
// in a 16-byte allocation where "<prefix>:{<tag>}:k:<key>" took 48.
//
// The job registry (one hash for every prefix of the server, so ids are
// unique there and two prefixes' hashes never meet) holds each job's id,
// "<prefix>\x00<job>" -> id, and the claim "#<id>" -> "<prefix>\x00<job>".
// A job's first use registers it, by a script: from its home id (FNV-1a
// of "<prefix>\x00<job>" mod 2704, the pairs of letters) the first id
// whose claim HSETNX makes. So a job's id does not depend on the order
// jobs came in: a registry gone back in time (a restore, a failover to a
// lagging replica) hands a job the id its keys already have, unless
// another job whose home id is the same registered in between. The store
// reads the entry once per job. Keys of a job match "{<id>*".
//
// <prefix> is Config.KeyPrefix ("joinery" by default; it may not contain
// braces); it names the group keys and the job's registry entry. <key> is
// the join key's bytes as they are; it comes last, so any bytes are fine.
// <job> is escaped inside the braces so that a job name cannot end the
// hash tag early: "%" becomes "%25", "{" "%7B", "}" "%7D". The tag cannot
// be misread either: g and n are decimals without ":", so the job name is
// everything before the second-to-last ":".
//
// The layout is the same on one server (the tags are then just part of the
// names), so a store can move from one server to a cluster by copying its
// keys (redis-cli --cluster import), the registry with them. A store
// written by the earlier one-tag-per-job layout ({<job>}) is not read.
//
// # Key hash
//
// A join key's hash holds everything of the key, under these fields:
//
//	_e      the key's owner epoch (decimal, by HINCRBY); missing = 0
//	_b      the key's snapshot value (below): offsets and base state; missing = no snapshot
//	<field> a part of the state besides its base (persistence.Snapshot.Parts): the part's value
//
// A part's field is its name (fieldOf), but for three kinds of names. A
// right row of the key core, "r:<primary key>", whose primary key is the
// decimal of an int64 as strconv writes it, is stored under that integer
// alone: Redis keeps such a field in a listpack as an integer of 1 to 8
// bytes, where "r:112308" took 8 bytes and a header. A name that is itself
// such an integer gets "_=" in front, so it is not read as a row's. And
// "_e" and "_b" are reserved: a name starting with "_" is stored with one
// more "_" in front ("_x" as "__x"), so no part's field is a reserved one;
// Load undoes each. A field starting with a single "_" other than these
// (and "_=" before an integer) is from a layout this version does not
// know, and Load refuses the key. The other parts keycore writes ("l",
// "l:<pk>", "s:<id>") are stored under their own names.
//
// The store adds nothing to a field that would take the hash out of
// Redis's compact listpack encoding (hash-max-listpack-entries 128,
// hash-max-listpack-value 64 by default): field names of one or two
// bytes, the epoch a decimal (which a listpack holds as an integer), the
// snapshot value's framing a few bytes. A hash stays a listpack while it
// has at most 128 fields and every value (the base's and each part's) is
// at most 64 bytes; one larger value makes it a hashtable, several times
// larger. So the key core's outbox entries ("o:<16 hex digits>": outputs
// kept until the sources commit past their input, a few hundred bytes of
// JSON each, and gone again soon) live in a hash of their own, the key's
// outbox hash, which disappears with its last entry.
//
// An epoch field is never removed: a deleted key's hash keeps its epoch
// (the save script deletes the hash and writes the epoch back), and a key
// acquired but never saved is a hash with the epoch alone. A reset to 0
// would let a stale owner's epoch be issued again. With appendonly yes and
// appendfsync always they survive a crash of Redis, as the snapshots do.
//
// There is no index of a job's keys: Keys walks the keyspace with SCAN
// MATCH "{<id>*" (on every master of a cluster) and keeps the
// job's key hashes that have a base field, so it costs a pass over the
// whole database and is for inspection; nothing on the write or recovery
// path enumerates keys (event-time keys are found by the timers sets).
//
// # Earlier layouts
//
// Layout version 2 kept a join key's hash and outbox hash under the group
// tag, every part under its name:
//
//	<prefix>:{<tag>}:k:<key>       hash: the join key, fields as above but "r:<pk>" as it is
//	<prefix>:{<tag>}:o:<key>       hash: its outbox entries
//
// and layout version 1 kept it in three keys and a group index:
//
//	<prefix>:{<tag>}:state:<key>   string: the key's snapshot value
//	<prefix>:{<tag>}:parts:<key>   hash: part name -> value
//	<prefix>:{<tag>}:epoch:<key>   string: the key's owner epoch (decimal, by INCR)
//	<prefix>:{<tag>}:keys          set: the group's keys that have a snapshot
//
// with the same group tags, snapshot value, timers, offsets, lineage and
// generation keys as version 3. Such a store is read as it is: a key
// stored in an earlier layout is moved on first access. When the registry
// first sees a job whose incarnation key exists — which only an earlier
// layout can have written: every method of this version that can create
// it (Lineage, CommitOffsetsSeen, Acquire, AcquireLoadMany) registers the
// job first — it marks the job's entry ("<id>:m"). For a marked job the
// scripts of Acquire, AcquireLoadMany, Load, LoadMany and Save name each
// key's layout-2 hash besides its hashes, and when its hash does not exist
// they first move it, in the same script and so atomically (migrate3): a
// key in layout 1 into its layout-2 hash (the epoch as it is, the value as
// the base field, every part under its field name; the three keys deleted
// and the key removed from the keys set, a set with no members left gone
// with its last one), then the layout-2 hash's fields renamed as above and
// the hash and its outbox hash renamed (RENAME: both names are in one
// slot) to the key's names. An Acquire then issues the next epoch, the
// moved epoch + 1, or the floor + 1 when that is higher. The layout-1
// names are made from the layout-2 hash's name inside the script (not
// named in KEYS: in a slot being migrated such a write may be refused, and
// is retried as any failed Save). Epoch reads a key not yet moved (and
// moves nothing); Keys lists the job's layout-2 hashes and layout-1 state
// keys too; timers need nothing (their members are the join keys in every
// layout). So a store switches layout key by key as the job touches them,
// with no pause and no separate step, and a key never touched again stays
// where it was and is read as before. An unmarked job's scripts look for
// no earlier layout and cost nothing for it. Every node of a job must run
// layout 3 once one does: an earlier node would not see a moved key (and
// would issue epochs again from the floor); cluster.Protocol says so to
// the fleet. That holds for `joinctl inspect --offline` too, which loads
// the key and so moves it.
//
// # Snapshot value (version 1)
//
// The base field's value holds the applied offsets and the base state
// together, so one HSET replaces both atomically:
//
//	0x01 | uvarint n | n × (uvarint len, partition id, varint offset) | state bytes to the end
//
// Partition ids are sorted, so equal snapshots encode to equal bytes. An
// unknown version byte makes Load fail rather than guess.
//
// # Parts and deltas
//
// A state written in parts keeps its base (and the offsets) in the base
// field and each part in a field of its own, in the same hash. A whole
// snapshot replaces the hash (the base field, then, when the hash holds
// more than epoch and base, a DEL and an HSET of epoch and base; then HSET
// of its parts); a delta sets the base and HSETs or HDELs only the parts
// it names, so a change of one row of a key writes that row, not the key.
// Load reads the hash and the write generation in one script (so base and
// parts come from one write) and packs them (stateparts.Pack). The hash
// needs no compaction: each field holds its part's latest value, so a
// key's size is its live parts, whatever its history; a deleted key's
// parts go with its base.
//
// # Writes
//
// Save splits a batch by slot group, keeping batch order within a group,
// and sends one call of a Lua script per group (EVALSHA; EVAL for the
// calls a server answers NOSCRIPT), all in one pipeline: one round trip on
// one server; on a cluster go-redis sends each master its part, in
// parallel, and follows MOVED and ASK per command. A group's script gets
// per snapshot its key hash, its outbox hash and the group's timers set
// (and for a job marked as holding an earlier layout its layout-2 hash) as
// KEYS, and the
// writer's epoch, the encoded value ("" deletes), the next timer (decimal,
// "" for none), the number of parts set, whole ("W") or the number of
// parts a delta deletes, the fields set (name, value pairs) and the fields
// deleted as ARGV, after the write generation (below); the join key, the
// timers' member, is cut from the hash's name in the script. It first
// compares each snapshot's epoch with HGET of its hash's epoch field
// (missing = "0", compared as decimal strings), then, for the snapshots
// that match and in order, runs HSET of the base (and for a whole state an
// HLEN, with DEL and HSET of epoch and base when the hash holds parts),
// ZADD (ZREM when the snapshot has no timer), HSET and HDEL of its parts,
// or, for empty state, DEL of the hash, HSET of its epoch and ZREM. A
// snapshot whose hash does not exist moves the key from its earlier
// layout first (see "Earlier layouts"). It replies with the index and holder
// epoch of each refused snapshot, which Save turns into
// *persistence.FencedError values, in batch order.
//
// # Write generations
//
// Every call of the save script also checks and bumps a write generation:
// on a cluster the group's gen key (in the group's slot, so the script
// stays one slot), on one server the job's (group 0's gen key; the call
// then covers every group, and one key per job of the batch). Its keys
// come first in KEYS, with ARGV[1] their number and then, per key, the
// least value it must show: the highest this Store saw acknowledged by a
// save (the INCR results the script returns) or read by a Load (whose
// script reads the gen key with the key hashes). A key below it means the server
// went back in time under this Store (restored from an older dump, failed
// over to a lagging replica, restarted empty): the script writes nothing
// and answers the keys found behind, which Save returns as
// *persistence.StaleStoreError values; a Load so refused returns one too.
// A generation only grows, and each Store compares with what it saw
// itself, so many nodes writing a group pass; after a restore each is
// refused at its first write to a group that lost writes it had made
// (TestStoreRedisGenerations, TestStoreClusterGenerations; the conformance
// suite's RollbackFirstWriteRefused). It costs one GET and one INCR in the
// script per call, no round trip.
//
// Everything a snapshot's write touches — its hash and its group's timer
// index — is in its group's slot, so the compare-and-set and the index
// update are one atomic script: no Acquire falls between a check and its
// write, and the timers set never disagrees with the key hashes, also not
// after a crash of the client or a server between two commands (there is
// no such "between": no write of a snapshot is in another slot than the
// others). A fenced snapshot touches neither. Hence the timer index needs
// no repair, and a stale entry in it cannot arise. What is not atomic is a batch across
// groups: each group's part applies wholly or not at all, but on an error
// (a master down, a timeout) some parts may be in and others not. Each
// snapshot is an absolute write of its key, so the caller's retry of the
// whole batch (actors.Writer retries until it succeeds) ends in the same
// state; a reader meanwhile sees some keys new and some old, each key
// consistent with its own offsets and timer.
//
// During a slot migration (resharding) a group's keys are briefly split
// between two masters; a script over them is then answered TRYAGAIN (or
// ASK, once all have moved). go-redis follows ASK and MOVED per command,
// and retries TRYAGAIN for a single command and for the first command of a
// pipeline; the store's scripts (save, load, commit, floors) send every
// call answered TRYAGAIN again, alone, with backoff, for about 3 s
// (retry.go: retryable is the one place that says which answers are
// retried), before Save or a load fails with the error and is retried by
// its caller (TestStoreClusterSlotMigration moves a slot under writers,
// TestStoreClusterRetryTryAgain holds one half moved).
//
// # Timer index
//
// Each group's timers set holds its keys with a pending event-time timer,
// scored by Snapshot.NextTimer. Scores are doubles, exact for integers up
// to 2^53 in magnitude, hence the contract's range [persistence.MinTimer,
// persistence.MaxTimer] (±2^53 ms, about ±285,000 years): Save refuses a
// batch with a timer beyond it (persistence.ErrTimerRange) before sending
// anything, so every stored score is an exact integer. DueTimers merges
// the groups: one pipeline of ZRANGE <timers> -inf <upTo> BYSCORE LIMIT 0
// <n> WITHSCORES over all 256 groups, with n = max(16, 2*limit/256+1)
// (capped at limit), sorted by time then key; a group that returned all n
// and whose last entry comes before the merge's limit-th is asked again
// with 4n. So a few due timers cost one round trip, a large backlog a few,
// and no group returns much more than the answer needs. Equal scores come
// back ordered by member bytes. The answer is per group a consistent
// read; two groups are read at slightly different moments, so a Save
// running meanwhile may show in some groups and not in others (each key's
// entry is right for that key's state at the moment its group was read).
//
// # Batched loads
//
// LoadMany (persistence.BatchLoader) reads many keys of a job with one
// call of the load script per slot group (on one server one call for the
// job), pipelined: one round trip however many keys, where Load costs one
// each. Each call checks its group's write generation as Load does.
// AcquireLoadMany (persistence.Activator) is the same with an Acquire of
// each key first, in the same script: the hash's epoch field raised to the
// incarnation's floor and HINCRBY'd, then the hash read (on one server the
// script reads the incarnation key too; on a cluster one lineage read
// comes first), so a new activation costs no round trip of its own.
//
// Acquire is one script: it raises the hash's epoch field to the
// incarnation's floor when below it, then HINCRBY (on one server the
// script also reads the incarnation key; on a cluster, where it is in
// another slot, a lineage read comes first). Epoch is one HGET. Lua would
// round integers beyond 2^53, and floors are about 2^61, so every
// comparison is of decimal strings and the script returns the new epoch
// as the field's string.
//
// go-redis retries a command after a network error. For Save that is safe:
// its writes set absolute values, and a retry finds the same epochs unless
// an Acquire came between, which then correctly fences it. A retried
// Acquire may skip an epoch, which the contract allows.
//
// # Lineage
//
// The incarnation and seq keys carry the job's persistence.Lineage
// (docs/operations/recovery.md, "Rollback detection"). CommitOffsetsSeen on one
// server is one script over them and every offsets hash: it checks the
// lineage the caller saw, bumps seq and sets the offsets, atomically. On
// a cluster the check and bump are a script on group 0 and the offsets
// follow per group (below); a failure between leaves seq bumped and
// offsets old, which only replays more. A missing incarnation key is
// created (by whichever script reads it first) from a client-made
// candidate: a random id and a floor from the clock. Refound replaces it
// by compare-and-set. With Config.MinReplicas every script pipeline of
// Save and CommitOffsets ends with WAIT on the same connection, so it
// waits for exactly those writes.
//
// CommitOffsets splits the offsets by group of the partition id and runs
// one call of a Lua script per group, in one pipeline, that sets each hash
// field to the maximum of its old and new value, comparing the decimal
// strings exactly (Lua numbers are doubles and would round offsets above
// 2^53). Each group's part is atomic; after an error some partitions may
// be committed and others not, which only means that more is replayed.
// CommittedOffsets is one pipeline of HGETALL over the 256 groups.
//
// # Replay floors
//
// On a cluster a partition's committed offset is in one group, on one
// master, and its keys' state in all 256: a master failed over to a
// lagging replica loses its groups' last writes while another master keeps
// the committed offset they were acknowledged for. So CommitOffsets also
// copies every offset the Store committed into each group's floor hash
// (the commit script per group, one pipeline), at a Store's first commit
// and then at most once per floorEvery (1 s), after the commit and in the
// background (no commit waits for it): in each
// master's replication stream the copy follows the key writes it covers,
// so a replica that has a copy has those writes. RecoveryOffsets
// (persistence.RecoveryStore) is, per partition, the least of the
// committed offset and the floors of every group that has one; the node's
// sources start there, so a restart re-reads about a second beyond the
// last commit, and after such a failover it re-reads what the failed-over
// groups lost (TestStoreClusterRecoveryOffsets). A failed copy is ignored
// (the older floors stay; the next one starts a second later). On one server
// the offsets and the state go back together, and RecoveryOffsets is
// CommittedOffsets.
//
// # Scope
//
// New connects to one Redis server (Config.Addr), or to a Redis Cluster
// (Config.Cluster, some of its nodes; go-redis's ClusterClient learns the
// slot map, follows redirections and refreshes the map after MOVED and
// whenever it is over a second old, so the slots of a master that died
// are found on the replica that took them within about a second) and
// pings every master. Replicas are not read from: every read is the
// master's. A batch spanning several jobs is fine: it is split by group,
// and groups are per job.
//
// Usage:
//
//	s, err := redisstore.New(ctx, redisstore.Config{Options: redisopts.Options{Addr: "redis:6379"}})
//	// or, on a Redis Cluster:
//	s, err := redisstore.New(ctx, redisstore.Config{Cluster: []string{"redis-0:6379", "redis-1:6379"}})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
package redisstore
