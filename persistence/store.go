// Package persistence owns where key state lives between activations: the
// Store interface, its errors and the snapshot type. Implementations live in
// subpackages: redisstore (go-redis/v9; the only place Redis types appear) and
// embedded (the no-server default, in memory and optionally on a file).
// storetest holds the conformance suite every implementation passes.
//
// A store that goes back in time (restarted empty, restored from an older
// snapshot) is detected through its Lineage (lineage.go): an incarnation id
// and a commit sequence, checked by Guard on every commit; see
// docs/operations/recovery.md, "Rollback detection".
//
// Writes are fenced by owner epochs (docs/concepts/architecture.md, invariant 3): an
// activation calls Store.Acquire once when it starts, stamps the epoch on
// every Snapshot it saves, and stops when Save reports a *FencedError,
// because a newer activation of the key exists.
//
// Keys with pending event-time timers are indexed per job (docs/concepts/architecture.md, invariant 4:
// timers survive passivation and node loss): a snapshot saved with HasTimer
// puts its key in the job's timer index at NextTimer, one saved without it
// (or deleted) takes it out, atomically with the snapshot and under the same
// fencing check. Store.DueTimers lists the keys whose timer is due, so a
// node can wake them even when they are passivated or their node died.
//
// # Incremental writes and batched loads
//
// A snapshot may carry a key's state as a base and named parts, and a
// delta of them (Snapshot, "Parts and deltas"): keycore makes the rows of
// a changelog join, its outbox entries and its Debezium positions parts,
// so a change of one row writes that row and not the whole key (which was
// 12–25% of a node's CPU, re-encoded on every request). Deltas are
// written like whole states — fenced, generation-checked, atomic per key
// with its offsets and timer index entry — and Load packs base and parts
// (internal/stateparts), so a delta-written key loads as the whole one.
// Stores keep each part's latest value (redisstore: a hash per key beside
// its value; embedded: a map, its log compacted as before) rather than a
// log of deltas folded into a base: reads stay bounded by the live state
// with no fold rule to tune, no read-modify-write of a base in a script,
// and a store that need not understand the encoding (docs/concepts/per-key-protocol.md,
// "Incremental state writes"). BatchLoader (LoadMany) is the optional
// extension that reads many keys in one round trip; persistence.LoadMany
// falls back to a Load per key.
package persistence

import (
	"context"
	"errors"
	"fmt"

	"github.com/joinery/joinery/internal/stateparts"
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
//
// Epoch is the owner epoch of the activation that wrote the snapshot (see
// Store.Acquire); Save writes the snapshot only while it is still the key's
// current epoch. Zero means "unfenced": such a snapshot is written only to a
// key that was never acquired (whose epoch is 0), which keeps single-owner
// setups and tests that never call Acquire working, and stops a legacy
// writer as soon as any activation acquires the key. Load leaves Epoch zero:
// a writer's epoch comes from Acquire, never from the stored state.
//
// HasTimer and NextTimer place the key in the job's timer index: with
// HasTimer set, NextTimer is the earliest pending event-time timer of the
// key in milliseconds (any value in [MinTimer, MaxTimer], zero and negative
// ones included); without it the key has no pending timer and NextTimer is
// ignored. The zero value therefore means "no timer", as it did before the
// index existed. A snapshot with empty State deletes the key and takes it
// out of the index whatever its timer fields say. Like Epoch, Load leaves
// both zero: the timers themselves live in State, and the index only says
// when to wake the key (see Store.DueTimers).
//
// Owned hands State and the Parts' values over to the store: the caller
// promises never to change those bytes after Save (nor before it returns),
// so a store that keeps snapshots in memory (embedded) keeps them as they
// are instead of copying them. Without it Save copies what it keeps, and
// the caller may reuse its buffers once Save returns. The store never
// changes the bytes either way. The Parts slice itself, Offsets and the
// batch are never retained. actors' Writer sets Owned on the snapshots it
// is given (its Submit's contract); Load leaves it false.
//
// # Parts and deltas (incremental writes)
//
// A key's state may be stored in parts: State is then its base and Parts
// its named pieces besides (a changelog join's rows, outbox entries; what
// they mean is the writer's business). A snapshot without Delta replaces
// the key's whole state: base State, exactly the Parts given (those with a
// Value). One with Delta changes it: State replaces the base, each part
// with a Value sets that part, each without one deletes it, and parts it
// does not name stay as they are; Offsets and the timer fields replace the
// stored ones as in any snapshot. A delta onto a key without a snapshot
// applies onto an empty one. A snapshot with empty State still deletes the
// key, parts and all, Delta or not. Parts of one snapshot are applied in
// order (the later of two with one name wins); names must not be empty.
//
// Load returns a key stored with parts packed into State
// (stateparts.Pack: the base and the parts in name order) and a key
// without any as its base alone, so a reader that writes only whole
// states reads them back unchanged. keycore decodes both forms. A delta
// is written like a whole state — fenced, generation-checked, atomic per
// key with its offsets and timer — so a delta then a Load gives what the
// equivalent whole snapshot would (storetest: Delta*). Deltas apply in
// order: a writer sends one only on top of the writes before it, and after
// a failed write reloads rather than sending more (actors' Writer merges
// a key's deltas of one batch with MergeSnapshots).
type Snapshot struct {
	Job       string
	Key       record.Key
	State     []byte         // opaque, encoded by the joins package; nil or empty means "no state"
	Offsets   record.Offsets // per record.Position.PartitionID(), the highest applied offset; in order (Save refuses others)
	Epoch     int64          // the writer's owner epoch from Acquire; 0 = unfenced
	HasTimer  bool           // the key has a pending event-time timer, due at NextTimer
	NextTimer int64          // ms; the earliest pending timer, meaningful only with HasTimer
	Parts     []Part         // the state's named parts besides State (see above); Load leaves it nil
	Delta     bool           // State and Parts change the stored state instead of replacing it
	Owned     bool           // the store may keep State and the Parts' values: the caller never changes them (see above)
}

// Part is one named part of a key's state (Snapshot.Parts); in a delta an
// empty Value deletes the part.
type Part = stateparts.Part

// MergeSnapshots returns the one snapshot that writing a then b (two
// snapshots of one key) amounts to: b's base, offsets, epoch and timer,
// with b's parts over a's when b is a delta. A writer that coalesces a
// key's snapshots of one batch keeps every delta's changes this way. The
// result shares a's and b's values, and is Owned when b is, or, for a
// merged delta (which may share a's values), when both are.
func MergeSnapshots(a, b Snapshot) Snapshot {
	if !b.Delta || len(b.State) == 0 {
		return b
	}
	out := b
	out.Owned = a.Owned && b.Owned
	if len(a.State) == 0 {
		// A delete then a delta: the delta applies onto nothing.
		out.Delta = false
		out.Parts = stateparts.Merge(nil, b.Parts)
	} else {
		out.Delta = a.Delta
		out.Parts = stateparts.Merge(a.Parts, b.Parts)
	}
	if !out.Delta {
		// A whole state then a delta: a whole state without the deleted parts.
		kept := out.Parts[:0]
		for _, p := range out.Parts {
			if len(p.Value) > 0 {
				kept = append(kept, p)
			}
		}
		out.Parts = kept
	}
	return out
}

// ValidSnapshots returns an error naming the first snapshot of batch with
// an empty part name or Offsets out of order (record.Offsets.Check), or
// nil. Store implementations call it at the start of Save.
func ValidSnapshots(batch []Snapshot) error {
	for _, sn := range batch {
		if err := sn.Offsets.Check(); err != nil {
			return fmt.Errorf("persistence: key %q of job %q: %w", sn.Key, sn.Job, err)
		}
		for _, p := range sn.Parts {
			if p.Name == "" {
				return fmt.Errorf("persistence: key %q of job %q has a part without a name", sn.Key, sn.Job)
			}
		}
	}
	return nil
}

// MinTimer and MaxTimer bound Snapshot.NextTimer: ±2^53 ms, about ±285,000
// years around the epoch. They are the integers a float64 holds exactly,
// which is what the Redis store's sorted-set scores are. Save refuses a
// batch with a timer outside them (ErrTimerRange). A caller with a timer
// beyond MaxTimer (an "end of time" timer) may save MaxTimer instead: the
// key is then woken early, at worst, and finds its timer not yet due.
const (
	MinTimer int64 = -1 << 53
	MaxTimer int64 = 1 << 53
)

// ErrTimerRange is returned (wrapped) by Save for a batch holding a
// snapshot with HasTimer and a NextTimer outside [MinTimer, MaxTimer]. Such
// a batch is refused as a whole before anything is written.
var ErrTimerRange = errors.New("persistence: timer out of range")

// CheckTimers returns an error wrapping ErrTimerRange that names the first
// snapshot of batch whose timer is out of range (deleting snapshots are not
// checked), or nil. Store implementations call it at the start of Save.
func CheckTimers(batch []Snapshot) error {
	for _, sn := range batch {
		if len(sn.State) > 0 && sn.HasTimer && (sn.NextTimer < MinTimer || sn.NextTimer > MaxTimer) {
			return fmt.Errorf("%w: key %q of job %q has NextTimer %d, outside [%d, %d]",
				ErrTimerRange, sn.Key, sn.Job, sn.NextTimer, MinTimer, MaxTimer)
		}
	}
	return nil
}

// BatchLoader is an optional extension of Store (check it by type
// assertion): LoadMany reads many keys' snapshots of one job in one round
// trip where Load takes one each (redisstore: one call per slot group, all
// pipelined). The result has one snapshot per key, in keys' order, each
// as Load would return it, except that a key without a snapshot has an
// empty State (and nil Offsets) instead of ErrNotFound. An error (a
// connection failure, a *StaleStoreError of a shard gone back in time)
// fails the whole call.
type BatchLoader interface {
	LoadMany(ctx context.Context, job string, keys []record.Key) ([]Snapshot, error)
}

// LoadMany reads keys' snapshots with s's LoadMany when it is a
// BatchLoader, else with one Load per key; the result is as
// BatchLoader.LoadMany's.
func LoadMany(ctx context.Context, s Store, job string, keys []record.Key) ([]Snapshot, error) {
	if bl, ok := s.(BatchLoader); ok {
		return bl.LoadMany(ctx, job, keys)
	}
	out := make([]Snapshot, len(keys))
	for i, k := range keys {
		sn, err := s.Load(ctx, job, k)
		switch {
		case errors.Is(err, ErrNotFound):
			sn = Snapshot{Job: job, Key: k}
		case err != nil:
			return nil, err
		}
		out[i] = sn
	}
	return out, nil
}

// Activator is an optional extension of Store (check it by type
// assertion): AcquireLoadMany does for many keys of one job what a new
// activation does for its key — Acquire, then Load — in one round trip
// where that takes two per key (redisstore: one script per slot group).
// epochs[i] is keys[i]'s new owner epoch, issued as Acquire issues it, and
// snaps[i] its snapshot read after it, as BatchLoader.LoadMany returns
// them (an empty State for a key without one). On an error some keys may
// have been acquired (their epochs skipped, as a retried Acquire may).
type Activator interface {
	AcquireLoadMany(ctx context.Context, job string, keys []record.Key) (epochs []int64, snaps []Snapshot, err error)
}

// AcquireLoadMany is s's AcquireLoadMany when it is an Activator, else an
// Acquire per key then LoadMany.
func AcquireLoadMany(ctx context.Context, s Store, job string, keys []record.Key) ([]int64, []Snapshot, error) {
	if a, ok := s.(Activator); ok {
		return a.AcquireLoadMany(ctx, job, keys)
	}
	epochs := make([]int64, len(keys))
	for i, k := range keys {
		e, err := s.Acquire(ctx, job, k)
		if err != nil {
			return nil, nil, err
		}
		epochs[i] = e
	}
	snaps, err := LoadMany(ctx, s, job, keys)
	if err != nil {
		return nil, nil, err
	}
	return epochs, snaps, nil
}

// TimerDue is one entry of a job's timer index: Key's earliest pending
// event-time timer is At (ms).
type TimerDue struct {
	Key record.Key
	At  int64
}

// Store keeps key snapshots and committed source offsets.
//
// All methods are safe for concurrent use. Slices and maps passed in are not
// retained after the call returns, except the bytes of a Snapshot with
// Owned, which Save may keep; those returned belong to the caller.
type Store interface {
	// Load returns the snapshot of key in job, or ErrNotFound. The returned
	// snapshot's Job and Key are the arguments; its State is non-empty (packed
	// with its parts when it has any: see Snapshot) and its Offsets may be
	// empty. Job names and keys may be any strings, including
	// empty ones and ones with separators or braces in them.
	Load(ctx context.Context, job string, key record.Key) (Snapshot, error)
	// Save writes a batch of snapshots, each replacing the previous snapshot of
	// its key, or changing it (Snapshot.Delta). Implementations send the batch in one round trip (pipelined) where
	// they can. A snapshot with empty State deletes the key. When Save returns
	// nil every snapshot of the batch is durable to the store's standard.
	//
	// Writes are fenced: a snapshot is written (or, with empty State, deletes)
	// only if its Epoch equals the key's current owner epoch, compared and set
	// atomically with the write. A snapshot with any other Epoch (stale, zero
	// after an Acquire, or never issued) is refused and leaves the key as it
	// was; the rest of the batch is still written. Save then returns an error
	// joining one *FencedError per refused snapshot, in batch order: use
	// Fenced(err) to list them, errors.As for the first, or
	// errors.Is(err, ErrFenced). Such an error means the caller has lost the
	// key; retrying cannot succeed.
	//
	// Snapshots apply in batch order, so of two snapshots of one key the later
	// wins. A deleted snapshot's Offsets are not kept; deleting a key that has
	// no snapshot does nothing. An empty batch does nothing. On an error other
	// than fencing the batch may have been applied or not, or partly (each
	// snapshot wholly or not at all: redisstore applies a batch per slot
	// group); retrying it is safe. Implementations that apply it atomically
	// (embedded does) say so.
	//
	// A store that can go back in time under an open handle (a server
	// restored from an older snapshot: redisstore) refuses the handle's
	// writes to a shard that lost writes the handle saw acknowledged:
	// nothing of that shard's part is written, and Save returns a
	// *StaleStoreError (errors.Is(err, ErrStoreRolledBack), also
	// ErrRollback); Load refuses such a shard's keys the same way. Retrying
	// cannot succeed; a new handle (a restarted node) takes the store as it
	// is. A store that cannot go back in time under a running process
	// (embedded) never returns it (storetest: WithRollback,
	// RollbackFirstWriteRefused).
	//
	// Each written snapshot also updates the job's timer index in the same
	// atomic step: with HasTimer (and non-empty State) the key is indexed at
	// NextTimer, replacing its previous entry; otherwise, and when it
	// deletes, the key leaves the index. A fenced snapshot changes neither
	// the key nor the index. A batch with a timer outside [MinTimer,
	// MaxTimer] is refused whole with an error wrapping ErrTimerRange,
	// before anything is written.
	Save(ctx context.Context, batch []Snapshot) error
	// DueTimers returns up to limit entries of job's timer index whose At is
	// at most upTo, ascending by At and, for equal At, by Key (byte-wise).
	// It returns an empty slice (not an error) for an unknown job, when
	// nothing is due, or when limit <= 0. Every upTo is valid: one below
	// MinTimer finds nothing, one above MaxTimer finds every indexed key.
	// It is read-only: a key stays listed until a Save of it moves or clears
	// its timer, so a caller that cannot wake every due key at once wakes
	// the first limit, lets them save, and asks again. The returned slice is
	// the caller's. It may run concurrently with Save and sees each
	// snapshot of a Save wholly or not at all (a store that applies a batch
	// per shard, as redisstore does, may show part of a batch meanwhile).
	DueTimers(ctx context.Context, job string, upTo int64, limit int) ([]TimerDue, error)
	// Acquire makes the caller the owner of key in job: it atomically
	// increments the key's owner epoch and returns the new value, which the
	// caller puts in every Snapshot it saves for the key. From then on Save
	// refuses snapshots with any older epoch, so a stale activation elsewhere
	// (a rebalance or partition can briefly run a key on two nodes) can no
	// longer write. A new activation calls Acquire once, before Load: a Load
	// before it could miss the previous owner's last write.
	//
	// Epochs start above the job's incarnation floor (Lineage.Floor; 0 for
	// a store without a lineage) and only grow: each call returns more than
	// any earlier call for the key, even under concurrent callers, and they
	// survive Close and reopen to the store's durability standard. Within
	// an incarnation the values are consecutive without failures; an
	// operation retried after a network error may skip one. A new or
	// re-founded incarnation's floor lies above every epoch issued before,
	// so an epoch is never issued twice even if the store lost epoch keys. Acquire neither creates nor changes a snapshot, and deleting a
	// snapshot keeps the key's epoch.
	Acquire(ctx context.Context, job string, key record.Key) (epoch int64, err error)
	// Epoch returns the key's current owner epoch: the last value Acquire
	// returned, or 0 when the key was never acquired (not an error). It is
	// for inspection (the admin CLI); an owner learns its epoch from Acquire.
	Epoch(ctx context.Context, job string, key record.Key) (int64, error)
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
