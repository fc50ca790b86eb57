package joins

import (
	"slices"
	"sort"

	"github.com/joinery/joinery/record"
)

// The changelog join of any cardinality (Flink's regular join): each side
// of a key holds a multiset of rows, kept by primary key, and a result is
// a pair of one left and one right row of the key that passes the residual
// condition (CDCSpec.Where), or a row of a kept side that has none, padded.
// The left side has this shape when its join column is not its primary key
// (CDCSpec.LeftMany); the right side always keeps its rows by primary key.
// A left side whose join column is its primary key holds at most one row
// per key (value state) and runs the one-to-many code of cdc.go and
// cdc_flink.go, unless a condition needs this file's rules in the flink or
// kafka kinds.
//
// A change of one row X (its stored image Xo, nil when new; its new image
// Xn, nil when deleted) is visited against the other side's rows of the
// key, in primary-key order. In the update and kafka kinds:
//
//	a pair that stays:             -U[Xo+o] then +U[Xn+o]
//	a pair that goes:              -D[Xo+o]; if o's side is kept and o has
//	                               no other pair left: then +I[null+o]
//	a pair that comes:             +I[Xn+o]; if o's side is kept and o had
//	                               no pair: -D[null+o] before it
//	X's padding (X's side kept):   -U/+U when X stays padded, -D when the
//	                               padded row goes (before its first
//	                               pair), +I when it comes (after the last
//	                               pair went)
//
// where the kafka kinds make each padded row that a pair replaces, or that
// replaces a pair, one -U/+U pair (Kafka Streams' Change(new, old)), as
// padSwap says. On a key whose left side holds one row these are exactly
// the outputs of cdc.go. In the flink kinds a change is Flink's
// JoinHelper.processElement: an update is a retraction of Xo then an
// accumulation of Xn, whose kinds cdc_flink.go lists, the association
// counts being the number of rows of the input's side that pass the
// condition with the other row. Retractions carry the stored rows.
//
// The work per change is the other side's number of rows at the key, times
// the input side's where a kept other row may lose or gain its last pair.

// LeftMany reports whether the left side may hold many rows per join value:
// its join column is not its primary key. The right side always may.
func (s *CDCSpec) LeftMany() bool { return s.Left.JoinOn != s.Left.PK }

// general reports whether OnEvent runs this file's code: a left side of
// many rows, or a condition in the flink or kafka kinds.
func (s *CDCSpec) general() bool {
	return s.LeftMany() || (!s.Where.IsZero() && s.Kinds != KindsUpdate)
}

func findRow(rows []*rightRow, pk string) (int, bool) {
	i := sort.Search(len(rows), func(i int) bool { return rows[i].pk >= pk })
	return i, i < len(rows) && rows[i].pk == pk
}

// rowsOf is the row list of side: the right rows, or the left rows of the
// many shape (or of the one-row view manyBegin makes).
func (j *CDC) rowsOf(side record.Side) *[]*rightRow {
	if side == record.Left {
		return &j.lefts
	}
	return &j.rights
}

// manyBegin and manyEnd move a one-row left side into j.lefts and back,
// so the general code runs on either shape.
func (j *CDC) manyBegin() {
	if j.spec.LeftMany() || j.left == nil {
		return
	}
	pk, _ := j.pkOf(record.Left, j.left)
	j.lefts = []*rightRow{{pk: pk, row: j.left, ts: j.leftTs, enc: j.leftEnc}}
}

func (j *CDC) manyEnd() {
	if j.spec.LeftMany() {
		return
	}
	j.left, j.leftTs, j.leftEnc = nil, 0, nil
	if len(j.lefts) > 0 {
		l := j.lefts[0]
		j.left, j.leftTs, j.leftEnc = l.row, l.ts, l.enc
	}
	j.lefts = nil
}

// manyEvent is OnEvent for the general shape.
func (j *CDC) manyEvent(em *emitter, e *record.Event) {
	if e.Side != record.Left && e.Side != record.Right {
		return
	}
	j.manyBegin()
	defer j.manyEnd()
	side := e.Side
	flink := j.spec.Kinds == KindsFlink
	switch e.Op {
	case record.OpCreate, record.OpRead, record.OpUpdate:
		pk, ok := j.pkOf(side, e.After)
		if !ok {
			return
		}
		kind := record.Insert
		if e.Op == record.OpUpdate {
			kind = record.UpdateAfter
			// A primary-key change within an update: the old row goes first.
			if old, ok := j.pkOf(side, e.Before); ok && old != pk {
				if flink {
					j.flinkRetract(em, side, old, record.UpdateBefore)
				} else {
					j.manyChange(em, side, old, nil, 0)
				}
			}
		}
		if !flink {
			j.manyChange(em, side, pk, e.After, e.Ts)
			return
		}
		_, found := findRow(*j.rowsOf(side), pk)
		switch {
		case found && e.Before == nil && j.spec.Where.IsZero():
			// An upsert (a bare +U, a repeated insert): it replaces the
			// stored row without retracting it. With a condition the new
			// row may leave pairs the stored one was in, so it retracts
			// the stored row first, as for a change with a before.
			j.flinkAccumulate(em, side, pk, e.After, e.Ts, kind)
		case found:
			j.flinkRetract(em, side, pk, record.UpdateBefore)
			j.flinkAccumulate(em, side, pk, e.After, e.Ts, record.UpdateAfter)
		default:
			j.flinkAccumulate(em, side, pk, e.After, e.Ts, kind)
		}
	case record.OpDelete:
		pk, ok := j.pkOf(side, e.Before)
		if !ok {
			return
		}
		if flink {
			j.flinkRetract(em, side, pk, record.Delete)
		} else {
			j.manyChange(em, side, pk, nil, 0)
		}
	}
}

// matches reports whether x of side and o of the other side are a pair.
func (j *CDC) matches(side record.Side, x, o record.Row) bool {
	w := &j.spec.Where
	if w.IsZero() {
		return true
	}
	if side == record.Left {
		return w.match(x, o)
	}
	return w.match(o, x)
}

// paired reports whether o, a row of the side other than side, has a pair
// among side's stored rows, but for the one with primary key skip when
// skipping.
func (j *CDC) paired(side record.Side, o record.Row, skip string, skipping bool) bool {
	for _, y := range *j.rowsOf(side) {
		if (!skipping || y.pk != skip) && j.matches(side, y.row, o) {
			return true
		}
	}
	return false
}

// out emits a result of x (a row of side, nil when padded) and o (a row of
// the other side, nil when padded), in left/right order.
func (j *CDC) out(em *emitter, k record.Kind, side record.Side, x record.Row, o *rightRow) {
	var or record.Row
	var ots int64
	if o != nil {
		or, ots = o.row, o.ts
	}
	if side == record.Left {
		em.emit(k, x, or, ots)
	} else {
		em.emit(k, or, x, ots)
	}
}

// manyChange applies a change of the row of side with primary key pk to
// xn (nil: a delete) in the update or kafka kinds and emits its results.
func (j *CDC) manyChange(em *emitter, side record.Side, pk string, xn record.Row, ts int64) {
	rows := j.rowsOf(side)
	i, found := findRow(*rows, pk)
	var xo record.Row
	if found {
		xo = (*rows)[i].row
	}
	if xo == nil && xn == nil {
		return
	}
	other := record.Right
	if side == record.Right {
		other = record.Left
	}
	t := j.spec.Type
	keepS, keepO := t.keeps(side), t.keeps(other)
	others := *j.rowsOf(other)
	matchedBefore, matchedAfter := false, false
	if keepS {
		for _, o := range others {
			if xo != nil && !matchedBefore && j.matches(side, xo, o.row) {
				matchedBefore = true
			}
			if xn != nil && !matchedAfter && j.matches(side, xn, o.row) {
				matchedAfter = true
			}
		}
	}
	// X's padded row goes before its first pair comes.
	padGoes := keepS && xo != nil && !matchedBefore && xn != nil && matchedAfter
	lastDrop := -1 // the index of the last -D of a pair of X
	for _, o := range others {
		mo := xo != nil && j.matches(side, xo, o.row)
		mn := xn != nil && j.matches(side, xn, o.row)
		switch {
		case mo && mn:
			em.reserve(2)
			j.out(em, record.UpdateBefore, side, xo, o)
			j.out(em, record.UpdateAfter, side, xn, o)
		case mo:
			if keepO && !j.paired(side, o.row, pk, true) {
				gone, came := j.padSwap()
				em.reserve(2)
				j.out(em, gone, side, xo, o)
				j.out(em, came, side, nil, o)
				continue
			}
			lastDrop = len(em.out)
			j.out(em, record.Delete, side, xo, o)
		case mn:
			flip := keepO && !j.paired(side, o.row, pk, true)
			came := record.Insert
			if padGoes {
				padGoes = false
				if flip {
					j.out(em, record.Delete, side, xo, nil)
				} else {
					var gone record.Kind
					gone, came = j.padSwap()
					j.out(em, gone, side, xo, nil)
				}
			}
			if flip {
				var gone record.Kind
				gone, came = j.padSwap()
				j.out(em, gone, side, nil, o)
			}
			j.out(em, came, side, xn, o)
		}
	}
	if keepS {
		switch {
		case xo != nil && !matchedBefore && xn != nil && !matchedAfter:
			em.reserve(2)
			j.out(em, record.UpdateBefore, side, xo, nil)
			j.out(em, record.UpdateAfter, side, xn, nil)
		case xo != nil && !matchedBefore && xn == nil:
			j.out(em, record.Delete, side, xo, nil)
		case xn != nil && !matchedAfter:
			came := record.Insert
			if xo != nil && lastDrop >= 0 && lastDrop == len(em.out)-1 && j.spec.Kinds == KindsKafka {
				// The last pair gone and the padded row: one Change.
				em.out[lastDrop].Kind, came = record.UpdateBefore, record.UpdateAfter
			}
			j.out(em, came, side, xn, nil)
		}
	}
	j.store(side, pk, xn, ts)
}

// store puts row (nil: removes the row) under pk on side.
func (j *CDC) store(side record.Side, pk string, row record.Row, ts int64) {
	rows := j.rowsOf(side)
	i, found := findRow(*rows, pk)
	switch {
	case row == nil && found:
		*rows = slices.Delete(*rows, i, i+1)
		if len(*rows) == 0 {
			*rows = nil
		}
	case row == nil:
	case found:
		r := (*rows)[i]
		r.row, r.ts, r.enc = row, ts, nil
	default:
		*rows = slices.Insert(*rows, i, &rightRow{pk: pk, row: row, ts: ts})
	}
}

// against returns the stored rows of side's other side, how many of them
// x of side matches, and whether the join keeps side's and the other
// side's unmatched rows.
func (j *CDC) against(side record.Side, x record.Row) (others []*rightRow, n int, keepS, keepO bool) {
	other := record.Right
	if side == record.Right {
		other = record.Left
	}
	others = *j.rowsOf(other)
	for _, o := range others {
		if j.matches(side, x, o.row) {
			n++
		}
	}
	return others, n, j.spec.Type.keeps(side), j.spec.Type.keeps(other)
}

// flinkAccumulate adds (or, when pk is stored, replaces) a row of side, as
// Flink accumulates a +I/+U record.
func (j *CDC) flinkAccumulate(em *emitter, side record.Side, pk string, x record.Row, ts int64, kind record.Kind) {
	others, n, keepS, keepO := j.against(side, x)
	if n == 0 {
		if keepS {
			j.out(em, record.Insert, side, x, nil)
		}
		j.store(side, pk, x, ts)
		return
	}
	if keepO {
		// An other row with no association loses its padding. The count is
		// over the stored rows, a replaced one included.
		for _, o := range others {
			if j.matches(side, x, o.row) && !j.paired(side, o.row, "", false) {
				j.out(em, record.Delete, side, nil, o)
			}
		}
	}
	k := kind
	if keepS || keepO {
		k = record.Insert
	}
	em.reserve(n)
	for _, o := range others {
		if j.matches(side, x, o.row) {
			j.out(em, k, side, x, o)
		}
	}
	j.store(side, pk, x, ts)
}

// flinkRetract removes the stored row of side with primary key pk, as
// Flink retracts a -U/-D record; nothing when none is stored.
func (j *CDC) flinkRetract(em *emitter, side record.Side, pk string, kind record.Kind) {
	rows := j.rowsOf(side)
	i, found := findRow(*rows, pk)
	if !found {
		return
	}
	x := (*rows)[i].row
	j.store(side, pk, nil, 0)
	others, n, keepS, keepO := j.against(side, x)
	if n == 0 {
		if keepS {
			j.out(em, record.Delete, side, x, nil)
		}
		return
	}
	k := kind
	if keepS {
		k = record.Delete
	}
	em.reserve(n)
	for _, o := range others {
		if j.matches(side, x, o.row) {
			j.out(em, k, side, x, o)
		}
	}
	if keepO {
		for _, o := range others {
			if j.matches(side, x, o.row) && !j.paired(side, o.row, "", false) {
				j.out(em, record.Insert, side, nil, o)
			}
		}
	}
}
