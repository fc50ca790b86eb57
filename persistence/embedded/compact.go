package embedded

import (
	"maps"
	"slices"

	"github.com/joinery/joinery/persistence"
)

// liveSizeLocked estimates the encoded size of the live data in bytes.
func (s *Store) liveSizeLocked() int64 {
	var n int64
	for job, j := range s.mu.jobs {
		for k, e := range j.snaps {
			n += int64(len(job) + len(k) + len(e.state) + 8)
			for name, v := range e.parts {
				n += int64(len(name) + len(v) + 4)
			}
			for _, po := range e.offsets {
				n += int64(len(po.Partition) + 10)
			}
		}
		for p := range j.offsets {
			n += int64(len(p) + 10)
		}
		for k := range j.epochs {
			n += int64(len(job) + len(k) + 10)
		}
		n += int64(10 * j.timers.len())
	}
	return n
}

// recordsLocked returns the live data as log records: one save record per
// job and one commit record per job with committed offsets.
func (s *Store) recordsLocked() []logRecord {
	var out []logRecord
	for _, job := range slices.Sorted(maps.Keys(s.mu.jobs)) {
		j := s.mu.jobs[job]
		if len(j.snaps) > 0 {
			// Chunked so that no record grows near the size limit.
			r, size := logRecord{kind: kindSave}, 0
			for _, k := range slices.Sorted(maps.Keys(j.snaps)) {
				e := j.snaps[k]
				at, ok := j.timers.get(k)
				r.snaps = append(r.snaps, persistence.Snapshot{Job: job, Key: k, State: e.state, Offsets: e.offsets,
					HasTimer: ok, NextTimer: at, Parts: e.wholeParts()})
				for name, v := range e.parts {
					size += len(name) + len(v) + 4
				}
				if size += len(k) + len(e.state) + 16*len(e.offsets) + 11; size >= compactChunk {
					out = append(out, r)
					r, size = logRecord{kind: kindSave}, 0
				}
			}
			if len(r.snaps) > 0 {
				out = append(out, r)
			}
		}
		if j.lin.Incarnation != "" {
			out = append(out, logRecord{kind: kindLineage, job: job, lin: j.lin, offsets: j.offsets})
		} else if len(j.offsets) > 0 {
			out = append(out, logRecord{kind: kindCommit, job: job, offsets: j.offsets})
		}
		if len(j.epochs) > 0 {
			r, size := logRecord{kind: kindEpoch}, 0
			for _, k := range slices.Sorted(maps.Keys(j.epochs)) {
				r.epochs = append(r.epochs, epochEntry{job: job, key: k, epoch: j.epochs[k]})
				if size += len(job) + len(k) + 12; size >= compactChunk {
					out = append(out, r)
					r, size = logRecord{kind: kindEpoch}, 0
				}
			}
			if len(r.epochs) > 0 {
				out = append(out, r)
			}
		}
	}
	return out
}
