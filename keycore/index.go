package keycore

import (
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/timers"
)

// Index is the index of many keys' next timers, for a driver that runs
// many keys in one goroutine (replay, the Go API, the benchmarks) and fires
// their timers in (time, key) order: after every step of a key, Set its
// next timer (or none); Due gives the next key to fire. Not safe for
// concurrent use; the zero value is empty and ready.
type Index struct {
	tm   timers.TimerService
	next map[record.Key]int64
}

// Set records key's next timer (ok false: none).
func (x *Index) Set(key record.Key, ts int64, ok bool) {
	if x.next == nil {
		x.next = map[record.Key]int64{}
	}
	if old, had := x.next[key]; had {
		if ok && old == ts {
			return
		}
		x.tm.Delete(key, old)
		delete(x.next, key)
	}
	if ok {
		x.tm.Register(key, ts)
		x.next[key] = ts
	}
}

// Due returns the key with the earliest next timer if that timer is at or
// below wm. The driver fires it (an Advance to wm limited to ts) and Sets
// the key's next timer again before calling Due once more.
func (x *Index) Due(wm int64) (key record.Key, ts int64, ok bool) {
	t, ok := x.tm.Next()
	if !ok || t.Ts > wm {
		return "", 0, false
	}
	return t.Key, t.Ts, true
}

// Machines is one Machine per key with the Index of their next timers: the
// key actors of every key of one join, in one goroutine. A key whose
// machine is idle is forgotten after its step. Not safe for concurrent use.
type Machines struct {
	spec MachineSpec
	m    map[record.Key]*Machine
	idx  Index
	fx   joins.Effects // the machines' shared scratch (one goroutine)
}

// NewMachines returns an empty set of machines for spec.
func NewMachines(spec MachineSpec) *Machines {
	return &Machines{spec: spec, m: map[record.Key]*Machine{}}
}

// Get returns key's machine, a new one if the key has none.
func (ms *Machines) Get(key record.Key) *Machine {
	m := ms.m[key]
	if m == nil {
		m = newMachine(ms.spec, &ms.fx)
		ms.m[key] = m
	}
	return m
}

// Stepped re-indexes key's next timer after a step of its machine m and
// forgets the key if m is idle. It reports whether the key was forgotten.
func (ms *Machines) Stepped(key record.Key, m *Machine) bool {
	ts, ok := m.NextTimer()
	ms.idx.Set(key, ts, ok)
	if m.Idle() {
		delete(ms.m, key)
		return true
	}
	return false
}

// FireNext fires the earliest due timer of any key at watermark wm: its
// key's machine advances to wm, limited to that timer, appending outputs
// and late elements. ok is false when no timer at or below wm is left;
// forgotten reports that the key went idle and was dropped.
func (ms *Machines) FireNext(wm int64, outs []record.Output, late []joins.Late) (key record.Key, o []record.Output, l []joins.Late, forgotten, ok bool) {
	for {
		key, ts, ok := ms.idx.Due(wm)
		if !ok {
			return "", outs, late, false, false
		}
		m := ms.m[key]
		if m == nil { // cannot happen: a key with a timer keeps its machine
			ms.idx.Set(key, 0, false)
			continue
		}
		outs, late = m.Advance(wm, ts, outs, late)
		return key, outs, late, ms.Stepped(key, m), true
	}
}

// Len is the number of keys held.
func (ms *Machines) Len() int { return len(ms.m) }

// Timers is the number of keys with a pending timer.
func (ms *Machines) Timers() int { return ms.idx.tm.Len() }
