package persistence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lineage says which history of a job's store a reader saw: the store's
// incarnation and how far its commit sequence had come.
//
// Incarnation is a random id the store creates once per job, the first
// time anything asks for it; a store that lost it (a Redis restarted
// empty, or restored from a snapshot taken before it existed) creates a
// new one. Floor is the incarnation's epoch floor: every owner epoch that
// Acquire hands out under it is above Floor. A new incarnation's floor is
// derived from the clock (FloorAt), so it lies above every epoch issued by
// an earlier incarnation even when the store lost those (see
// docs/operations/recovery.md, "Rollback detection"). Seq is the commit sequence:
// every CommitOffsets bumps it by one, atomically with the offsets.
//
// A store has gone back in time, relative to a reader that saw s, when it
// shows a different incarnation or a lower Seq: Behind reports that.
type Lineage struct {
	Incarnation string
	Floor       int64
	Seq         int64
}

// Behind reports whether found, read from a store, shows that the store
// went back in time relative to l, what a reader saw before. A zero l (the
// reader saw nothing yet) is never behind.
func (l Lineage) Behind(found Lineage) bool {
	if l.Incarnation == "" {
		return false
	}
	return found.Incarnation != l.Incarnation || found.Seq < l.Seq
}

// String encodes l as "<incarnation>/<floor>/<seq>", the form a source
// commit carries (Kafka commit metadata); ParseLineage reads it back.
func (l Lineage) String() string {
	return l.Incarnation + "/" + strconv.FormatInt(l.Floor, 10) + "/" + strconv.FormatInt(l.Seq, 10)
}

// ParseLineage parses what Lineage.String produced.
func ParseLineage(s string) (Lineage, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" {
		return Lineage{}, fmt.Errorf("persistence: lineage %q is not <incarnation>/<floor>/<seq>", s)
	}
	floor, err1 := strconv.ParseInt(parts[1], 10, 64)
	seq, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Lineage{}, fmt.Errorf("persistence: lineage %q: %w", s, err)
	}
	return Lineage{Incarnation: parts[0], Floor: floor, Seq: seq}, nil
}

// FloorShift places an incarnation's floor: the floor is its creation time
// in Unix seconds shifted left by FloorShift, so each second of wall time
// leaves 2^30 (about a billion) epochs per key to the incarnation before
// it, and int64 lasts until the year 2242.
const FloorShift = 30

// FloorAt returns the epoch floor of an incarnation created at t, and at
// least above, by one second's worth, the floor prev it replaces (so a
// clock that stepped back still moves the floor up).
func FloorAt(t time.Time, prev int64) int64 {
	f := t.Unix() << FloorShift
	if next := (prev>>FloorShift + 1) << FloorShift; prev > 0 && f < next {
		f = next
	}
	return f
}

// NewIncarnationID returns a fresh random incarnation id (32 hex digits).
func NewIncarnationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// ErrRollback matches (with errors.Is) every *RollbackError.
var ErrRollback = errors.New("persistence: store went back in time")

// RollbackError says that a job's store went back in time: it was
// restarted empty, restored from an older snapshot or failed over to a
// replica that had not caught up. Seen is the lineage the reader saw last,
// Found what the store shows now. The store's state and offsets may have
// lost writes the node already acknowledged to its sources, so going on
// would hand out owner epochs twice and replay a changelog with gaps: the
// node stops reading its sources.
//
// Write is the refused key write (or read) that found the rollback, nil
// when a commit or a lineage check found it: a write finds it first, at the
// first write after the rollback to a shard whose writes were lost, even
// when no offsets were committed since (then Found's Seq may equal Seen's).
type RollbackError struct {
	Job   string
	Seen  Lineage
	Found Lineage
	Write *StaleStoreError
}

func (e *RollbackError) Error() string {
	what := "commit sequence went back"
	switch {
	case e.Write != nil:
		what = fmt.Sprintf("a key write found shard %d at write generation %d, below the %d acknowledged before", e.Write.Shard, e.Write.Found, e.Write.Seen)
	case e.Seen.Incarnation != e.Found.Incarnation:
		what = "incarnation changed"
	}
	return fmt.Sprintf("persistence: store of job %q went back in time (%s): saw incarnation %s seq %d, found incarnation %s seq %d",
		e.Job, what, e.Seen.Incarnation, e.Seen.Seq, e.Found.Incarnation, e.Found.Seq)
}

// Is reports whether target is ErrRollback.
func (e *RollbackError) Is(target error) bool { return target == ErrRollback }

// LineageStore is a Store that keeps a lineage per job (both
// implementations do; callers check with a type assertion). Its
// CommitOffsets bumps the job's commit sequence, as CommitOffsetsSeen does.
type LineageStore interface {
	Store
	// Lineage returns job's lineage, creating the incarnation when the
	// store has none. It only reads otherwise.
	Lineage(ctx context.Context, job string) (Lineage, error)
	// CommitOffsetsSeen is CommitOffsets checked against seen, the
	// lineage the caller saw last: when seen.Behind(current) it writes
	// nothing and returns a *RollbackError; otherwise it commits the
	// offsets and bumps Seq, atomically with each other (redisstore on a
	// cluster: the check and bump first, then the offsets, see its
	// doc), and returns the lineage after the bump. With a zero seen it
	// does not check. Empty offsets still check and bump.
	CommitOffsetsSeen(ctx context.Context, job string, offsets map[string]int64, seen Lineage) (Lineage, error)
	// Refound replaces job's incarnation after a detected rollback, when
	// it is still found (compare-and-set: when another caller re-founded
	// already, it returns the current lineage and changes nothing): a new
	// id and a floor from FloorAt(now, found.Floor), so epochs issued
	// before the rollback are never issued again; Seq is kept. It returns
	// the lineage now in the store.
	Refound(ctx context.Context, job string, found Lineage) (Lineage, error)
}
