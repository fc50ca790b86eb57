package keycore

import (
	"maps"
	"slices"

	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/record"
)

// Incremental writes (Config.Parts). A key's state is written as a base
// and named parts (persistence.Snapshot.Parts), and a Write after the
// first carries only what changed since the Write before it (Write.Delta):
//
//	base    the key's timers, watermark, output sequence, and the join
//	        snapshot unless its rows are parts (below), in binary
//	        (encodeBase); a base in version 1's JSON is read too
//	l       the changelog join's left row (value state): a compact row
//	        (internal/rowcodec), or JSON for a row holding a value the
//	        compact encoding does not cover; with the row's last Debezium
//	        source position in front when it has one (below)
//	l:<pk>  a left row by primary key (key form), as l, when the left
//	        side holds many rows per key (joins.CDCSpec.LeftMany); a
//	        deleted left row's part is its last position alone
//	r:<pk>  a right row (map state) by primary key (key form), as l; a
//	        deleted right row's part is its last position alone
//	o:<id>  an outbox entry (its JSON as in version 1), id in 16 hex digits,
//	        ascending in outbox order
//	s:<id>  a last Debezium source position that no row part holds, id
//	        "side/pk": a deleted left row's of a left side of one row per
//	        key, and every position of a join whose rows live in the base
//
// A position is stored compactly where it has one of SourcePosition's
// forms (srcpos.go). A row part with a position is
//
//	0xC5 | uvarint lsn | row                a Postgres position (pg/<lsn>)
//	0xC3 | uvarint len | position | row     any other
//
// where row is empty for a deleted row of a side kept by primary key
// (r:, l:). Folding the position into
// the row's part saves the field a position of its own took (its name
// "s:right/<pk>" and the listpack's framing): about 20 bytes a row.
// Parts written before positions were folded (s:right/<pk> beside
// r:<pk>) are read, and the key is written whole once in the folded form.
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
	base := encodeBase(st)
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
	var err error
	if c.rowParts() {
		if whole {
			err = c.allRows(add)
			n := 0
			for _, pt := range parts {
				n += len(pt.Name) + len(pt.Value)
			}
			rows := c.m.cdc.NumRights() + c.m.cdc.NumLefts()
			p.rowBytes, p.rowAvg = n, 0
			if rows > 0 {
				p.rowAvg = n / rows
			}
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
	switch {
	case c.rowParts():
		// The positions went with the rows (allRows, changedRows).
		if whole {
			for id, pos := range c.src {
				p.srcBytes += 2 + len(id) + len(pos)
			}
		}
	case whole:
		for _, id := range slices.Sorted(maps.Keys(c.src)) { // deterministic Writes
			pos := c.src[id]
			add(partSrc+id, appendSrcPos(nil, pos))
			p.srcBytes += 2 + len(id) + len(pos)
		}
	default:
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
