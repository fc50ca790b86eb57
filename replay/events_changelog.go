package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

type pendingRetract struct {
	line int
	row  record.Row
	ts   int64
}

// change applies an input of a cdc join.
func (r *eventsRun) change(n int, side record.Side, ev eventLine) error {
	if ev.key != "" || ev.null {
		return errors.New("key: not for a cdc join (the key is the join_on column of the rows)")
	}
	row := func(raw json.RawMessage, part string) (record.Row, error) {
		if raw == nil {
			return nil, nil
		}
		var m record.Row
		if err := decodeStrict(raw, &m); err != nil || m == nil {
			return nil, fmt.Errorf("%s: want a JSON object", part)
		}
		ref := strconv.Itoa(n) + "/" + part[:1]
		r.refs[ref] = raw
		m[refCol] = ref
		return m, nil
	}
	value := ev.value
	if value != nil && (len(value) == 0 || value[0] != '{') {
		return errors.New("value: a cdc row must be a JSON object")
	}
	before, after := ev.before, ev.after
	switch ev.op {
	case "+I", "+U":
		if after == nil {
			after = value
		}
	case "-U", "-D":
		if before == nil {
			before = value
		}
	case "c", "r", "u", "d":
		if value != nil {
			return errors.New(`value: a Debezium-style change (op c, r, u, d) carries before and after`)
		}
	case "":
		return errors.New("op: missing (a cdc input needs c, r, u, d or +I, -U, +U, -D)")
	default:
		return fmt.Errorf("op: %q: want c, r, u, d or +I, -U, +U, -D", ev.op)
	}
	b, err := row(before, "before")
	if err != nil {
		return err
	}
	a, err := row(after, "after")
	if err != nil {
		return err
	}
	pos := record.Position{Source: Source, Offset: int64(n)}
	c := record.Change{Pos: pos, TsMs: ev.ts}
	if ev.hasTsMs {
		c.TsMs = ev.tsMs
	}
	switch ev.op {
	case "c", "r", "u", "d":
		c.Op = record.Op(ev.op[0])
		c.Before, c.After = b, a
		if c.Op == record.OpCreate || c.Op == record.OpRead {
			c.Before = nil
		}
		if c.Op == record.OpDelete {
			c.After = nil
		}
	case "+I":
		c.Op, c.After = record.OpCreate, a
	case "+U":
		c.Op, c.After = record.OpUpdate, a
		if p := r.pending[side]; p != nil && r.samePK(side, p.row, a) {
			c.Before = p.row // -U then +U of one row: an update
			r.pending[side] = nil
		}
	case "-D":
		c.Op, c.Before = record.OpDelete, b
	}
	// A -U no +U of the same row followed is a delete, applied first.
	if err := r.flushPending(side); err != nil {
		return err
	}
	if ev.op == "-U" {
		if b == nil {
			return errors.New("before: a -U needs the row it retracts (before or value)")
		}
		r.pending[side] = &pendingRetract{line: n, row: b, ts: c.TsMs}
		return nil
	}
	switch {
	case c.Op != record.OpDelete && c.After == nil:
		return fmt.Errorf("after: missing (op %q needs the new row)", ev.op)
	case c.Op == record.OpDelete && c.Before == nil:
		return fmt.Errorf("before: missing (op %q needs the deleted row)", ev.op)
	}
	return r.applyChange(n, side, c)
}

func (r *eventsRun) samePK(side record.Side, a, b record.Row) bool {
	if a == nil || b == nil {
		return false
	}
	pk := r.d.pkColumn(side)
	ka, okA := record.KeyOf(a[pk])
	kb, okB := record.KeyOf(b[pk])
	return okA && okB && ka == kb
}

// flushPending applies a side's -U that no +U followed as a delete.
func (r *eventsRun) flushPending(side record.Side) error {
	p := r.pending[side]
	if p == nil {
		return nil
	}
	r.pending[side] = nil
	c := record.Change{Op: record.OpDelete, Before: p.row, Pos: record.Position{Source: Source, Offset: int64(p.line)}, TsMs: p.ts}
	if err := r.applyChange(p.line, side, c); err != nil {
		return &LineError{Input: "input", Line: p.line, Err: err}
	}
	return nil
}

// changeRef is the input text of the row image a dropped change of line n
// names: its after, or a delete's before (nil when absent).
func (r *eventsRun) changeRef(n int, c record.Change) json.RawMessage {
	img, part := c.After, "a"
	if c.Op == record.OpDelete {
		img, part = c.Before, "b"
	}
	if img == nil {
		return nil
	}
	return r.refs[strconv.Itoa(n)+"/"+part]
}

// applyChange routes and applies one change; a change the join cannot
// route is dropped with its reason.
func (r *eventsRun) applyChange(n int, side record.Side, c record.Change) error {
	if _, err := r.d.route(side, c); err != nil {
		if errors.Is(err, joins.ErrUnmatched) {
			// A null join value of a side the join does not keep: it
			// matches nothing and is not emitted, as SQL has it.
			r.sum.Dropped++
			return r.writeLate(n, side, "null", 0, r.changeRef(n, c), c.Op.String(), DropNullKey)
		}
		var re *joins.RouteError
		if !errors.As(err, &re) {
			return err
		}
		r.sum.Dropped++
		return r.writeLate(n, side, "", 0, r.changeRef(n, c), c.Op.String(), string(re.Reason))
	}
	r.sum.Inputs++
	return r.d.applyChange(side, c)
}
