// Package persistence owns where key state lives between activations: the
// Store interface, its errors and the snapshot type. Implementations live in
// subpackages: redisstore (go-redis/v9; the only place Redis types appear) and
// embedded (the no-server default, in memory and optionally on a file).
// storetest holds the conformance suite every implementation passes.
package persistence

import (
	"context"
	"errors"

	"github.com/joinery/joinery/record"
)

// ErrNotFound is returned by Load when a key has no snapshot.
var ErrNotFound = errors.New("persistence: not found")

// ErrClosed is returned by every method except Close after Close, and by
// calls that Close interrupts.
var ErrClosed = errors.New("persistence: closed")

// Snapshot is the durable state of one join key: the join state machine's
// encoded state and, per source partition, the highest offset whose event is
// included in that state. State and Offsets are written together atomically, so
// a reader never sees one without the other.
type Snapshot struct {
	Job     string
	Key     record.Key
	State   []byte           // opaque, encoded by the joins package; nil or empty means "no state"
	Offsets map[string]int64 // record.Position.PartitionID() -> highest applied offset
}

// Store keeps key snapshots and committed source offsets.
//
// All methods are safe for concurrent use. Slices and maps passed in are not
// retained after the call returns; those returned belong to the caller.
type Store interface {
	// Load returns the snapshot of key in job, or ErrNotFound. The returned
	// snapshot's Job and Key are the arguments; its State is non-empty and its
	// Offsets may be empty. Job names and keys may be any strings, including
	// empty ones and ones with separators or braces in them.
	Load(ctx context.Context, job string, key record.Key) (Snapshot, error)
	// Save writes a batch of snapshots, each replacing the previous snapshot of
	// its key. Implementations send the batch in one round trip (pipelined) where
	// they can. A snapshot with empty State deletes the key. When Save returns
	// nil every snapshot of the batch is durable to the store's standard.
	//
	// Snapshots apply in batch order, so of two snapshots of one key the later
	// wins. A deleted snapshot's Offsets are not kept; deleting a key that has
	// no snapshot does nothing. An empty batch does nothing. On an error the
	// batch may have been applied or not; implementations that can apply it
	// atomically (both in this tree do) say so.
	Save(ctx context.Context, batch []Snapshot) error
	// Keys lists the keys of job that have a snapshot, in no particular order
	// and without duplicates; an unknown job has none (not an error).
	Keys(ctx context.Context, job string) ([]record.Key, error)
	// CommitOffsets records, per source partition, the offset below which
	// (inclusive) every event is in a durable snapshot. An offset lower than the
	// one stored is ignored: committed offsets never go back.
	CommitOffsets(ctx context.Context, job string, offsets map[string]int64) error
	// CommittedOffsets returns what CommitOffsets recorded for job (empty map
	// when nothing was).
	CommittedOffsets(ctx context.Context, job string) (map[string]int64, error)
	// Close releases the store's resources. It is idempotent.
	Close() error
}
