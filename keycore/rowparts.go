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

// rowPart encodes a row as a part, its position pos in front (withPos;
// none for ""): under the side's schema (the columns the job keeps of it,
// rowcodec.Schema) when it has one and the row fits it, else compact with
// its column names (internal/rowcodec), or JSON when the row holds a value
// the compact encoding does not cover. A reader tells them apart by the
// first byte after the position. One allocation: the part.
func rowPart(r record.Row, s *rowcodec.Schema, pos string) ([]byte, error) {
	if s != nil {
		if b, ok := jsonenc.Exact(func(b []byte) ([]byte, bool) { return s.Append(appendPos(b, pos), r) }); ok {
			return b, nil
		}
	}
	if b, ok := jsonenc.Exact(func(b []byte) ([]byte, bool) { return rowcodec.Append(appendPos(b, pos), r) }); ok {
		return b, nil
	}
	if b, ok := jsonenc.Exact(func(b []byte) ([]byte, bool) { return jsonenc.AppendValue(appendPos(b, pos), r) }); ok {
		return b, nil
	}
	j, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return withPos(pos, j), nil
}

// allRows adds every row of the changelog join, each with its position
// folded in, then the positions no row part holds: a deleted row's of a
// side kept by primary key as its part, the others as s: parts.
func (c *Core) allRows(add func(string, []byte)) error {
	var folded string // the left row's primary key (key form), its position folded into l
	sch := schemasOf(c.cfg.Machine.CDC)
	if l := c.m.cdc.Left(); l != nil {
		var pos string
		folded, pos = c.leftPos(l)
		b, err := rowPart(l, sch.side(record.Left), pos)
		if err != nil {
			return err
		}
		add(partLeft, b)
	}
	sides := c.keyedSides()
	for i := range sides {
		sd := &sides[i]
		if sd.prefix == "" {
			continue
		}
		err := c.eachRow(sd.side, func(k string, r record.Row) error {
			b, err := rowPart(r, sch.side(sd.side), c.pos(sd.side, k))
			if err != nil {
				return err
			}
			add(sd.prefix+k, b)
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.src)) { // deterministic Writes
		if folded != "" && isID(id, record.Left, folded) {
			continue
		}
		if sd, k, ok := sides.of(id); ok {
			if c.row(sd.side, k) == nil {
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
}

type keyedSides [2]keyedSide

// keyedSides are the join's sides kept by primary key: the right side,
// and the left one when it holds many rows per key.
func (c *Core) keyedSides() keyedSides {
	var s keyedSides
	s[record.Right] = keyedSide{side: record.Right, prefix: partRight, id: posIDs[record.Right]}
	if c.cfg.Machine.CDC.LeftMany() {
		s[record.Left] = keyedSide{side: record.Left, prefix: partLefts, id: posIDs[record.Left]}
	}
	return s
}

// posIDs are the prefixes of a two-way changelog join's position ids
// (MachineSpec.sideName).
var posIDs = [2]string{record.Left.String() + "/", record.Right.String() + "/"}

// eachRow calls f with each stored row of side kept by primary key.
func (c *Core) eachRow(side record.Side, f func(string, record.Row) error) error {
	if side == record.Left {
		return c.m.cdc.EachLeft(f)
	}
	return c.m.cdc.EachRight(f)
}

// row is the stored row of side kept by primary key with key k, nil when
// none.
func (c *Core) row(side record.Side, k string) record.Row {
	if side == record.Left {
		return c.m.cdc.LeftRow(k)
	}
	return c.m.cdc.Right(k)
}

// pos is the last position of side's row with key k ("" when none),
// looked up without making its id.
func (c *Core) pos(side record.Side, k string) string {
	if len(c.src) == 0 {
		return ""
	}
	var room [48]byte
	id := append(append(room[:0], posIDs[side]...), k...)
	return c.src[string(id)]
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

// leftPos is the primary key (key form) and position of row as the left
// row: "" when it has no position.
func (c *Core) leftPos(row record.Row) (pk, pos string) {
	k, ok := rowKey(row, c.cfg.Machine.pkColumn(record.Left))
	if !ok {
		return "", ""
	}
	if pos = c.pos(record.Left, k); pos == "" {
		return "", ""
	}
	return k, pos
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
	b := make([]byte, 0, 2+binary.MaxVarintLen64+len(pos)+len(row))
	return append(appendPos(b, pos), row...)
}

// appendPos appends pos's framing in front of a row part (nothing for
// "").
func appendPos(b []byte, pos string) []byte {
	if pos == "" {
		return b
	}
	if rest, ok := strings.CutPrefix(pos, "pg/"); ok {
		if lsn, ok := fixedDigits(rest, 20); ok {
			return binary.AppendUvarint(append(b, pgTag), lsn)
		}
	}
	at := len(b)
	b = append(b, posTag, 0) // the length, one byte while under 128
	b = appendSrcPos(b, pos)
	n := len(b) - at - 2
	if n < 128 {
		b[at+1] = byte(n)
		return b
	}
	// Move the position up for a longer length.
	var lb [binary.MaxVarintLen64]byte
	ln := binary.PutUvarint(lb[:], uint64(n))
	b = append(b, lb[:ln-1]...)
	copy(b[at+1+ln:], b[at+2:at+2+n])
	copy(b[at+1:], lb[:ln])
	return b
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
	leftPK, leftPos := "", ""
	if l := c.m.cdc.Left(); l != nil {
		leftPK, leftPos = c.leftPos(l)
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
		if leftPK != "" && isID(id, record.Left, leftPK) {
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
				b, err := rowPart(row, sch.side(record.Left), leftPos)
				if err != nil {
					return err
				}
				add(name, b)
			} else {
				add(name, nil)
			}
			continue
		}
		sd, k, ok := sides.part(name)
		if !ok {
			return fmt.Errorf("keycore: changed row part %q of no side", name)
		}
		pos := c.pos(sd.side, k)
		row := c.row(sd.side, k)
		if row == nil {
			if pos == "" {
				add(name, nil)
			} else {
				add(name, withPos(pos, nil))
			}
			continue
		}
		b, err := rowPart(row, sch.side(sd.side), pos)
		if err != nil {
			return err
		}
		add(name, b)
	}
	return nil
}

// isID reports whether id is the position id of side's row with key pk.
func isID(id string, side record.Side, pk string) bool {
	p := posIDs[side]
	return len(id) == len(p)+len(pk) && id[:len(p)] == p && id[len(p):] == pk
}
