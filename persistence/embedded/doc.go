// Package embedded is the no-server persistence.Store: a single node runs with
// it and nothing else. It keeps every snapshot and committed offset in memory
// and, when Options.Path is set, also in an append-only log file so a
// restarted process finds its state again.
//
// # Durability
//
// With a Path, each Save, CommitOffsets and Acquire appends one record to the
// log and fsyncs the file before it returns, so a nil error means the write
// survives a crash of the process or the machine. A Save batch is one record:
// after a crash it is either wholly there or wholly absent. New replays the
// log; a torn last record (a crash in the middle of an append) is dropped and
// cut off the file, while damage followed by valid records is reported as an
// error rather than silently skipped.
//
// New also compacts the log when it has grown well beyond the live data: it
// writes the live state to a temporary file, fsyncs it and renames it over
// the log.
//
// # Fencing
//
// Save checks every snapshot's Epoch against the key's owner epoch and
// Acquire increments it under the same writer lock, so a check and the write
// it guards cannot interleave with an Acquire. Epochs live in memory next to
// the snapshots and, with a Path, in the log; they are kept when a snapshot
// is deleted, so a key that was ever acquired costs a few bytes for good.
//
// # Write generations
//
// The Redis store checks a per-shard write generation on every Save, so
// that a server restored from an older snapshot refuses a running node's
// first write (persistence.StaleStoreError). This store needs no such
// check and implements none: one process owns its data, in memory and in
// its log, and nothing can set it back while the Store is open. A log file
// replaced by an older copy while no process ran is a new Store over older
// data, which the node's lineage check at start and the sources' commit
// lineage find (docs/operations/recovery.md, "Rollback detection"). Save and Load
// never return persistence.ErrStoreRolledBack.
//
// # Timer index
//
// Each job keeps its keys with a pending timer (Snapshot.HasTimer) in an
// in-memory min-heap ordered by (NextTimer, key) with positions tracked, so
// a Save moves or removes a key in O(log n) and DueTimers lists the first
// limit due keys in O(limit log limit). Timers travel in the save records
// (kind 4 below), so replay rebuilds the index with the snapshots, and a
// Save's snapshots and index changes are one record: both or neither.
//
// # Log format (version 1)
//
//	header:  "JNRYLOG" 0x01
//	record:  length uint32 LE | crc32c(payload) uint32 LE | payload
//	payload: kind byte, then
//	  kind 1 (save):   uvarint n, n × (str job, str key, str state, offsets)
//	  kind 2 (commit): str job, offsets
//	  kind 3 (epoch):  uvarint n, n × (str job, str key, uvarint epoch)
//	  kind 4 (save with timers): uvarint n, n × (str job, str key, str state, offsets, timer)
//	  kind 5 (lineage): str job, str incarnation, uvarint floor, uvarint seq, offsets
//	  kind 6 (save with parts): uvarint n, n × (str job, str key, str state, offsets, timer, parts)
//	str:     uvarint length, bytes
//	offsets: uvarint n, n × (str partition, varint offset)
//	timer:   0x00 (no timer) | 0x01, varint NextTimer (ms, within ±2^53)
//	parts:   0x00 (whole) | 0x01 (delta), uvarint n, n × (str name, str value)
//
// An empty state in a save record deletes the key, as in Save. A save record
// holds only the snapshots that passed the epoch check, so replay applies it
// without checking again. An epoch record sets each key's owner epoch (>= 1;
// replay keeps the larger of the logged and the known value); Acquire
// appends one with a single entry, compaction writes them in bulk.
//
// Kind 3 came after the first logs were written. It did not change the
// header's version: logs without it read as before, and a binary that
// predates it refuses a log containing it as corrupt instead of dropping the
// epochs (which would reopen the door to stale writers).
//
// Kind 4 came later still, the same way. Kinds 1 and 4 are one record type
// on two encodings: a save whose snapshots have no timer is still written
// as kind 1 (so a store that never uses timers writes logs an older binary
// reads), one where any has a timer as kind 4. Kind 5 sets a job's
// persistence.Lineage and commits offsets with it: the first use of a job
// writes one (its incarnation), and so does every CommitOffsets (seq + 1)
// and Refound; compaction writes one per job in place of kind 2. Old logs hold only kind 1,
// whose snapshots replay without timers. A binary that predates kind 4
// refuses a log containing it rather than lose the timers.
//
// # Parts and deltas
//
// A key stored in parts (persistence.Snapshot.Parts) keeps its base and a
// map of its parts in memory; a delta changes the map in place, under the
// writer lock, and Load packs base and parts (stateparts.Pack). Only the
// delta goes to the log (kind 6 above, written only for a batch with parts
// or deltas, so logs of whole-state writers stay readable by older
// binaries); replay applies it as Save did. The log's compaction bounds
// what deltas add up to: it writes every key as one whole snapshot with
// its live parts. A key's memory is its live parts, never its history.
//
// # Limits
//
// Everything lives in memory, so the store suits a single node and data that
// fits in RAM; the Redis store (package redisstore) is for fleets. HeldBytes
// estimates the memory the snapshots take (EntryOverhead per key beyond its
// bytes): a node on this store stops reading its sources once it passes the node's
// memory budget, since passivating key actors frees nothing here. Only one
// process may open a log file at a time; the package does not lock the file.
//
// Usage:
//
//	s, err := embedded.New(embedded.Options{Path: "/var/lib/joinery/state.log"})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
package embedded
