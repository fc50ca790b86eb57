package persistence

import (
	"context"
	"errors"
	"sync"

	"github.com/joinery/joinery/record"
)

// Guard is a Store that watches its LineageStore for going back in time.
// It remembers, per job, the last lineage it saw, and checks it on Check
// (a node calls it at start and when it reconnects) and on every
// CommitOffsets (through CommitOffsetsSeen, in the store's own atomic
// step). On the first rollback it finds for a job it re-founds the
// store's incarnation when the store's floor did not move (LineageStore.
// Refound: epochs issued before the rollback are never issued again), calls
// OnRollback once, and from then on Check and CommitOffsets of that job
// return the same *RollbackError: the caller must stop and start over
// from the store's state. The other methods pass through.
//
// Recover compares the store with a lineage a source's commit carried
// instead (what some node saw when those records were acknowledged): a
// rollback found that way is not fatal, the source re-reads what the
// store lost (docs/operations/recovery.md, "Recovery").
type Guard struct {
	LineageStore
	onRollback func(*RollbackError)

	mu   sync.Mutex
	seen map[string]Lineage
	lost map[string]*RollbackError
	// refounded is, per job, the incarnation Recover created: a commit
	// or check still holding the lineage from before it finds the store
	// "changed", by the guard's own doing.
	refounded map[string]string
}

// NewGuard wraps s. When s keeps no lineage (it is not a LineageStore) it
// returns nil: there is nothing to guard. onRollback may be nil.
func NewGuard(s Store, onRollback func(*RollbackError)) *Guard {
	ls, ok := s.(LineageStore)
	if !ok {
		return nil
	}
	return &Guard{LineageStore: ls, onRollback: onRollback, seen: map[string]Lineage{}, lost: map[string]*RollbackError{},
		refounded: map[string]string{}}
}

// Seen returns the lineage the guard saw last for job (zero when none).
func (g *Guard) Seen(job string) Lineage {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen[job]
}

// Check reads job's lineage and compares it with the one seen last: a
// *RollbackError when the store went back, nil otherwise (then the read
// lineage is the one seen).
func (g *Guard) Check(ctx context.Context, job string) error {
	if err := g.lostErr(job); err != nil {
		return err
	}
	seen := g.Seen(job)
	found, err := g.LineageStore.Lineage(ctx, job)
	if err != nil {
		return err
	}
	if seen.Behind(found) && !g.ownRefound(job, seen, found) {
		return g.rollback(ctx, &RollbackError{Job: job, Seen: seen, Found: found})
	}
	g.note(job, found)
	return nil
}

// CommitOffsets commits through CommitOffsetsSeen with the lineage seen
// last, so the check and the commit are one step of the store.
func (g *Guard) CommitOffsets(ctx context.Context, job string, offsets map[string]int64) error {
	if err := g.lostErr(job); err != nil {
		return err
	}
	l, err := g.LineageStore.CommitOffsetsSeen(ctx, job, offsets, g.Seen(job))
	var re *RollbackError
	if errors.As(err, &re) && g.ownRefound(job, re.Seen, re.Found) {
		// Recover re-founded the store since this commit read the seen
		// lineage: commit again against the new one.
		g.note(job, re.Found)
		l, err = g.LineageStore.CommitOffsetsSeen(ctx, job, offsets, re.Found)
	}
	if errors.As(err, &re) {
		return g.rollback(ctx, re)
	}
	if err != nil {
		return err
	}
	g.note(job, l)
	return nil
}

// Save passes the batch to the store. A batch the store refused because it
// went back in time under this writer (a *StaleStoreError: a shard's write
// generation below what this handle saw acknowledged) is a rollback found,
// as at a commit: the guard reads the lineage, re-founds the store when its
// floor did not move, calls OnRollback once, and from then on Check and
// CommitOffsets of the job return the *RollbackError (its Write names the
// refused write). Save returns the store's error as it was.
func (g *Guard) Save(ctx context.Context, batch []Snapshot) error {
	err := g.LineageStore.Save(ctx, batch)
	g.stale(ctx, err)
	return err
}

// Load passes through; a Load the store refused with a *StaleStoreError
// is a rollback found, as for Save.
func (g *Guard) Load(ctx context.Context, job string, key record.Key) (Snapshot, error) {
	sn, err := g.LineageStore.Load(ctx, job, key)
	g.stale(ctx, err)
	return sn, err
}

// LoadMany implements BatchLoader: the store's LoadMany when it has one,
// else a Load per key (persistence.LoadMany); a *StaleStoreError is a
// rollback found, as for Load.
func (g *Guard) LoadMany(ctx context.Context, job string, keys []record.Key) ([]Snapshot, error) {
	out, err := LoadMany(ctx, g.LineageStore, job, keys)
	g.stale(ctx, err)
	return out, err
}

// AcquireLoadMany implements Activator as LoadMany implements
// BatchLoader.
func (g *Guard) AcquireLoadMany(ctx context.Context, job string, keys []record.Key) ([]int64, []Snapshot, error) {
	epochs, out, err := AcquireLoadMany(ctx, g.LineageStore, job, keys)
	g.stale(ctx, err)
	return epochs, out, err
}

// stale turns a *StaleStoreError in err into the job's rollback.
func (g *Guard) stale(ctx context.Context, err error) {
	if err == nil {
		return // before se, which errors.As moves to the heap: a Save's every call
	}
	var se *StaleStoreError
	if !errors.As(err, &se) || g.lostErr(se.Job) != nil {
		return
	}
	re := &RollbackError{Job: se.Job, Seen: g.Seen(se.Job), Write: se}
	// Unreadable, Found stays zero: re-founding against it changes nothing,
	// and the restarted node's start check finds the store behind again.
	re.Found, _ = g.LineageStore.Lineage(ctx, se.Job)
	_ = g.rollback(ctx, re)
}

// Recover compares seen, the lineage a source's commit carried (what the
// node that acknowledged those records had seen), with the store's: when
// the store went back in time relative to it (seen.Behind), Recover
// re-founds the store when its floor did not move past seen's, as a
// rollback found by Check or a commit does (no epoch issued before the
// rollback is issued again), takes the lineage now in the store as the
// one seen, and returns the *RollbackError describing what it found; nil
// when the store is not behind seen (or seen is zero). Unlike Check it
// does not stop the job: the caller recovers by reading again what the
// store lost, from the store's offsets. After a rollback Check found, it
// returns that error.
func (g *Guard) Recover(ctx context.Context, job string, seen Lineage) (*RollbackError, error) {
	if err := g.lostErr(job); err != nil {
		return nil, err
	}
	found, err := g.LineageStore.Lineage(ctx, job)
	if err != nil {
		return nil, err
	}
	if !seen.Behind(found) {
		return nil, nil
	}
	re := &RollbackError{Job: job, Seen: seen, Found: found}
	if found.Floor > seen.Floor {
		return re, nil // a new incarnation: its epochs are above seen's already
	}
	now, err := g.LineageStore.Refound(ctx, job, found)
	if err != nil {
		return re, err
	}
	g.mu.Lock()
	g.refounded[job] = now.Incarnation
	g.mu.Unlock()
	g.note(job, now)
	return re, nil
}

// ownRefound reports whether found, behind seen, is only the incarnation
// Recover created in place of seen's.
func (g *Guard) ownRefound(job string, seen, found Lineage) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	inc := g.refounded[job]
	return inc != "" && found.Incarnation == inc && seen.Incarnation != inc
}

func (g *Guard) lostErr(job string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if re := g.lost[job]; re != nil {
		return re
	}
	return nil
}

// note records l as seen, unless a later lineage of the same incarnation
// was seen already (commits may return out of order).
func (g *Guard) note(job string, l Lineage) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur := g.seen[job]; cur.Incarnation != l.Incarnation || l.Seq >= cur.Seq {
		g.seen[job] = l
	}
}

// rollback records re for its job (the first one wins), re-founds the
// store when its floor did not move past the seen one, and reports it.
func (g *Guard) rollback(ctx context.Context, re *RollbackError) error {
	g.mu.Lock()
	if first := g.lost[re.Job]; first != nil {
		g.mu.Unlock()
		return first
	}
	g.lost[re.Job] = re
	g.mu.Unlock()
	var err error
	if re.Found.Floor <= re.Seen.Floor {
		// The store shows the incarnation seen (or an older one): its
		// epoch keys may have gone back, and new epochs would repeat
		// ones issued before. A new floor rules that out.
		_, err = g.LineageStore.Refound(ctx, re.Job, re.Found)
	}
	if g.onRollback != nil {
		g.onRollback(re)
	}
	if err != nil {
		return errors.Join(re, err)
	}
	return re
}
