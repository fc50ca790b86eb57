package persistence

import (
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
