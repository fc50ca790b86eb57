package persistence

import (
	"context"
	"errors"
	"sync"
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
type Guard struct {
	LineageStore
	onRollback func(*RollbackError)

	mu   sync.Mutex
	seen map[string]Lineage
	lost map[string]*RollbackError
}

// NewGuard wraps s. When s keeps no lineage (it is not a LineageStore) it
// returns nil: there is nothing to guard. onRollback may be nil.
func NewGuard(s Store, onRollback func(*RollbackError)) *Guard {
	ls, ok := s.(LineageStore)
	if !ok {
		return nil
	}
	return &Guard{LineageStore: ls, onRollback: onRollback, seen: map[string]Lineage{}, lost: map[string]*RollbackError{}}
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
	if seen.Behind(found) {
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
	if errors.As(err, &re) {
		return g.rollback(ctx, re)
	}
	if err != nil {
		return err
	}
	g.note(job, l)
	return nil
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
