package embedded

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

var _ persistence.Store = (*Store)(nil)

// Options configures New. The zero value is a purely in-memory store.
type Options struct {
	// Path is the log file. Empty means in memory only: nothing survives
	// Close. The file is created when missing; its directory must exist.
	Path string
}

// Store is the embedded persistence.Store. Its methods are safe for
// concurrent use. Load, Keys, CommittedOffsets, Epoch and DueTimers never
// wait for a disk write; Save, CommitOffsets and Acquire are serialized with each other.
type Store struct {
	// Lock order: wmu before mu.

	// wmu serializes writers: the log append and fsync, then the apply to
	// memory, so memory and log see writes in the same order.
	wmu sync.Mutex
	// log is nil for an in-memory store. Guarded by wmu.
	log *logFile

	// mu guards the data. Every change of mu's fields also holds wmu, so a
	// writer holding wmu sees data that only it can change.
	mu struct {
		sync.RWMutex
		closed bool
		jobs   map[string]*jobState
	}

	// wms holds the published node watermarks (watermarks.go).
	wms watermarkBoard

	// held is HeldBytes: changed by applyLocked (under mu), read without it.
	held atomic.Int64
}

// New opens a store. With opts.Path set it replays the log file (creating it
// when missing), so the store starts with the contents it had when last
// closed or crashed. It returns an error when the file cannot be opened, is
// not a version-1 Joinery log, or is damaged other than at its tail.
func New(opts Options) (*Store, error) {
	s := &Store{}
	s.mu.jobs = make(map[string]*jobState)
	if opts.Path == "" {
		return s, nil
	}
	lf, err := openLog(opts.Path, s.applyLocked)
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", opts.Path, err)
	}
	s.log = lf
	if lf.shouldCompact(s.liveSizeLocked()) {
		if err := lf.compact(s.recordsLocked()); err != nil {
			_ = lf.close()
			return nil, fmt.Errorf("embedded: compact %s: %w", opts.Path, err)
		}
	}
	return s, nil
}

func (s *Store) job(name string) *jobState {
	j := s.mu.jobs[name]
	if j == nil {
		j = &jobState{snaps: make(map[record.Key]entry), offsets: make(map[string]int64),
			epochs: make(map[record.Key]int64), timers: newTimerIndex()}
		s.mu.jobs[name] = j
	}
	return j
}

// applyLocked applies one decoded record to memory. The caller holds mu for
// writing (or is New, before the store is shared). The record's slices and
// maps must not be shared with a caller.
func (s *Store) applyLocked(r logRecord) {
	switch r.kind {
	case kindSave:
		for _, sn := range r.snaps {
			j := s.job(sn.Job)
			old, had := j.snaps[sn.Key]
			if had {
				s.held.Add(-entryBytes(sn.Key, old))
			}
			if len(sn.State) == 0 {
				delete(j.snaps, sn.Key)
				j.timers.remove(sn.Key)
				continue
			}
			// The key's offsets are kept in its old entry's slice when they
			// fit: no allocation for a key's usual write.
			e := entry{state: sn.State, offsets: append(old.offsets[:0:cap(old.offsets)], sn.Offsets...)}
			if sn.Delta && had {
				e.parts, e.partBytes = old.parts, old.partBytes // owned by the store: changed in place
			}
			e.applyParts(sn.Parts)
			j.snaps[sn.Key] = e
			s.held.Add(entryBytes(sn.Key, e))
			if sn.HasTimer {
				j.timers.set(sn.Key, sn.NextTimer)
			} else {
				j.timers.remove(sn.Key)
			}
		}
	case kindCommit, kindLineage:
		j := s.job(r.job)
		if r.kind == kindLineage {
			j.lin = r.lin
		}
		for p, o := range r.offsets {
			if old, ok := j.offsets[p]; !ok || o > old {
				j.offsets[p] = o
			}
		}
	case kindEpoch:
		for _, e := range r.epochs {
			j := s.job(e.job)
			j.epochs[e.key] = max(j.epochs[e.key], e.epoch)
		}
	}
}

// epochLocked returns key's owner epoch, 0 when it was never acquired. The
// caller holds mu (for reading is enough).
func (s *Store) epochLocked(job string, key record.Key) int64 {
	if j := s.mu.jobs[job]; j != nil {
		return j.epochs[key]
	}
	return 0
}

// Load implements persistence.Store. The returned snapshot's State and
// Offsets are fresh copies.
func (s *Store) Load(ctx context.Context, job string, key record.Key) (persistence.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return persistence.Snapshot{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return persistence.Snapshot{}, persistence.ErrClosed
	}
	j := s.mu.jobs[job]
	if j == nil {
		return persistence.Snapshot{}, persistence.ErrNotFound
	}
	e, ok := j.snaps[key]
	if !ok {
		return persistence.Snapshot{}, persistence.ErrNotFound
	}
	return persistence.Snapshot{Job: job, Key: key, State: e.loadState(), Offsets: slices.Clone(e.offsets)}, nil
}

// Save implements persistence.Store. The epoch check and the write happen
// under the writer lock, so they are atomic with respect to Acquire. With a
// log file the snapshots that pass the check are one record, appended and
// fsynced before Save returns; after a failed append or fsync the store
// refuses further writes (the file's state is unknown), and must be
// reopened. A batch whose every snapshot is fenced writes nothing. The
// timer index changes with the snapshots, in the same record and under the
// same lock. It copies the bytes it keeps of a snapshot, unless the
// snapshot is Owned (persistence.Snapshot): those it keeps as they are,
// but a State with more than ownedSlack bytes of spare capacity.
func (s *Store) Save(ctx context.Context, batch []persistence.Snapshot) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := persistence.CheckTimers(batch); err != nil {
		return fmt.Errorf("embedded: save: %w", err)
	}
	if err := persistence.ValidSnapshots(batch); err != nil {
		return fmt.Errorf("embedded: save: %w", err)
	}
	// Copy before taking any lock: the store keeps none of the caller's
	// memory but an Owned snapshot's bytes (persistence.Snapshot). The
	// offsets are only read within Save (applyLocked copies them into the
	// entry, the log encodes them), so they are not copied, nor is an
	// Owned snapshot's Parts slice (applyParts copies it into the entry).
	r := logRecord{kind: kindSave, snaps: make([]persistence.Snapshot, len(batch))}
	for i, sn := range batch {
		c := persistence.Snapshot{Job: sn.Job, Key: sn.Key, Epoch: sn.Epoch}
		if len(sn.State) > 0 {
			c.State, c.Parts = sn.State, sn.Parts
			c.Offsets = sn.Offsets
			if sn.HasTimer {
				c.HasTimer, c.NextTimer = true, sn.NextTimer
			}
			c.Delta = sn.Delta
			switch {
			case !sn.Owned:
				c.State, c.Parts = slices.Clone(sn.State), clonedParts(sn.Parts)
			case cap(sn.State)-len(sn.State) > ownedSlack:
				// An encoder's buffer grown well past its bytes: the entry
				// keeps the bytes alone, not the spare capacity for ever.
				c.State = slices.Clone(sn.State)
			}
		}
		r.snaps[i] = c
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// Epochs change only under wmu, so they hold still until the write.
	var fenced []error
	s.mu.RLock()
	if !s.mu.closed {
		kept := r.snaps[:0]
		for _, sn := range r.snaps {
			if cur := s.epochLocked(sn.Job, sn.Key); cur != sn.Epoch {
				fenced = append(fenced, &persistence.FencedError{Job: sn.Job, Key: sn.Key, Epoch: sn.Epoch, Holder: cur})
				continue
			}
			kept = append(kept, sn)
		}
		r.snaps = kept
	}
	s.mu.RUnlock()
	if err := s.writeLocked(r); err != nil {
		return err
	}
	return errors.Join(fenced...)
}

// ownedSlack is the most spare capacity past its bytes an Owned
// snapshot's State may have for the store to keep it as it is (more is
// copied away): about what the key core's state encoder reserves up front
// for a state's framing (keycore), within what EntryOverhead counts for
// allocator rounding.
const ownedSlack = 64

// clonedParts is a copy of parts and their values, nil for none.
func clonedParts(parts []persistence.Part) []persistence.Part {
	if len(parts) == 0 {
		return nil
	}
	c := make([]persistence.Part, len(parts))
	for i, p := range parts {
		c[i] = persistence.Part{Name: p.Name, Value: slices.Clone(p.Value)}
	}
	return c
}

// Acquire implements persistence.Store. With a log file the new epoch is
// appended and fsynced before Acquire returns, so it survives a crash.
// Epochs lie above the job's incarnation floor (persistence.Lineage),
// which the first Acquire of a job creates when it has none.
func (s *Store) Acquire(ctx context.Context, job string, key record.Key) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	lin, err := s.lineageLocked(job)
	if err != nil {
		return 0, err
	}
	s.mu.RLock()
	cur := max(s.epochLocked(job, key), lin.Floor)
	s.mu.RUnlock()
	if cur == math.MaxInt64 {
		return 0, fmt.Errorf("embedded: owner epoch of key %q of job %q is exhausted", key, job)
	}
	next := cur + 1
	if err := s.writeLocked(logRecord{kind: kindEpoch, epochs: []epochEntry{{job: job, key: key, epoch: next}}}); err != nil {
		return 0, err
	}
	return next, nil
}

// Epoch implements persistence.Store.
func (s *Store) Epoch(ctx context.Context, job string, key record.Key) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return 0, persistence.ErrClosed
	}
	return s.epochLocked(job, key), nil
}

// writeLocked appends r to the log (if any) and applies it to memory. The
// caller holds wmu (not mu).
func (s *Store) writeLocked(r logRecord) error {
	s.mu.RLock()
	closed := s.mu.closed
	s.mu.RUnlock()
	if closed {
		return persistence.ErrClosed
	}
	if r.empty() {
		return nil
	}
	if s.log != nil {
		if err := s.log.append(r); err != nil {
			return fmt.Errorf("embedded: %w", err)
		}
	}
	s.mu.Lock()
	s.applyLocked(r)
	s.mu.Unlock()
	return nil
}

// Keys implements persistence.Store. The returned slice is the caller's.
func (s *Store) Keys(ctx context.Context, job string) ([]record.Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return nil, persistence.ErrClosed
	}
	j := s.mu.jobs[job]
	if j == nil {
		return []record.Key{}, nil
	}
	return slices.Collect(maps.Keys(j.snaps)), nil
}

// DueTimers implements persistence.Store from the in-memory index, in
// O(limit log limit) whatever the number of indexed keys.
func (s *Store) DueTimers(ctx context.Context, job string, upTo int64, limit int) ([]persistence.TimerDue, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return nil, persistence.ErrClosed
	}
	j := s.mu.jobs[job]
	if j == nil {
		return []persistence.TimerDue{}, nil
	}
	return j.timers.due(upTo, limit), nil
}

// CommittedOffsets implements persistence.Store. The returned map is a fresh
// copy and never nil.
func (s *Store) CommittedOffsets(ctx context.Context, job string) (map[string]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return nil, persistence.ErrClosed
	}
	out := make(map[string]int64)
	if j := s.mu.jobs[job]; j != nil {
		maps.Copy(out, j.offsets)
	}
	return out, nil
}

// Close implements persistence.Store: it waits for a write in progress,
// closes the log file and drops the in-memory data. It is idempotent; the
// first call's error (closing the file) is returned only once.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	s.mu.jobs = nil
	s.mu.Unlock()
	if s.log != nil {
		err := s.log.close()
		s.log = nil
		if err != nil {
			return fmt.Errorf("embedded: close: %w", err)
		}
	}
	return nil
}
