package embedded

import (
	"context"
	"maps"
	"time"

	"github.com/joinery/joinery/persistence"
)

var _ persistence.LineageStore = (*Store)(nil)

// lineageLocked returns job's lineage, creating (and logging) its
// incarnation when it has none. The caller holds wmu.
func (s *Store) lineageLocked(job string) (persistence.Lineage, error) {
	s.mu.RLock()
	var lin persistence.Lineage
	if j := s.mu.jobs[job]; j != nil {
		lin = j.lin
	}
	s.mu.RUnlock()
	if lin.Incarnation != "" {
		return lin, nil
	}
	lin = persistence.Lineage{Incarnation: persistence.NewIncarnationID(), Floor: persistence.FloorAt(time.Now(), 0)}
	if err := s.writeLocked(logRecord{kind: kindLineage, job: job, lin: lin}); err != nil {
		return persistence.Lineage{}, err
	}
	return lin, nil
}

// Lineage implements persistence.LineageStore. Creating the incarnation
// appends a record to the log (and fsyncs it).
func (s *Store) Lineage(ctx context.Context, job string) (persistence.Lineage, error) {
	if err := ctx.Err(); err != nil {
		return persistence.Lineage{}, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.lineageLocked(job)
}

// CommitOffsets implements persistence.Store: CommitOffsetsSeen without a
// check. With a log file the offsets and the bumped sequence are one
// record, appended and fsynced before it returns.
func (s *Store) CommitOffsets(ctx context.Context, job string, offsets map[string]int64) error {
	_, err := s.CommitOffsetsSeen(ctx, job, offsets, persistence.Lineage{})
	return err
}

// CommitOffsetsSeen implements persistence.LineageStore: the check, the
// bump and the offsets are one log record, under the writer lock.
func (s *Store) CommitOffsetsSeen(ctx context.Context, job string, offsets map[string]int64, seen persistence.Lineage) (persistence.Lineage, error) {
	if err := ctx.Err(); err != nil {
		return persistence.Lineage{}, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	lin, err := s.lineageLocked(job)
	if err != nil {
		return persistence.Lineage{}, err
	}
	if seen.Behind(lin) {
		return lin, &persistence.RollbackError{Job: job, Seen: seen, Found: lin}
	}
	lin.Seq++
	if err := s.writeLocked(logRecord{kind: kindLineage, job: job, lin: lin, offsets: maps.Clone(offsets)}); err != nil {
		return persistence.Lineage{}, err
	}
	return lin, nil
}

// Refound implements persistence.LineageStore.
func (s *Store) Refound(ctx context.Context, job string, found persistence.Lineage) (persistence.Lineage, error) {
	if err := ctx.Err(); err != nil {
		return persistence.Lineage{}, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	lin, err := s.lineageLocked(job)
	if err != nil {
		return persistence.Lineage{}, err
	}
	if lin.Incarnation != found.Incarnation {
		return lin, nil
	}
	lin = persistence.Lineage{Incarnation: persistence.NewIncarnationID(), Floor: persistence.FloorAt(time.Now(), lin.Floor), Seq: lin.Seq}
	if err := s.writeLocked(logRecord{kind: kindLineage, job: job, lin: lin}); err != nil {
		return persistence.Lineage{}, err
	}
	return lin, nil
}
