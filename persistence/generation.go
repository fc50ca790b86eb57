package persistence

import (
	"context"
	"errors"
	"fmt"
)

// ErrStoreRolledBack matches (with errors.Is) every *StaleStoreError.
var ErrStoreRolledBack = errors.New("persistence: store rolled back under this writer")

// StaleStoreError is the error of a Save (or Load) that a store refused
// because it went back in time under the caller: the store keeps a write
// generation per shard (redisstore: per slot group of a job), bumped by
// every Save in the same atomic step as its writes, and the caller's store
// handle remembers the highest generation each shard acknowledged to it.
// A shard showing a lower one lost writes it acknowledged (a Redis
// restarted from an older snapshot, or failed over to a lagging replica):
// Save writes nothing of that shard's part of the batch and Load does not
// return what it read. Retrying cannot succeed on this handle; the node
// stops, as for a *RollbackError, and a restarted one (a new handle) starts
// over from the store's state and committed offsets.
//
// It also matches ErrRollback, so code that gives up on a store gone back in
// time gives up on it as well.
type StaleStoreError struct {
	Job   string
	Shard int   // the store's shard of the write (redisstore: the slot group, 0..255)
	Seen  int64 // the highest generation of the shard acknowledged to this handle
	Found int64 // the generation the shard showed
}

func (e *StaleStoreError) Error() string {
	return fmt.Sprintf("persistence: store of job %q went back in time under a write: shard %d shows write generation %d, below the %d it acknowledged before; the write was refused",
		e.Job, e.Shard, e.Found, e.Seen)
}

// Is reports whether target is ErrStoreRolledBack or ErrRollback.
func (e *StaleStoreError) Is(target error) bool {
	return target == ErrStoreRolledBack || target == ErrRollback
}

// RecoveryStore is a Store whose shards can go back in time one at a time
// (redisstore on a Redis Cluster: one master failed over to a lagging
// replica), so that its committed offsets, kept in one shard, may be ahead
// of the state in another: the writes for the events up to the committed
// offset are acknowledged, and lost in that shard. A node asks it where its
// sources must start re-reading instead of CommittedOffsets.
type RecoveryStore interface {
	Store
	// RecoveryOffsets returns, per source partition, an offset at or below
	// the committed one up to which (inclusive) every shard holds every
	// event's writes, as far as the store can tell also after a shard went
	// back in time on its own: each shard keeps, in the same atomic order as
	// its own writes, a copy of the committed offsets of a moment after
	// those writes (redisstore: written to every slot group about once a
	// second), and this is the least of the copies and the committed
	// offset. A partition with no committed offset and no copy is absent.
	RecoveryOffsets(ctx context.Context, job string) (map[string]int64, error)
}

// FloorStore is a RecoveryStore that tells how far its recovery offsets
// are known to reach without a round trip. They lag the committed offsets
// also when no shard went back in time (redisstore copies them about once
// a second, after the commits), and a source that deletes the records it
// acknowledged (the repartition streams, docs/guides/producers.md) must
// keep those after the recovery offset, or the next reader of the
// partition, starting there, finds them gone and reports a lost range
// though the store lost nothing.
type FloorStore interface {
	RecoveryStore
	// KeptFloor returns, for partition (a record.Position's PartitionID)
	// of job, an offset at or below which RecoveryOffsets answers for the
	// partition while no shard goes back in time: the offset this
	// handle's last complete copy carried (redisstore: a copy written to
	// every slot group). ok is false while no complete copy carried the
	// partition. A store whose recovery offsets are its committed offsets
	// (redisstore on one server) returns math.MaxInt64, true.
	KeptFloor(job, partition string) (offset int64, ok bool)
}
