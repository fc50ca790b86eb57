package replay

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// Output op modes of RunEvents (Options.Ops).
const (
	// OpsAuto writes "op" only for joins whose output is a changelog (cdc).
	// Event-time joins emit inserts only, as Flink's DataStream window and
	// interval joins and its SQL interval and temporal joins do.
	OpsAuto = "auto"
	// OpsAlways writes "op" on every output ("+I" for event-time joins).
	OpsAlways = "always"
)

// Options are RunEvents' settings beyond the Job.
type Options struct {
	// Late receives one JSON line per late or dropped input:
	// {"side","key","ts","value"[,"op"],"line","reason"}. Nil discards them;
	// they are counted either way. Late may be the output writer itself:
	// late lines then come in order among the outputs.
	Late io.Writer
	// EndOfInput, when not empty, overrides Job.EndOfInput.
	EndOfInput string
	// Ops is OpsAuto (when empty) or OpsAlways.
	Ops string
}

// EventsSummary counts what RunEvents did.
type EventsSummary struct {
	Lines      int `json:"lines"`      // input lines read
	Inputs     int `json:"inputs"`     // elements and changes applied to the join
	Watermarks int `json:"watermarks"` // watermark lines
	Outputs    int `json:"outputs"`    // output lines written
	Late       int `json:"late"`       // inputs the join refused as late
	Dropped    int `json:"dropped"`    // inputs dropped before the join (null key, unroutable change)
	Keys       int `json:"keys"`       // distinct join keys seen
	// Watermark is the watermark at the end (after the end-of-input flush):
	// null before any, "+inf" after a flush.
	Watermark any `json:"watermark"`
}

// Reasons an input is dropped before it reaches the join (late lines).
const (
	DropNullKey = "null-key" // the key is null: it equals no key, as SQL's NULL
)

// refCol is the column that links a row the join keeps to the input text
// it came from (valueRefs). Event-time rows hold nothing else; cdc rows are
// the input's objects plus this column, which no output shows.
const refCol = "\x00ref"

// RunEvents replays the events input in, one JSON object per line in
// arrival order (see the package doc), through job's join, and writes one
// JSON line per output to out:
//
//	{"left":V|null,"right":V|null,"ts":T|null[,"op":"+I|-U|+U|-D"]}
//
// (a left semi join, mode semi, writes {"left":V,"ts":T}: no right).
// V is the matched input's value exactly as it was given (white space
// removed); for a cdc join the row image (after, or before for a
// retraction of a row never given as an after). null stands for the missing
// side of an outer join's row. ts is the output's event time, null for a
// cdc join. op: see Options.Ops.
//
// Late elements go to opts.Late with the join's reason; inputs with a null
// key, and cdc changes the join cannot route (e.g. a null join column), go
// there too with their reason, and are counted as dropped. At the end of
// the input the watermark moves to +infinity unless the job or opts say
// hold.
//
// A line that is not valid input, an unknown side, or a field the join
// cannot use stops the replay with a *LineError naming the line; what was
// written before stays written. RunEvents is deterministic: no clock, no
// goroutines, no randomness.
func RunEvents(jb *Job, in io.Reader, out io.Writer, opts Options) (EventsSummary, error) {
	if jb == nil {
		return EventsSummary{}, errors.New("replay: nil job")
	}
	end := jb.EndOfInput
	if opts.EndOfInput != "" {
		end = opts.EndOfInput
	}
	if err := checkEnd(end, "end of input"); err != nil {
		return EventsSummary{}, err
	}
	switch opts.Ops {
	case "", OpsAuto, OpsAlways:
	default:
		return EventsSummary{}, fmt.Errorf("replay: ops: must be auto or always (got %q)", opts.Ops)
	}
	b := jb.machine
	if b == nil { // a Job made in Go rather than by ParseJob
		spec := jb.Spec
		spec.Project = nil
		var err error
		if b, err = spec.build(); err != nil {
			return EventsSummary{}, err
		}
	}
	d := newDriver(b)
	bw := bufio.NewWriter(out)
	r := &eventsRun{d: d, out: bw, refs: map[string]json.RawMessage{}, pending: map[record.Side]*pendingRetract{},
		ops: opts.Ops == OpsAlways || !d.join.eventTime() || d.join.changelogProbe()}
	switch {
	case opts.Late == nil:
	case opts.Late == out:
		r.late = bw // one stream: late lines in order among the outputs
	default:
		r.late = bufio.NewWriter(opts.Late)
	}
	d.w = bw
	d.emit, d.emitLate = r.output, r.lateElem
	flush := func() {
		_ = bw.Flush()
		if r.late != nil {
			_ = r.late.Flush()
		}
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	for sc.Scan() {
		r.sum.Lines++
		if err := r.line(r.sum.Lines, sc.Bytes()); err != nil {
			flush()
			return r.summary(), err
		}
	}
	if err := sc.Err(); err != nil {
		flush()
		return r.summary(), &LineError{Input: "input", Line: r.sum.Lines + 1, Err: err}
	}
	if err := r.finish(end != EndHold); err != nil {
		flush()
		return r.summary(), err
	}
	if err := bw.Flush(); err != nil {
		return r.summary(), err
	}
	if r.late != nil {
		if err := r.late.Flush(); err != nil {
			return r.summary(), fmt.Errorf("replay: late: %w", err)
		}
	}
	return r.summary(), nil
}

// eventsRun is one RunEvents call: the driver plus the input texts its rows
// refer to.
type eventsRun struct {
	d    *driver
	out  *bufio.Writer
	late *bufio.Writer
	ops  bool
	sum  EventsSummary
	buf  []byte
	// refs holds the text of every value a row may still show, by ref:
	// "n" (line n's value), "n/a" and "n/b" (its after and before).
	refs map[string]json.RawMessage
	// pending is a cdc side's -U waiting for its +U (by side).
	pending map[record.Side]*pendingRetract
}

func (r *eventsRun) summary() EventsSummary {
	s := r.sum
	s.Keys = len(r.d.seen)
	s.Late = r.d.sum.Late
	switch wm := r.d.wm; wm {
	case math.MinInt64:
		s.Watermark = nil
	case math.MaxInt64:
		s.Watermark = "+inf"
	default:
		s.Watermark = wm
	}
	if !r.d.join.eventTime() {
		s.Watermark = nil
	}
	return s
}

func (r *eventsRun) line(n int, b []byte) error {
	ev, err := decodeEventLine(b)
	if err == nil {
		err = r.apply(n, ev)
	}
	if err != nil {
		var le *LineError
		if errors.As(err, &le) {
			le.Input = "input"
			return err
		}
		if r.d.werr != nil {
			return err
		}
		return &LineError{Input: "input", Line: n, Err: err}
	}
	return nil
}

func (r *eventsRun) side(name string) (record.Side, error) {
	s := r.d.join
	if r.d.b.multi != nil {
		if side, ok := r.d.sideOf(name); ok {
			return side, nil
		}
		return 0, fmt.Errorf("side: unknown table %q (it is %s)", name, r.d.sideNames())
	}
	switch name {
	case "left", s.Left.Name:
		return record.Left, nil
	case "right", s.Right.Name:
		return record.Right, nil
	}
	return 0, fmt.Errorf("side: unknown side %q (want left, right, %q or %q)", name, s.Left.Name, s.Right.Name)
}

func (r *eventsRun) apply(n int, ev eventLine) error {
	switch ev.kind {
	case evSkip:
		return nil
	case evWatermark:
		r.sum.Watermarks++
		if !r.d.join.eventTime() {
			return nil // a changelog join has no event time
		}
		return r.d.watermark(ev.wm)
	case evSnapshot:
		// A pending -U is the replay's, not the join's: it stays pending.
		return r.d.snapshot()
	}
	side, err := r.side(ev.side)
	if err != nil {
		return err
	}
	if r.d.join.eventTime() {
		return r.element(n, side, ev)
	}
	return r.change(n, side, ev)
}

// element applies an input of an event-time join.
func (r *eventsRun) element(n int, side record.Side, ev eventLine) error {
	if ev.before != nil || ev.after != nil {
		return errors.New(`before/after: only for a cdc join (an element's payload is "value")`)
	}
	if ev.key == "" && !ev.null {
		return errors.New("key: missing")
	}
	if !ev.hasTs {
		return errors.New("ts: missing (an event-time join needs the event time, an integer of ms)")
	}
	del := false
	versioned := side == record.Right && r.d.join.temporal()
	probe := side == record.Left && r.d.join.changelogProbe()
	kind := record.Insert
	switch ev.op {
	case "", "+I":
	case "+U", "-U", "-D":
		switch {
		case versioned:
			del = ev.op != "+U"
		case probe:
			if ev.value == nil {
				return fmt.Errorf("value: a %s probe needs the row it changes", ev.op)
			}
		default:
			return fmt.Errorf("op: %q: only the versioned (right) side of a temporal join, and its probe (left) side with temporal: {semantics: flink}, take updates and deletes; this input is append-only (+I)", ev.op)
		}
		kind, _ = record.ParseKind(ev.op)
	default:
		return fmt.Errorf(`op: %q: want +I, +U, -U or -D (c, r, u, d are for a cdc join)`, ev.op)
	}
	pos := record.Position{Source: Source, Offset: int64(n)}
	ref := strconv.Itoa(n)
	kafka := r.d.join.temporal() && r.d.join.Temporal.Semantics == "kafka"
	key := record.Key(ev.key)
	if kafka {
		// Kafka Streams' KStream-KTable join: a stream record without a
		// value is skipped; a table record without one is a tombstone.
		isNull := ev.value == nil || string(ev.value) == "null"
		switch {
		case side == record.Left && isNull:
			r.sum.Dropped++
			return r.writeLate(n, side, nullText(ev), ev.ts, nil, ev.op, joins.LateNullValue)
		case side == record.Right && isNull:
			del = true
		case side == record.Left && ev.null && r.d.join.Mode == "left":
			// KIP-962: a left join emits a null-key record padded.
			key, ev.null = joins.NullKey, false
		}
	}
	if ev.null {
		r.sum.Dropped++
		return r.writeLate(n, side, "null", ev.ts, ev.value, ev.op, DropNullKey)
	}
	e := joins.Element{Side: side, Ts: ev.ts, Pos: pos, Kind: kind}
	if !del {
		v := ev.value
		if v == nil {
			v = json.RawMessage("null")
		}
		r.refs[ref] = v
		e.Row = r.d.b.eventRow(ref, v)
	}
	r.sum.Inputs++
	return r.d.feed(key, e)
}

// finish flushes pending retractions and, when flush, moves the watermark
// to the end of time.
func (r *eventsRun) finish(flush bool) error {
	sides := make([]record.Side, 0, len(r.pending))
	for side := range r.pending {
		sides = append(sides, side)
	}
	slices.Sort(sides)
	for _, side := range sides {
		if err := r.flushPending(side); err != nil {
			return err
		}
	}
	if flush && r.d.join.eventTime() {
		if err := r.d.watermark(math.MaxInt64); err != nil {
			return err
		}
	}
	return nil
}

// value returns the input text a row of an output shows.
func (r *eventsRun) value(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("null"), nil
	}
	row, ok := v.(record.Row)
	if !ok {
		if m, isMap := v.(map[string]any); isMap {
			row = m
		}
	}
	ref, _ := row[refCol].(string)
	raw, ok := r.refs[ref]
	if !ok {
		return nil, fmt.Errorf("replay: internal: an output row refers to no input (%v)", v)
	}
	return raw, nil
}

// output writes one output line.
func (r *eventsRun) output(o record.Output) error {
	if r.d.b.multi != nil {
		return r.multiOutput(o)
	}
	s := r.d.join
	l, err := r.value(o.Row[s.Left.Name])
	if err != nil {
		return err
	}
	b := append(r.buf[:0], `{"left":`...)
	b = append(b, l...)
	if !s.semi() {
		// A left semi join's output is the left row alone: no right.
		rt, err := r.value(o.Row[s.Right.Name])
		if err != nil {
			return err
		}
		b = append(b, `,"right":`...)
		b = append(b, rt...)
	}
	b = append(b, `,"ts":`...)
	if s.timedOutputs() {
		b = strconv.AppendInt(b, o.Ts, 10)
	} else {
		b = append(b, "null"...)
	}
	if r.ops {
		b = append(b, `,"op":"`...)
		b = append(b, o.Kind.String()...)
		b = append(b, '"')
	}
	b = append(b, "}\n"...)
	r.buf = b
	r.sum.Outputs++
	if _, err := r.out.Write(b); err != nil {
		r.d.werr = fmt.Errorf("replay: write: %w", err)
		return r.d.werr
	}
	return nil
}
