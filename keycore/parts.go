package keycore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

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

// schemas are the row schemas of a changelog join's sides (nil for a
// side whose whole rows are kept), made once per spec.
type schemas [2]*rowcodec.Schema

var schemaCache sync.Map // *joins.CDCSpec -> *schemas

// schemasOf returns spec's row schemas (nil for a nil spec).
func schemasOf(spec *joins.CDCSpec) *schemas {
	if spec == nil {
		return nil
	}
	if s, ok := schemaCache.Load(spec); ok {
		return s.(*schemas)
	}
	var s schemas
	for _, side := range []record.Side{record.Left, record.Right} {
		if cols, all := spec.Kept(side); !all {
			s[side] = rowcodec.NewSchema(cols)
		}
	}
	got, _ := schemaCache.LoadOrStore(spec, &s)
	return got.(*schemas)
}

// side is the schema of side's rows: nil when there is none.
func (s *schemas) side(side record.Side) *rowcodec.Schema {
	if s == nil {
		return nil
	}
	return s[side]
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

// rowPart encodes a row as a part: under the side's schema (the columns
// the job keeps of it, rowcodec.Schema) when it has one and the row fits
// it, else compact with its column names (internal/rowcodec), or JSON
// when the row holds a value the compact encoding does not cover. A
// reader tells them apart by the first byte.
func rowPart(r record.Row, s *rowcodec.Schema) ([]byte, error) {
	if s != nil {
		if b, ok := jsonenc.Exact(func(b []byte) ([]byte, bool) { return s.Append(b, r) }); ok {
			return b, nil
		}
	}
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

// allRows adds every row of the changelog join, each with its position
// folded in, then the positions no row part holds: a deleted row's of a
// side kept by primary key as its part, the others as s: parts.
func (c *Core) allRows(add func(string, []byte)) error {
	var folded string // the left row's position id, folded into l
	sch := schemasOf(c.cfg.Machine.CDC)
	if l := c.m.cdc.Left(); l != nil {
		b, err := rowPart(l, sch.side(record.Left))
		if err != nil {
			return err
		}
		var pos string
		folded, pos = c.leftPos(l)
		add(partLeft, withPos(pos, b))
	}
	sides := c.keyedSides()
	for _, sd := range sides {
		if sd.prefix == "" {
			continue
		}
		err := sd.each(func(k string, r record.Row) error {
			b, err := rowPart(r, sch.side(sd.side))
			if err != nil {
				return err
			}
			add(sd.prefix+k, withPos(c.src[sd.id+k], b))
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.src)) { // deterministic Writes
		if id == folded {
			continue
		}
		if sd, k, ok := sides.of(id); ok {
			if sd.row(k) == nil {
				add(sd.prefix+k, withPos(c.src[id], nil))
			}
			continue
		}
		add(partSrc+id, appendSrcPos(nil, c.src[id]))
	}
	return nil
}

// keyedSide is a side of the changelog join whose rows are parts by
// primary key (prefix r: or l:), with their positions folded in.
type keyedSide struct {
	side   record.Side
	prefix string // "" when the side is not kept by primary key
	id     string // its positions' id prefix: "right/"
	each   func(func(string, record.Row) error) error
	row    func(string) record.Row
}

type keyedSides [2]keyedSide

// keyedSides are the join's sides kept by primary key: the right side,
// and the left one when it holds many rows per key.
func (c *Core) keyedSides() keyedSides {
	var s keyedSides
	s[record.Right] = keyedSide{side: record.Right, prefix: partRight, id: c.cfg.Machine.sideName(record.Right) + "/",
		each: c.m.cdc.EachRight, row: c.m.cdc.Right}
	if c.cfg.Machine.CDC.LeftMany() {
		s[record.Left] = keyedSide{side: record.Left, prefix: partLefts, id: c.cfg.Machine.sideName(record.Left) + "/",
			each: c.m.cdc.EachLeft, row: c.m.cdc.LeftRow}
	}
	return s
}

// of finds the side kept by primary key whose position id is id, and the
// row's key.
func (s *keyedSides) of(id string) (*keyedSide, string, bool) {
	for i := range s {
		if s[i].prefix == "" {
			continue
		}
		if k, ok := strings.CutPrefix(id, s[i].id); ok {
			return &s[i], k, true
		}
	}
	return nil, "", false
}

// part finds the side kept by primary key of a part name, and the row's
// key.
func (s *keyedSides) part(name string) (*keyedSide, string, bool) {
	for i := range s {
		if s[i].prefix == "" {
			continue
		}
		if k, ok := strings.CutPrefix(name, s[i].prefix); ok {
			return &s[i], k, true
		}
	}
	return nil, "", false
}

// leftPos is the id and position of row's position as the left row:
// "" when it has none.
func (c *Core) leftPos(row record.Row) (id, pos string) {
	k, ok := rowKey(row, c.cfg.Machine.pkColumn(record.Left))
	if !ok {
		return "", ""
	}
	id = c.cfg.Machine.sideName(record.Left) + "/" + k
	if pos, ok = c.src[id]; !ok {
		return "", ""
	}
	return id, pos
}

// posTag is the first byte of a row part with its position in front;
// pgTag the same for a Postgres position, whose LSN then follows as a
// uvarint alone (3 bytes less than its stored form after posTag).
const (
	posTag = 0xC3
	pgTag  = 0xC5
)

// withPos is a row part's value: row alone without a position, else the
// position's stored form in front of it (row empty: a deleted row's
// position alone).
func withPos(pos string, row []byte) []byte {
	if pos == "" {
		return row
	}
	if rest, ok := strings.CutPrefix(pos, "pg/"); ok {
		if lsn, ok := fixedDigits(rest, 20); ok {
			b := make([]byte, 0, 1+binary.MaxVarintLen64+len(row))
			b = binary.AppendUvarint(append(b, pgTag), lsn)
			return append(b, row...)
		}
	}
	var room [24]byte
	p := appendSrcPos(room[:0], pos)
	b := make([]byte, 0, 1+binary.MaxVarintLen16+len(p)+len(row))
	b = append(b, posTag)
	b = binary.AppendUvarint(b, uint64(len(p)))
	b = append(b, p...)
	return append(b, row...)
}

// splitPos reads a row part: its position ("" when it has none) and its
// row (empty for a position alone).
func splitPos(v []byte) (pos string, row []byte, err error) {
	if len(v) > 0 && v[0] == pgTag {
		lsn, k := binary.Uvarint(v[1:])
		if k <= 0 {
			return "", nil, fmt.Errorf("bad Postgres position % x", v)
		}
		return pgPos(lsn), v[1+k:], nil
	}
	if len(v) == 0 || v[0] != posTag {
		return "", v, nil
	}
	n, k := binary.Uvarint(v[1:])
	if k <= 0 || n == 0 || n > uint64(len(v)-1-k) {
		return "", nil, fmt.Errorf("bad position framing % x", v)
	}
	p := v[1+k : 1+k+int(n)]
	pos, ok := srcPos(p)
	if !ok {
		return "", nil, fmt.Errorf("bad position % x", p)
	}
	return pos, v[1+k+int(n):], nil
}

// changedRows adds the rows changed since the last Write, positions
// folded in as allRows does: their values, deleted right rows' positions,
// or deletions of the rows gone. Changed positions no row part holds go
// to s: parts.
func (c *Core) changedRows(add func(string, []byte)) error {
	ch := c.pt.ch
	if ch == nil || (len(ch.rows) == 0 && len(ch.src) == 0) {
		return nil
	}
	defer func() {
		// The rows' size: their number times the average row's.
		if c.pt.rowAvg == 0 {
			c.pt.rowAvg = 64
		}
		c.pt.rowBytes = (c.m.cdc.NumRights() + c.m.cdc.NumLefts()) * c.pt.rowAvg
	}()
	leftID, leftPos := "", ""
	if l := c.m.cdc.Left(); l != nil {
		leftID, leftPos = c.leftPos(l)
	}
	sides := c.keyedSides()
	// Positions first: the positions of rows kept by primary key and the
	// left row's go with their rows' parts, the others (a deleted left
	// row's) to s: parts. The left row's id had an s: part while it was
	// deleted: that one goes.
	for _, id := range ch.src {
		if sd, k, ok := sides.of(id); ok {
			c.pt.markRow(sd.prefix, k)
			continue
		}
		if id == leftID {
			c.pt.mark(partLeft)
			add(partSrc+id, nil)
			continue
		}
		add(partSrc+id, appendSrcPos(nil, c.src[id]))
	}
	// Sorted, each once: deterministic Writes. The slice is released with
	// the changes by this Write, so it is sorted in place.
	sch := schemasOf(c.cfg.Machine.CDC)
	sort.Strings(ch.rows)
	for _, name := range slices.Compact(ch.rows) {
		if name == partLeft {
			if row := c.m.cdc.Left(); row != nil {
				b, err := rowPart(row, sch.side(record.Left))
				if err != nil {
					return err
				}
				add(name, withPos(leftPos, b))
			} else {
				add(name, nil)
			}
			continue
		}
		sd, k, ok := sides.part(name)
		if !ok {
			return fmt.Errorf("keycore: changed row part %q of no side", name)
		}
		pos := c.src[sd.id+k]
		row := sd.row(k)
		if row == nil {
			if pos == "" {
				add(name, nil)
			} else {
				add(name, withPos(pos, nil))
			}
			continue
		}
		b, err := rowPart(row, sch.side(sd.side))
		if err != nil {
			return err
		}
		add(name, withPos(pos, b))
	}
	return nil
}

// decodeParts decodes a packed state (stateparts): the base's keyState
// with the parts folded in, and whether the join's rows were parts. Outbox
// entries keep their ids and JSON (their outputs are decoded when
// re-sent).
func decodeParts(b []byte, sch *schemas) (keyState, int, error) {
	base, parts, err := stateparts.Unpack(b)
	if err != nil {
		return keyState{}, 0, fmt.Errorf("%w: %v", errBadState, err)
	}
	if stateparts.IsPacked(base) {
		return keyState{}, 0, fmt.Errorf("%w: a packed base", errBadState)
	}
	s, err := decodeState(base, nil)
	if err != nil {
		return keyState{}, 0, err
	}
	var left []byte
	var lefts, rights []stateparts.Part
	rows := 0
	var srcParts map[string]string // s: parts by id
	setSrc := func(id, pos string) {
		if s.Src == nil {
			s.Src = map[string]string{}
		}
		s.Src[id] = pos
	}
	for _, p := range parts {
		switch {
		case p.Name == partLeft:
			pos, row, err := splitPos(p.Value)
			if err != nil || len(row) == 0 {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %v", errBadState, p.Name, err)
			}
			left, rows, s.leftPos = row, rows+1, pos
		case strings.HasPrefix(p.Name, partLefts):
			pos, row, err := splitPos(p.Value)
			if err != nil {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %v", errBadState, p.Name, err)
			}
			k := p.Name[len(partLefts):]
			if pos != "" {
				setSrc(record.Left.String()+"/"+k, pos)
			}
			if len(row) > 0 {
				lefts, rows = append(lefts, stateparts.Part{Name: k, Value: row}), rows+1
			}
		case strings.HasPrefix(p.Name, partRight):
			pos, row, err := splitPos(p.Value)
			if err != nil {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %v", errBadState, p.Name, err)
			}
			k := p.Name[len(partRight):]
			if pos != "" {
				setSrc(record.Right.String()+"/"+k, pos)
			}
			if len(row) > 0 {
				rights, rows = append(rights, stateparts.Part{Name: k, Value: row}), rows+1
			}
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
			pos, ok := srcPos(p.Value)
			if !ok {
				return keyState{}, 0, fmt.Errorf("%w: source position part %q: % x", errBadState, p.Name, p.Value)
			}
			if srcParts == nil {
				srcParts = map[string]string{}
			}
			srcParts[p.Name[len(partSrc):]] = pos
		default:
			return keyState{}, 0, fmt.Errorf("%w: unknown part %q", errBadState, p.Name)
		}
	}
	// An s: part of a position a row part holds too is older than the
	// row's (it was written before positions went with the rows): the
	// next Write is whole, in the folded form (as for the other s: parts
	// of that layout, which Restore finds in srcParts).
	for id, pos := range srcParts {
		if _, ok := s.Src[id]; ok {
			s.unfolded = true
			continue
		}
		setSrc(id, pos)
		s.srcParts = append(s.srcParts, id)
	}
	if rows > 0 {
		if len(s.Join) > 0 {
			return keyState{}, 0, fmt.Errorf("%w: join rows both whole and in parts", errBadState)
		}
		if left, err = rowJSON(left, sch.side(record.Left)); err != nil {
			return keyState{}, 0, fmt.Errorf("%w: part %q: %w", errBadState, partLeft, err)
		}
		for i := range lefts {
			if lefts[i].Value, err = rowJSON(lefts[i].Value, sch.side(record.Left)); err != nil {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %w", errBadState, partLefts+lefts[i].Name, err)
			}
		}
		for i := range rights {
			if rights[i].Value, err = rowJSON(rights[i].Value, sch.side(record.Right)); err != nil {
				return keyState{}, 0, fmt.Errorf("%w: part %q: %w", errBadState, partRight+rights[i].Name, err)
			}
		}
		s.Join = cdcSnapshot(left, lefts, rights)
	}
	return s, rows, nil
}

// rowJSON is a row part's JSON: a compact row's (rowcodec.AppendJSON),
// or the part itself when it is JSON. A row written under a schema needs
// the same schema (s): the job's columns of that side as the writer kept
// them.
func rowJSON(b []byte, s *rowcodec.Schema) ([]byte, error) {
	if rowcodec.IsSchemaRow(b) {
		if s == nil {
			return nil, fmt.Errorf("%w; the job now keeps whole rows of this side: %s", rowcodec.ErrSchema, schemaChange)
		}
		x, err := s.Expand(b)
		if errors.Is(err, rowcodec.ErrSchema) {
			return nil, fmt.Errorf("%w: %s", err, schemaChange)
		}
		if err != nil {
			return nil, err
		}
		b = x
	}
	if !rowcodec.IsCompact(b) {
		return b, nil
	}
	return rowcodec.AppendJSON(make([]byte, 0, 2*len(b)), b)
}

// schemaChange is what an error about a row written under other kept
// columns tells the operator.
const schemaChange = "the columns the job keeps of a side changed since the row was stored " +
	"(its projection, join or key columns); state written under the old columns cannot serve it: " +
	"run the changed job under a new name from the sources' beginning " +
	"(docs/operations/upgrades.md, \"Changing a job's columns\")"

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
