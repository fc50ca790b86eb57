package keycore

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/internal/rowcodec"
	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// Incremental writes (Config.Parts). A key's state is written as a base
// and named parts (persistence.Snapshot.Parts), and a Write after the
// first carries only what changed since the Write before it (Write.Delta):
//
//	base    keyState version 1 without outbox and Debezium positions: timers,
//	        watermark, output sequence, and the join snapshot unless its rows
//	        are parts (below)
//	l       the changelog join's left row (value state): a compact row
//	        (internal/rowcodec), or JSON for a row holding a value the
//	        compact encoding does not cover
//	l:<pk>  a left row by primary key (key form), as l, when the left
//	        side holds many rows per key (joins.CDCSpec.LeftMany)
//	r:<pk>  a right row (map state) by primary key (key form), as l
//	o:<id>  an outbox entry (its JSON as in version 1), id in 16 hex digits,
//	        ascending in outbox order
//	s:<id>  a row's last Debezium source position, id "side/pk", compact
//	        where it has one of SourcePosition's forms (srcpos.go)
//
// The rows of a two-way changelog join are parts (l or l:, r:) unless its spec
// stamps source times (MaxTs: the times live in the join snapshot, which
// then stays whole in the base, as it does for the multi-way and event-time
// joins). A change of one domains row of a user key with a hundred then
// writes that row, the base (a few bytes) and the new outbox entry, not the
// key.
//
// Which rows changed is known from the events: an event of the left side
// changes l, one of the right side the rows of its before and after
// primary keys (the join changes no other row: joins.CDC.OnEvent), and on
// a left side of many rows an event of the left side changes those of its
// before and after primary keys. Deltas
// build on the Write before them, so they need every earlier Write
// applied: the driver writes them in order and, after a failed one, Resets
// the core (as it must anyway). The first Write after Init, after a Restore
// of a state not stored in parts, and after a Write that deleted the key is
// whole; every other is a delta, however many came before.
//
// No delta needs folding: a store keeps each part's latest value
// (redisstore: a hash per key; embedded: a map per key, its log compacted
// as before), so a key's reads stay bounded by its live state, whatever
// its history. Load packs base and parts (stateparts), and decodeState
// reads either form. Write.Size is then an estimate kept without
// re-encoding: the outbox and positions exactly, the rows as their number
// times their average size at the last whole Write or Restore.
const (
	partLeft   = "l"
	partLefts  = "l:"
	partRight  = "r:"
	partOutbox = "o:"
	partSrc    = "s:"
)

// partsState is what a Core with Config.Parts tracks between Writes.
type partsState struct {
	stored bool // the store holds the key in parts as of the last Write (or the Restore)
	all    bool // the next Write must be whole
	// What changed since the last Write: nil when nothing did, and
	// released by each Write (most keys are written once and then sit
	// idle, docs/performance/2026-12-05-bench.md, "Bytes per live key").
	ch      *partsChanges
	written uint64 // outbox entries with an id at or above it are not written yet
	next    uint64 // the next outbox id
	// Write.Size's parts: the base's bytes; the rows' (their number
	// times rowAvg); the written outbox entries' and positions' (exact).
	base, rowBytes, rowAvg, outboxBytes, srcBytes int
}

// partsChanges are the parts changed since the last Write.
type partsChanges struct {
	rows    []string // changelog-join row parts, in marking order, maybe repeated (changedRows sorts them)
	src     []string // Debezium position ids
	dropped []uint64 // outbox ids written before and pruned since
	// Room for the usual Write's rows (an event's one or two) and dropped
	// entries, in the changes' one allocation.
	rowRoom  [2]string
	dropRoom [2]uint64
}

// changes returns the changes since the last Write, made if none.
func (p *partsState) changes() *partsChanges {
	if p.ch == nil {
		ch := &partsChanges{}
		ch.rows, ch.dropped = ch.rowRoom[:0], ch.dropRoom[:0]
		p.ch = ch
	}
	return p.ch
}

func (ch *partsChanges) droppedIDs() []uint64 {
	if ch == nil {
		return nil
	}
	return ch.dropped
}

func (ch *partsChanges) srcIDs() []string {
	if ch == nil {
		return nil
	}
	return ch.src
}

// size is Write.Size.
func (p *partsState) size() int { return p.base + p.rowBytes + p.outboxBytes + p.srcBytes }

func (p *partsState) mark(name string) {
	ch := p.changes()
	if n := len(ch.rows); n > 0 && ch.rows[n-1] == name {
		return // an event's before and after rows: one part
	}
	ch.rows = append(ch.rows, name)
}

// markRow is mark(prefix + k), without making the name when it is the
// last one marked (an update's before and after rows).
func (p *partsState) markRow(prefix, k string) {
	if ch := p.ch; ch != nil && len(ch.rows) > 0 {
		last := ch.rows[len(ch.rows)-1]
		if len(last) == len(prefix)+len(k) && last[:len(prefix)] == prefix && last[len(prefix):] == k {
			return
		}
	}
	p.mark(prefix + k)
}

// rowParts reports whether the join's rows are parts of the state.
func (c *Core) rowParts() bool {
	return c.cfg.Parts && c.m.cdc != nil && c.cfg.Machine.CDC != nil && !c.cfg.Machine.CDC.MaxTs
}

// touch notes the rows a changelog-join event may change (before the
// join applies it).
func (c *Core) touch(e *record.Event) {
	if !c.rowParts() {
		return
	}
	spec := c.cfg.Machine.CDC
	if e.Side == record.Left {
		if !spec.LeftMany() {
			c.pt.mark(partLeft)
			return
		}
		for _, row := range []record.Row{e.Before, e.After} {
			if k, ok := rowKey(row, spec.Left.PK); ok {
				c.pt.markRow(partLefts, k)
			}
		}
		return
	}
	for _, row := range []record.Row{e.Before, e.After} {
		if k, ok := rowKey(row, spec.Right.PK); ok {
			c.pt.markRow(partRight, k)
		}
	}
}

// rowKey is the key form of row's primary key column, as joins.CDC
// computes it.
func rowKey(row record.Row, col string) (string, bool) {
	v, ok := row[col]
	if !ok || v == nil {
		return "", false
	}
	k, ok := record.KeyOf(v)
	return string(k), ok
}

// rowPart encodes a row as a part: compact (internal/rowcodec), or JSON
// when the row holds a value the compact encoding does not cover. A
// reader tells them apart by the first byte (rowcodec.IsCompact).
func rowPart(r record.Row) ([]byte, error) {
	if b, ok := rowcodec.Encode(r); ok {
		return b, nil
	}
	if b, ok := jsonenc.Exact(func(b []byte) ([]byte, bool) { return jsonenc.AppendValue(b, r) }); ok {
		return b, nil
	}
	return json.Marshal(r)
}

// outboxName is the part name of outbox entry id. A key numbers its
// entries from 0 for its life, so the names of the first ones are made
// once (outboxNames), not at each Write and again when pruned.
func outboxName(id uint64) string {
	if id < uint64(len(outboxNames)) {
		return outboxNames[id]
	}
	return string(appendOutboxName(nil, id))
}

func appendOutboxName(b []byte, id uint64) []byte {
	const hex = "0123456789abcdef"
	b = append(b, partOutbox...)
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hex[(id>>shift)&15])
	}
	return b
}

// outboxNames are the names of ids 0 to 1023, slices of one string
// (≈ 34 KB in all).
var outboxNames = func() []string {
	const n, size = 1024, len(partOutbox) + 16
	b := make([]byte, 0, n*size)
	for id := range uint64(n) {
		b = appendOutboxName(b, id)
	}
	all := string(b)
	names := make([]string, n)
	for i := range names {
		names[i] = all[i*size : (i+1)*size]
	}
	return names
}()

// writeParts fills w with the state as a base and parts: whole, or the
// delta since the last Write. room is an empty slice the parts may use.
func (c *Core) writeParts(w *Write, room []stateparts.Part) error {
	st := keyState{Timers: c.m.Timers(), Seq: c.seq}
	if !c.rowParts() && !c.m.Empty() {
		st.Join = c.m.Snapshot()
	}
	if c.m.EventTime() {
		wm := c.m.Watermark()
		st.Wm = &wm
	}
	base, err := encodeState(st)
	if err != nil {
		return err
	}
	p := &c.pt
	whole := !p.stored || p.all
	var parts []stateparts.Part
	if !whole {
		// A delta's parts, counted: in room, or one allocation, not a
		// growth per part.
		n := int(p.next - p.written)
		if p.ch != nil {
			n += len(p.ch.rows) + len(p.ch.src) + len(p.ch.dropped)
		}
		if n <= cap(room) {
			parts = room
		} else {
			parts = make([]stateparts.Part, 0, n)
		}
	}
	add := func(name string, v []byte) { parts = append(parts, stateparts.Part{Name: name, Value: v}) }
	if c.rowParts() {
		if whole {
			err = c.allRows(add)
			n := 0
			for _, pt := range parts {
				n += len(pt.Name) + len(pt.Value)
			}
			p.rowBytes, p.rowAvg = n, n/max(1, len(parts))
		} else {
			err = c.changedRows(add)
		}
		if err != nil {
			return err
		}
	} else {
		p.rowBytes = 0 // the join is in the base
	}
	if whole {
		p.outboxBytes, p.srcBytes = 0, 0
	} else {
		for _, id := range p.ch.droppedIDs() {
			add(outboxName(id), nil)
		}
	}
	for i := range c.outbox {
		e := &c.outbox[i]
		if !whole && e.id < p.written {
			continue
		}
		b, err := e.encode()
		if err != nil {
			return err
		}
		add(outboxName(e.id), b)
		p.outboxBytes += 18 + len(b)
	}
	if whole {
		for _, id := range slices.Sorted(maps.Keys(c.src)) { // deterministic Writes
			pos := c.src[id]
			add(partSrc+id, appendSrcPos(nil, pos))
			p.srcBytes += 2 + len(id) + len(pos)
		}
	} else {
		for _, id := range p.ch.srcIDs() {
			add(partSrc+id, appendSrcPos(nil, c.src[id]))
		}
	}
	p.base = len(base)
	w.State, w.Parts, w.Delta, w.Size = base, parts, !whole, p.size()
	p.stored, p.all = true, false
	p.ch, p.written = nil, p.next
	return nil
}

// allRows adds every row of the changelog join.
func (c *Core) allRows(add func(string, []byte)) error {
	if l := c.m.cdc.Left(); l != nil {
		b, err := rowPart(l)
		if err != nil {
			return err
		}
		add(partLeft, b)
	}
	err := c.m.cdc.EachLeft(func(k string, r record.Row) error {
		b, err := rowPart(r)
		if err != nil {
			return err
		}
		add(partLefts+k, b)
		return nil
	})
	if err != nil {
		return err
	}
	return c.m.cdc.EachRight(func(k string, r record.Row) error {
		b, err := rowPart(r)
		if err != nil {
			return err
		}
		add(partRight+k, b)
		return nil
	})
}

// changedRows adds the rows changed since the last Write: their values,
// or deletions of the ones gone.
func (c *Core) changedRows(add func(string, []byte)) error {
	if c.pt.ch == nil || len(c.pt.ch.rows) == 0 {
		return nil
	}
	defer func() {
		// The rows' size: their number times the average row's.
		if c.pt.rowAvg == 0 {
			c.pt.rowAvg = 64
		}
		c.pt.rowBytes = (c.m.cdc.NumRights() + c.m.cdc.NumLefts()) * c.pt.rowAvg
	}()
	// Sorted, each once: deterministic Writes. The slice is released with
	// the changes by this Write, so it is sorted in place.
	sort.Strings(c.pt.ch.rows)
	for _, name := range slices.Compact(c.pt.ch.rows) {
		var row record.Row
		switch {
		case name == partLeft:
			row = c.m.cdc.Left()
		case strings.HasPrefix(name, partLefts):
			row = c.m.cdc.LeftRow(name[len(partLefts):])
		default:
			row = c.m.cdc.Right(strings.TrimPrefix(name, partRight))
		}
		if row == nil {
			add(name, nil)
			continue
		}
		b, err := rowPart(row)
		if err != nil {
			return err
		}
		add(name, b)
	}
	return nil
}

// decodeParts decodes a packed state (stateparts): the base's keyState
// with the parts folded in, and whether the join's rows were parts. Outbox
// entries keep their ids and JSON (their outputs are decoded when
// re-sent).
func decodeParts(b []byte) (keyState, int, error) {
	base, parts, err := stateparts.Unpack(b)
	if err != nil {
		return keyState{}, 0, fmt.Errorf("%w: %v", errBadState, err)
	}
	if stateparts.IsPacked(base) {
		return keyState{}, 0, fmt.Errorf("%w: a packed base", errBadState)
	}
	s, err := decodeState(base)
	if err != nil {
		return keyState{}, 0, err
	}
	var left []byte
	var lefts, rights []stateparts.Part
	rows := 0
	for _, p := range parts {
		switch {
		case p.Name == partLeft:
			left, rows = p.Value, rows+1
		case strings.HasPrefix(p.Name, partLefts):
			lefts, rows = append(lefts, stateparts.Part{Name: p.Name[len(partLefts):], Value: p.Value}), rows+1
		case strings.HasPrefix(p.Name, partRight):
			rights, rows = append(rights, stateparts.Part{Name: p.Name[len(partRight):], Value: p.Value}), rows+1
		case strings.HasPrefix(p.Name, partOutbox):
			id, err := strconv.ParseUint(p.Name[len(partOutbox):], 16, 64)
			var e struct {
				P  string `json:"p"`
				N  int64  `json:"n"`
				To string `json:"to"`
			}
			if err == nil {
				err = json.Unmarshal(p.Value, &e)
			}
			if err != nil {
				return keyState{}, 0, fmt.Errorf("%w: outbox part %q: %v", errBadState, p.Name, err)
			}
			s.Outbox = append(s.Outbox, outboxEntry{Part: e.P, Offset: e.N, SentTo: e.To, id: id, enc: []byte(string(p.Value))})
		case strings.HasPrefix(p.Name, partSrc):
			if s.Src == nil {
				s.Src = map[string]string{}
			}
			pos, ok := srcPos(p.Value)
			if !ok {
				return keyState{}, 0, fmt.Errorf("%w: source position part %q: % x", errBadState, p.Name, p.Value)
			}
			s.Src[p.Name[len(partSrc):]] = pos
		default:
			return keyState{}, 0, fmt.Errorf("%w: unknown part %q", errBadState, p.Name)
		}
	}
	if rows > 0 {
		if len(s.Join) > 0 {
			return keyState{}, 0, fmt.Errorf("%w: join rows both whole and in parts", errBadState)
		}
		if left, err = rowJSON(left); err != nil {
			return keyState{}, 0, fmt.Errorf("%w: part %q: %v", errBadState, partLeft, err)
		}
		for i := range lefts {
			if lefts[i].Value, err = rowJSON(lefts[i].Value); err != nil {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %v", errBadState, partLefts+lefts[i].Name, err)
			}
		}
		for i := range rights {
			if rights[i].Value, err = rowJSON(rights[i].Value); err != nil {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %v", errBadState, partRight+rights[i].Name, err)
			}
		}
		s.Join = cdcSnapshot(left, lefts, rights)
	}
	return s, rows, nil
}

// rowJSON is a row part's JSON: a compact row's (rowcodec.AppendJSON),
// or the part itself when it is JSON.
func rowJSON(b []byte) ([]byte, error) {
	if !rowcodec.IsCompact(b) {
		return b, nil
	}
	return rowcodec.AppendJSON(make([]byte, 0, 2*len(b)), b)
}

// cdcSnapshot assembles a changelog join's snapshot (joins' version 1)
// from its left row (value state) or left rows by primary key (a left side
// of many rows) and its right rows by primary key.
func cdcSnapshot(left []byte, lefts, rights []stateparts.Part) []byte {
	n := 16 + len(left)
	for _, r := range lefts {
		n += len(r.Name) + len(r.Value) + 4
	}
	for _, r := range rights {
		n += len(r.Name) + len(r.Value) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, joins.SnapshotVersion)
	b = append(b, `{"l":`...)
	if left == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, left...)
	}
	b = appendRowParts(b, `,"lr":{`, lefts)
	b = appendRowParts(b, `,"r":{`, rights)
	return append(b, '}')
}

// appendRowParts appends the snapshot field that opens with head holding
// rows by primary key, nothing when there are none.
func appendRowParts(b []byte, head string, rows []stateparts.Part) []byte {
	if len(rows) == 0 {
		return b
	}
	b = append(b, head...)
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, r.Name)
		b = append(b, ':')
		b = append(b, r.Value...)
	}
	return append(b, '}')
}
