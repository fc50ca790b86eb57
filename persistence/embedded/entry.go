package embedded

import (
	"maps"
	"slices"

	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// EntryOverhead is what HeldBytes counts for one stored key beyond its
// key, state and offsets' bytes: the map entries, the slice and map
// headers, allocator rounding.
const EntryOverhead = 256

// entryBytes is what HeldBytes counts for one stored key.
func entryBytes(key record.Key, e entry) int64 {
	n := int64(EntryOverhead+len(key)+len(e.state)) + e.partBytes
	for _, po := range e.offsets {
		n += int64(len(po.Partition) + 24)
	}
	return n
}

// partBytes is what HeldBytes counts for one part.
func partBytes(name string, v []byte) int64 { return int64(PartOverhead + len(name) + len(v)) }

// applyParts applies a whole list of parts or a delta to e.parts
// (stateparts.Apply: an empty value deletes) and keeps e.partBytes, so a
// save of a key with many parts costs what it changes, not a walk of the
// key's parts (entryBytes was 40% of applying a save).
func (e *entry) applyParts(parts []persistence.Part) {
	if len(parts) > 0 && e.parts == nil {
		e.parts = make(map[string][]byte, len(parts))
	}
	for _, p := range parts {
		if old, ok := e.parts[p.Name]; ok {
			e.partBytes -= partBytes(p.Name, old)
		}
		if len(p.Value) == 0 {
			delete(e.parts, p.Name)
			continue
		}
		e.parts[p.Name] = p.Value
		e.partBytes += partBytes(p.Name, p.Value)
	}
	if len(e.parts) == 0 {
		e.parts, e.partBytes = nil, 0
	}
}

// PartOverhead is what HeldBytes counts for one part of a key's state
// (persistence.Snapshot.Parts) beyond its name and value: the map entry
// and the slice header.
const PartOverhead = 48

// HeldBytes estimates the memory the stored snapshots take (every key's
// state lives in memory, whether or not its key actor is live): the node
// compares it with its memory budget, since passivating a key frees
// nothing here.
func (s *Store) HeldBytes() int64 { return s.held.Load() }

// StoredKeys is the number of keys with a snapshot, over all jobs.
func (s *Store) StoredKeys() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, j := range s.mu.jobs {
		n += len(j.snaps)
	}
	return n
}

// jobState is one job's data. Snapshots in it are owned by the store: their
// State and Offsets are never handed out, and are shared with no caller but
// one that gave them to the store (persistence.Snapshot.Owned) and never
// changes them. Nothing changes a kept state's or part's bytes.
type jobState struct {
	snaps   map[record.Key]entry
	offsets map[string]int64
	epochs  map[record.Key]int64 // owner epochs; a key never acquired has none (epoch 0)
	timers  *timerIndex          // keys with a pending timer; each also has a snapshot
	lin     persistence.Lineage  // zero until the lineage is first used (lineage.go)
}

// entry is one key's snapshot. Its offsets are a slice, not a map: a key
// has one or a few partitions, and a one-entry map costs ~200 B more per
// stored key (docs/performance.md).
type entry struct {
	state   []byte
	offsets record.Offsets    // Save's copy, changed in place by the key's next Save
	parts   map[string][]byte // the state's parts besides state (the base); nil when none
	// partBytes is the parts' share of entryBytes (partBytes of each).
	partBytes int64
}

// loadState is what Load returns of e: its base, packed with its parts
// when it has any (a fresh copy either way).
func (e entry) loadState() []byte {
	if len(e.parts) == 0 {
		return slices.Clone(e.state)
	}
	ps := make([]persistence.Part, 0, len(e.parts))
	for name, v := range e.parts {
		ps = append(ps, persistence.Part{Name: name, Value: v})
	}
	return stateparts.Pack(e.state, ps)
}

// wholeParts returns e's parts as a whole snapshot's Parts (values shared).
func (e entry) wholeParts() []persistence.Part {
	if len(e.parts) == 0 {
		return nil
	}
	ps := make([]persistence.Part, 0, len(e.parts))
	for _, name := range slices.Sorted(maps.Keys(e.parts)) {
		ps = append(ps, persistence.Part{Name: name, Value: e.parts[name]})
	}
	return ps
}
