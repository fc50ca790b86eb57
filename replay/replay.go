package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// Source is the source name of every replayed input's Position: line n of
// the script is at replay/0@n, so output ids are deterministic.
const Source = "replay"

// MaxLine is the longest script line Run reads (bytes).
const MaxLine = 16 << 20

// Summary counts what a replay did.
type Summary struct {
	Lines      int `json:"lines"`      // script lines read
	Inputs     int `json:"inputs"`     // rows and changes applied
	Tombstones int `json:"tombstones"` // Debezium tombstones skipped (cdc)
	Watermarks int `json:"watermarks"` // watermark lines
	Snapshots  int `json:"snapshots"`  // snapshot lines
	Outputs    int `json:"outputs"`    // output lines written
	Late       int `json:"late"`       // late lines written
	Keys       int `json:"keys"`       // distinct join keys seen
	// Unmatched counts cdc changes of a row whose join value is null, of a
	// side the join does not keep: per SQL it matches nothing and is not
	// emitted (joins.ErrUnmatched).
	Unmatched int `json:"unmatched,omitempty"`
}

// Run replays script, one JSON object per line in arrival order, through the
// join spec describes, and writes one line per output and per late element
// to out, in the order the join makes them. It validates spec first.
//
// Script lines (see the package doc): {"side":name,"row":{…}} (event-time
// joins; {"side":name,"op":"d","row":{…}} deletes a temporal join's version
// at the row's time), a Debezium envelope with "side" (cdc),
// {"watermark":ts}, {"snapshot":true}, {"comment":"…"}; blank lines are
// skipped. Line n's input is at Position{Source: "replay", Offset: n}.
//
// Output lines: a changelog line (formats/changelog) {"id","op","pk","row"},
// with "ts" added for event-time joins, and
// {"late":{"side","key","ts","pos","row"},"reason":…} for late elements.
//
// A line Run cannot parse or apply stops the replay with a *LineError
// naming it; what was written before stays written. Write errors are
// returned as they are. Run is deterministic: no clock, no goroutines, no
// randomness.
func Run(spec *Spec, script io.Reader, out io.Writer) (Summary, error) {
	b, err := spec.build()
	if err != nil {
		return Summary{}, err
	}
	d := newDriver(b)
	bw := bufio.NewWriter(out)
	d.w = bw
	sc := bufio.NewScanner(script)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	for sc.Scan() {
		d.sum.Lines++
		if err := d.line(d.sum.Lines, sc.Bytes()); err != nil {
			_ = bw.Flush()
			return d.summary(), err
		}
	}
	if err := sc.Err(); err != nil {
		_ = bw.Flush()
		return d.summary(), &LineError{Line: d.sum.Lines + 1, Err: err}
	}
	return d.summary(), bw.Flush()
}

// driver is the key actors of every key at once: it keys inputs and drives
// one keycore.Core per key — the per-key protocol a key actor runs, with
// every write durable at once and every input committed once the next one
// comes — plus the index of the keys' next timers and the watermark.
type driver struct {
	join  *join // b.join
	b     *built
	cfg   *keycore.Config
	cores map[record.Key]*keycore.Core
	idx   keycore.Index // each key's next timer
	wm    int64
	seen  map[record.Key]struct{}
	w     io.Writer
	werr  error
	sum   Summary
	// emit and emitLate write an output and a late element; Run writes
	// changelog lines (output, late), RunEvents its own line format.
	emit     func(o record.Output) error
	emitLate func(key record.Key, l joins.Late) error
}

// newDriver drives join b.
func newDriver(b *built) *driver {
	cfg := &keycore.Config{Machine: keycore.MachineSpec{CDC: b.cdc, Multi: b.multi}, NoSeq: true}
	if b.cdc == nil && b.multi == nil {
		cfg.Machine.NewTimed = b.fresh
	}
	d := &driver{join: &b.join, b: b, cfg: cfg, cores: map[record.Key]*keycore.Core{},
		wm: math.MinInt64, seen: map[record.Key]struct{}{}}
	d.emit, d.emitLate = d.output, d.late
	return d
}

func (d *driver) summary() Summary {
	s := d.sum
	s.Keys = len(d.seen)
	return s
}

// line applies script line n.
func (d *driver) line(n int, b []byte) error {
	st, err := parseLine(b, !d.join.eventTime())
	if err == nil {
		err = d.apply(n, st)
	}
	if err != nil {
		var le *LineError
		if errors.As(err, &le) || d.werr != nil {
			return err
		}
		return &LineError{Line: n, Err: err}
	}
	return nil
}

func (d *driver) apply(n int, st step) error {
	pos := record.Position{Source: Source, Offset: int64(n)}
	switch st.kind {
	case stepWatermark:
		d.sum.Watermarks++
		if !d.join.eventTime() {
			return errors.New("watermark: a cdc join has no event time")
		}
		return d.watermark(st.wm)
	case stepSnapshot:
		d.sum.Snapshots++
		return d.snapshot()
	case stepInput:
		side, ok := d.sideOf(st.side)
		if !ok {
			return fmt.Errorf("side: %q is %s", st.side, d.sideNames())
		}
		if d.join.eventTime() {
			return d.element(side, st, pos)
		}
		return d.change(side, st.raw, pos)
	}
	return nil
}

func (d *driver) side(name string) (record.Side, bool) {
	switch name {
	case d.join.Left.Name:
		return record.Left, true
	case d.join.Right.Name:
		return record.Right, true
	}
	return 0, false
}

// change applies one Debezium change of a cdc join.
func (d *driver) change(side record.Side, raw []byte, pos record.Position) error {
	c, err := debezium.Decode(raw, pos)
	if errors.Is(err, debezium.ErrTombstone) {
		d.sum.Tombstones++
		return nil
	}
	if err != nil {
		return err
	}
	return d.applyChange(side, c)
}

// applyChange routes one decoded change of a cdc join and applies it.
func (d *driver) applyChange(side record.Side, c record.Change) error {
	evs, err := d.route(side, c)
	if errors.Is(err, joins.ErrUnmatched) {
		d.sum.Unmatched++
		return nil
	}
	if err != nil {
		return err
	}
	d.sum.Inputs++
	for _, e := range evs {
		d.seen[e.Key] = struct{}{}
		ev := keycore.Event{Side: e.Side, Op: e.Op, Before: e.Before, After: e.After, Pos: e.Pos, Seq: e.Seq, Ts: e.Ts}
		if err := d.step(e.Key, &keycore.Request{Events: []keycore.Event{ev}}); err != nil {
			return err
		}
	}
	return nil
}

// element applies one row of an event-time join.
func (d *driver) element(side record.Side, st step, pos record.Position) error {
	ss := d.join.Left
	if side == record.Right {
		ss = d.join.Right
	}
	if st.del && (side != record.Right || !d.join.temporal()) {
		return errors.New(`op: "d" deletes a version: only on the right side of a temporal join`)
	}
	v, ok := st.row[ss.Key]
	if !ok {
		return fmt.Errorf("row: no key column %q", ss.Key)
	}
	key, ok := record.KeyOf(v)
	if !ok || v == nil {
		return fmt.Errorf("row: key column %q is not a scalar", ss.Key)
	}
	tv, ok := st.row[ss.Ts]
	if !ok {
		return fmt.Errorf("row: no time column %q", ss.Ts)
	}
	ts, err := timeOf(tv)
	if err != nil {
		return fmt.Errorf("row: time column %q: %v", ss.Ts, err)
	}
	e := joins.Element{Side: side, Ts: ts, Row: st.row, Pos: pos}
	if st.del {
		e.Row = nil
	}
	return d.feed(key, e)
}

// feed applies element e of an event-time join at key (a nil Row: a
// temporal join's version delete).
func (d *driver) feed(key record.Key, e joins.Element) error {
	d.sum.Inputs++
	d.seen[key] = struct{}{}
	ev := keycore.Event{Side: e.Side, After: e.Row, Pos: e.Pos, Ts: e.Ts, Watermark: d.wm, Kind: e.Kind}
	return d.step(key, &keycore.Request{Events: []keycore.Event{ev}})
}

// step runs req on key's core: the inputs it names are committed (their
// outbox entries dropped) with the key's next request, as a sender whose
// sinks took the outputs would; the write is durable at once. It emits the
// outputs and late elements, re-indexes the key's next timer, and forgets
// a key that holds nothing.
func (d *driver) step(key record.Key, req *keycore.Request) error {
	c := d.cores[key]
	if c == nil {
		c = keycore.New(d.cfg, key)
		c.Init()
		d.cores[key] = c
	}
	req.Committed = c.Offsets().Map()
	req.Committed[keycore.FirePart] = d.wm
	r := c.Step(req, 0)
	if r.Err != nil {
		return r.Err
	}
	if r.Write != nil {
		c.Durable()
	}
	for _, o := range r.Outputs {
		if err := d.emit(o); err != nil {
			return err
		}
	}
	for _, l := range r.Late {
		if err := d.emitLate(key, l); err != nil {
			return err
		}
	}
	d.index(key, c)
	return nil
}

// index records key's next timer and forgets an idle key.
func (d *driver) index(key record.Key, c *keycore.Core) {
	ts, ok := c.Machine().NextTimer()
	d.idx.Set(key, ts, ok)
	if c.Machine().Idle() {
		delete(d.cores, key)
	}
}

// watermark advances the watermark to wm (a lower one changes nothing) and
// fires every due timer in (time, key) order, timers set while firing
// included, before any later line sees the new watermark.
func (d *driver) watermark(wm int64) error {
	if wm <= d.wm {
		return nil
	}
	d.wm = wm
	for {
		key, ts, ok := d.idx.Due(wm)
		if !ok {
			return nil
		}
		req := &keycore.Request{Fire: true, Watermark: wm, Limited: true, FireLimit: ts}
		if err := d.step(key, req); err != nil {
			return err
		}
	}
}

// snapshot replaces every key's core by one restored from the state a key
// actor would persist, checking that the restored join snapshots to the
// same bytes.
func (d *driver) snapshot() error {
	for _, k := range sortedKeys(d.cores) {
		c := d.cores[k]
		state, err := c.Encode()
		if err != nil {
			return fmt.Errorf("snapshot: key %q: %w", k, err)
		}
		again := keycore.New(d.cfg, k)
		if err := again.Restore(c.Offsets(), state); err != nil {
			return fmt.Errorf("snapshot: key %q: %w", k, err)
		}
		was, is := c.Machine().Snapshot(), again.Machine().Snapshot()
		if !bytes.Equal(was, is) {
			return fmt.Errorf("snapshot: key %q: restored state snapshots differently:\n%q\n%q", k, was, is)
		}
		d.cores[k] = again
	}
	return nil
}

func sortedKeys[V any](m map[record.Key]V) []record.Key {
	ks := make([]record.Key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// output writes one output line: the changelog line, plus "ts" for an
// event-time join.
func (d *driver) output(o record.Output) error {
	ts := o.Ts
	o.Ts = 0 // written below, for event-time joins even when 0
	line, _, err := changelog.Changelog.Marshal(o)
	if err != nil {
		return err
	}
	if d.join.timedOutputs() {
		line = append(line[:len(line)-1], `,"ts":`...)
		line = strconv.AppendInt(line, ts, 10)
		line = append(line, '}')
	}
	d.sum.Outputs++
	return d.write(line)
}

type lateElem struct {
	Side string     `json:"side"`
	Key  record.Key `json:"key"`
	Ts   int64      `json:"ts"`
	Pos  string     `json:"pos"`
	Row  record.Row `json:"row"`
}

type lateLine struct {
	Late   lateElem `json:"late"`
	Reason string   `json:"reason"`
}

func (d *driver) late(key record.Key, l joins.Late) error {
	name := d.join.Left.Name
	if l.Element.Side == record.Right {
		name = d.join.Right.Name
	}
	line, err := marshal(lateLine{Late: lateElem{Side: name, Key: key, Ts: l.Element.Ts, Pos: l.Element.Pos.String(),
		Row: l.Element.Row}, Reason: l.Reason})
	if err != nil {
		return err
	}
	d.sum.Late++
	return d.write(line)
}

func marshal(v any) ([]byte, error) { return jsonenc.Marshal(v) }

func (d *driver) write(line []byte) error {
	line = append(line, '\n')
	if _, err := d.w.Write(line); err != nil {
		d.werr = fmt.Errorf("replay: write: %w", err)
		return d.werr
	}
	return nil
}
