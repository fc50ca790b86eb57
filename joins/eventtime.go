package joins

import "github.com/joinery/joinery/record"

// Element is one input of an event-time join: a row of one side at an event
// time, with the source position it came from (which output ids derive from).
type Element struct {
	Side record.Side
	Ts   int64 // event time, ms
	Row  record.Row
	Pos  record.Position
	// Kind is the row kind of a changelog input: the probe side of a
	// temporal join with Flink's semantics keeps it on its outputs, and a
	// versioned side's UpdateBefore or Delete ends a version. Append-only
	// inputs leave it Insert (the zero value).
	Kind record.Kind
}

// Late is an element that arrived after the watermark made it useless, with
// the reason. Joins never drop late data silently: they report it here and
// the caller counts it and, when asked, writes it to a late-data output.
type Late struct {
	Element Element
	Reason  string
}

// Effects is what one step of an event-time join produced. The caller
// (the key actor) emits Out, registers SetTimers and deletes DelTimers in its
// timer service, and routes Late. A join appends; the caller resets.
type Effects struct {
	Out       []record.Output
	SetTimers []int64
	DelTimers []int64
	Late      []Late
}

// Reset empties e for reuse, keeping its storage.
func (e *Effects) Reset() {
	e.Out, e.SetTimers, e.DelTimers, e.Late = e.Out[:0], e.SetTimers[:0], e.DelTimers[:0], e.Late[:0]
}

// Timed is the per-key state machine of an event-time join (window,
// coGroup, interval, time-bounded outer, unbounded, temporal). It is driven
// by one key actor: never concurrently, never reading the clock. watermark
// is the current combined watermark of the job's inputs (math.MinInt64
// before any).
type Timed interface {
	// OnElement applies one element.
	OnElement(e Element, watermark int64, fx *Effects)
	// OnTimer fires the event-time timer ts, registered through
	// Effects.SetTimers; the caller fires timers in timestamp order once the
	// watermark reaches them (watermark >= ts).
	OnTimer(ts int64, watermark int64, fx *Effects)
	// Snapshot encodes the state (versioned, deterministic); Restore replaces
	// the state with a snapshot's and leaves it unchanged on error.
	Snapshot() []byte
	Restore(b []byte) error
	// Empty reports whether the key holds no state (it may be deleted).
	Empty() bool
}
