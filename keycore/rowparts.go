package keycore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/internal/rowcodec"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// schemas are the row schemas of a changelog join's sides (nil for a
// side whose whole rows are kept), made once per spec.
type schemas [2]*rowcodec.Schema

// schemasOf returns spec's row schemas (nil for a nil spec).
func schemasOf(spec *joins.CDCSpec) *schemas {
	if spec == nil {
		return nil
	}
	return (*schemas)(spec.RowSchemas())
}

// side is the schema of side's rows: nil when there is none.
func (s *schemas) side(side record.Side) *rowcodec.Schema {
	if s == nil {
		return nil
	}
	return s[side]
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
