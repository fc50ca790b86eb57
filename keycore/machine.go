package keycore

import (
	"math"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/timers"
)

// MachineSpec says which join a key runs: the changelog join (CDC), the
// multi-way changelog join on one key (Multi) or an event-time join
// (NewTimed, which makes one key's machine). Exactly one is set.
type MachineSpec struct {
	CDC      *joins.CDCSpec
	Multi    *joins.MultiSpec
	NewTimed func() joins.Timed
}

// versioned reports whether side is a versioned table of a changelog join
// (joins.SideSpec.Versioned).
func (s *MachineSpec) versioned(side record.Side) bool {
	switch {
	case s.CDC == nil:
		return false
	case side == record.Left:
		return s.CDC.Left.Versioned
	case side == record.Right:
		return s.CDC.Right.Versioned
	}
	return false
}

// pkColumn is the primary-key column of side's rows in a changelog join.
func (s *MachineSpec) pkColumn(side record.Side) string {
	switch {
	case s.Multi != nil:
		if int(side) < len(s.Multi.Tables) {
			return s.Multi.Tables[side].PK
		}
		return ""
	case side == record.Right:
		return s.CDC.Right.PK
	}
	return s.CDC.Left.PK
}

// sideName names side in the per-row dedup positions: left or right, a
// multi-way join's table name.
func (s *MachineSpec) sideName(side record.Side) string {
	if s.Multi != nil && int(side) < len(s.Multi.Tables) {
		return s.Multi.Tables[side].Name
	}
	return side.String()
}

// Machine is one key's join state machine behind one interface: the
// changelog join, or an event-time join with the key's pending timers and
// the watermark it has advanced to. It is the effects loop every driver of
// a join shares (the key actor through Core, replay, the Go API, the
// benchmarks): an element first advances the watermark that preceded it,
// firing due timers in timestamp order, then applies; timers a step sets or
// deletes go to the key's timers.Set. Not safe for concurrent use.
type Machine struct {
	cdc    *joins.CDC
	multi  *joins.Multi
	timed  joins.Timed
	timers timers.Set
	wm     int64
	// firing: the watermark rose to wm and its due timers may not all have
	// fired yet (an Advance with a limit below wm).
	firing bool
	fx     *joins.Effects // event-time joins' scratch; shared by the machines of one Machines
}

// NewMachine returns an empty machine for spec.
func NewMachine(spec MachineSpec) *Machine {
	return newMachine(spec, nil)
}

// newMachine returns an empty machine for spec; an event-time one takes
// fx as its scratch (nil: its own). A changelog join has no effects, so
// its machine has no scratch (≈ 100 B less per live key).
func newMachine(spec MachineSpec, fx *joins.Effects) *Machine {
	m := &Machine{wm: math.MinInt64}
	switch {
	case spec.NewTimed != nil:
		if fx == nil {
			fx = &joins.Effects{}
		}
		m.timed, m.fx = spec.NewTimed(), fx
	case spec.Multi != nil:
		m.multi = joins.NewMulti(spec.Multi)
	default:
		m.cdc = joins.NewCDC(spec.CDC)
	}
	return m
}

// EventTime reports whether the machine is an event-time join.
func (m *Machine) EventTime() bool { return m.timed != nil }

// CDC is the changelog join, or nil for an event-time or multi-way join.
func (m *Machine) CDC() *joins.CDC { return m.cdc }

// Multi is the multi-way changelog join, or nil for another join.
func (m *Machine) Multi() *joins.Multi { return m.multi }

// Timed is the event-time join, or nil for the changelog join.
func (m *Machine) Timed() joins.Timed { return m.timed }

// Watermark is the watermark the machine has advanced to (math.MinInt64
// before any; always that for the changelog join).
func (m *Machine) Watermark() int64 { return m.wm }

// Timers are the pending event-time timers, ascending; read-only.
func (m *Machine) Timers() []int64 { return m.timers.Timestamps() }

// NextTimer is the earliest pending timer.
func (m *Machine) NextTimer() (int64, bool) { return m.timers.Next() }

// OnEvent applies one change of the changelog (two- or multi-way) join and
// appends its outputs to outs.
func (m *Machine) OnEvent(e record.Event, outs []record.Output) []record.Output {
	if m.multi != nil {
		return m.multi.OnEvent(e, outs)
	}
	return m.cdc.OnEvent(e, outs)
}

// OnElement applies one element of an event-time join: first the watermark
// wm that preceded it (firing due timers), then the element. Outputs are
// appended to outs and late elements to late.
func (m *Machine) OnElement(el joins.Element, wm int64, outs []record.Output, late []joins.Late) ([]record.Output, []joins.Late) {
	outs, late = m.Advance(wm, wm, outs, late)
	m.fx.Reset()
	m.timed.OnElement(el, m.wm, m.fx)
	return m.take(outs, late)
}

// Advance moves the watermark to wm and fires, in timestamp order, the due
// timers at or below min(wm, limit), timers those firings set included. A
// wm at or below the machine's fires nothing, unless an earlier Advance to
// that watermark had a limit below it: a limit lets a driver that
// interleaves many keys' timers in (time, key) order fire part of what is
// due, the rest on later calls with the same wm. A timer an element sets
// at or below the watermark fires on the next rise, as Flink does.
func (m *Machine) Advance(wm, limit int64, outs []record.Output, late []joins.Late) ([]record.Output, []joins.Late) {
	if wm > m.wm {
		m.wm, m.firing = wm, true
	}
	if !m.firing || m.timed == nil {
		return outs, late
	}
	upTo := min(m.wm, limit)
	for {
		ts, ok := m.timers.PopDue(upTo)
		if !ok {
			break
		}
		m.fx.Reset()
		m.timed.OnTimer(ts, m.wm, m.fx)
		outs, late = m.take(outs, late)
	}
	if limit >= m.wm {
		m.firing = false
	}
	return outs, late
}

// take applies a step's effects: outputs, timer changes and late inputs.
func (m *Machine) take(outs []record.Output, late []joins.Late) ([]record.Output, []joins.Late) {
	outs = append(outs, m.fx.Out...)
	for _, t := range m.fx.SetTimers {
		m.timers.Add(t)
	}
	for _, t := range m.fx.DelTimers {
		m.timers.Delete(t)
	}
	return outs, append(late, m.fx.Late...)
}

// Empty reports whether the join holds no state (timers aside).
func (m *Machine) Empty() bool {
	if m.timed != nil {
		return m.timed.Empty()
	}
	if m.multi != nil {
		return m.multi.Empty()
	}
	return m.cdc.Empty()
}

// Idle reports whether the machine holds nothing at all: no join state and
// no pending timer. A driver may forget an idle machine.
func (m *Machine) Idle() bool { return m.Empty() && m.timers.Len() == 0 }

// CachedJSON is the bytes of JSON the join caches for its snapshots
// (joins.JSONCacher; 0 for a join that does not say).
func (m *Machine) CachedJSON() int {
	if c, ok := m.timed.(joins.JSONCacher); ok {
		return c.CachedJSON()
	}
	return 0
}

// Snapshot encodes the join's state (versioned, deterministic; timers and
// watermark are not in it: Core persists them beside it).
func (m *Machine) Snapshot() []byte {
	if m.timed != nil {
		return m.timed.Snapshot()
	}
	if m.multi != nil {
		return m.multi.Snapshot()
	}
	return m.cdc.Snapshot()
}

// Restore replaces the join's state with a snapshot's.
func (m *Machine) Restore(b []byte) error {
	if m.timed != nil {
		return m.timed.Restore(b)
	}
	if m.multi != nil {
		return m.multi.Restore(b)
	}
	return m.cdc.Restore(b)
}

// restoreTimers replaces the timers and the watermark (ascending, unique
// timers; wm nil leaves the watermark as it is).
func (m *Machine) restoreTimers(ts []int64, wm *int64) {
	m.timers = timers.SetOf(ts)
	if wm != nil {
		m.wm = *wm
	}
}
