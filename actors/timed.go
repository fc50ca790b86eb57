package actors

import (
	"slices"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// firePart is the outbox partition of outputs made by advancing the
// watermark (timers firing) rather than by an input; its offsets are
// watermarks. Senders report the last completed fire watermark under this
// name in Apply.committed.
const firePart = "~watermark"

// FirePart is the name under which a sender reports, in Apply.committed, the
// watermark of its last completed fire.
const FirePart = firePart

// applyTimed applies one input of an event-time join: first the watermark
// that preceded it (firing due timers), then the element itself.
func (a *keyActor) applyTimed(pe *keypb.Event, row record.Row, outs []record.Output, reply *keypb.Applied) []record.Output {
	outs = a.advance(pe.Watermark, outs, reply)
	el := joins.Element{Side: record.Side(pe.Side), Ts: pe.Ts, Row: row,
		Pos: record.Position{Source: pe.Source, Partition: pe.Partition, Offset: pe.Offset}}
	a.fx.Reset()
	a.timed.OnElement(el, a.wm, &a.fx)
	return a.take(outs, reply)
}

// advance moves the key's watermark to wm and fires, in timestamp order, the
// timers it makes due (including timers those firings set at or below wm).
func (a *keyActor) advance(wm int64, outs []record.Output, reply *keypb.Applied) []record.Output {
	if wm <= a.wm {
		return outs
	}
	a.wm = wm
	for len(a.timers) > 0 && a.timers[0] <= wm {
		ts := a.timers[0]
		a.timers = a.timers[1:]
		a.fx.Reset()
		a.timed.OnTimer(ts, wm, &a.fx)
		outs = a.take(outs, reply)
	}
	return outs
}

// take applies a step's effects: outputs, timer changes and late inputs.
func (a *keyActor) take(outs []record.Output, reply *keypb.Applied) []record.Output {
	outs = append(outs, a.fx.Out...)
	for _, t := range a.fx.SetTimers {
		if i, found := slices.BinarySearch(a.timers, t); !found {
			a.timers = slices.Insert(a.timers, i, t)
		}
	}
	for _, t := range a.fx.DelTimers {
		if i, found := slices.BinarySearch(a.timers, t); found {
			a.timers = slices.Delete(a.timers, i, i+1)
		}
	}
	for _, l := range a.fx.Late {
		pe, err := EncodeEvent(record.Event{Key: a.key, Side: l.Element.Side, Op: record.OpCreate, After: l.Element.Row, Pos: l.Element.Pos})
		if err != nil {
			continue
		}
		pe.Ts = l.Element.Ts
		reply.Late = append(reply.Late, &keypb.Late{Event: pe, Reason: l.Reason})
	}
	return outs
}

func (a *keyActor) machineEmpty() bool {
	if a.timed != nil {
		return a.timed.Empty()
	}
	return a.join.Empty()
}

func (a *keyActor) machineSnapshot() []byte {
	if a.timed != nil {
		return a.timed.Snapshot()
	}
	return a.join.Snapshot()
}

func (a *keyActor) machineRestore(b []byte) error {
	if a.timed != nil {
		return a.timed.Restore(b)
	}
	return a.join.Restore(b)
}

// nextTimer is the key's earliest pending timer.
func (a *keyActor) nextTimer() (int64, bool) {
	if len(a.timers) == 0 {
		return 0, false
	}
	return a.timers[0], true
}
