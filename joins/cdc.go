package joins

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
)

// CDC is the changelog-join state of one join key: the left row (value state,
// nil when absent) and the right rows by primary key (map state, iterated in
// sorted primary-key order so outputs are deterministic). When the left join
// column is not the left primary key (CDCSpec.LeftMany) the left rows are a
// map state too, by primary key (cdc_many.go).
//
// A CDC is not safe for concurrent use. It takes ownership of the rows of the
// events it is given, and the rows it returns or puts in outputs are shared
// with its state: treat them as read-only.
type CDC struct {
	spec    *CDCSpec
	left    record.Row
	leftTs  int64       // left's source time (Event.Ts), kept with MaxTs
	leftEnc []byte      // left's JSON, cached by Snapshot; nil when not yet encoded
	rights  []*rightRow // sorted by pk; pointers, so an insert into a hot key moves 8 bytes a row
	lefts   []*rightRow // the left rows by pk, sorted, when CDCSpec.LeftMany
}

type rightRow struct {
	pk  string
	row record.Row
	ts  int64  // source time (Event.Ts), kept with MaxTs
	enc []byte // row's JSON, cached by Snapshot: rows are never modified in place
}

// NewCDC returns the empty state of one key. spec must be valid (see
// CDCSpec.Validate) and must not change while the CDC is in use.
func NewCDC(spec *CDCSpec) *CDC { return &CDC{spec: spec} }

// Empty reports whether the key holds no row at all, so its state can be
// dropped.
func (j *CDC) Empty() bool { return j.left == nil && len(j.rights) == 0 && len(j.lefts) == 0 }

// Left returns the stored left row, nil when absent. Read-only. A left
// side of many rows (CDCSpec.LeftMany) has none: see Lefts.
func (j *CDC) Left() record.Row { return j.left }

// Lefts returns the stored left rows, sorted by primary key as Rights:
// the one row of Left, or the rows of a left side of many rows. Read-only.
func (j *CDC) Lefts() []record.Row {
	if j.left != nil {
		return []record.Row{j.left}
	}
	if len(j.lefts) == 0 {
		return nil
	}
	out := make([]record.Row, len(j.lefts))
	for i, r := range j.lefts {
		out[i] = r.row
	}
	return out
}

// NumLefts is len(Lefts()), without the copy.
func (j *CDC) NumLefts() int {
	if j.left != nil {
		return 1
	}
	return len(j.lefts)
}

// LeftRow returns the stored left row of a left side of many rows whose
// primary key has the key form pk, nil when there is none. Read-only.
func (j *CDC) LeftRow(pk string) record.Row {
	if i, ok := findRow(j.lefts, pk); ok {
		return j.lefts[i].row
	}
	return nil
}

// EachLeft calls f with each stored left row of a left side of many rows
// and the key form of its primary key, in primary-key order. The rows are
// read-only; f must not change the join.
func (j *CDC) EachLeft(f func(pk string, row record.Row) error) error {
	for _, r := range j.lefts {
		if err := f(r.pk, r.row); err != nil {
			return err
		}
	}
	return nil
}

// Rights returns the stored right rows sorted by primary key (by its key
// form, compared as strings), nil when there are none. The slice is new; the
// rows are read-only.
func (j *CDC) Rights() []record.Row {
	if len(j.rights) == 0 {
		return nil
	}
	out := make([]record.Row, len(j.rights))
	for i, r := range j.rights {
		out[i] = r.row
	}
	return out
}

// NumRights is the number of stored right rows (len(Rights()), without
// the copy).
func (j *CDC) NumRights() int { return len(j.rights) }

// Right returns the stored right row whose primary key has the key form
// pk (record.KeyOf), nil when there is none. Read-only.
func (j *CDC) Right(pk string) record.Row {
	if i, ok := j.find(pk); ok {
		return j.rights[i].row
	}
	return nil
}

// EachRight calls f with each stored right row and the key form of its
// primary key, in Rights' order, without copying the slice. The rows are
// read-only; f must not change the join.
func (j *CDC) EachRight(f func(pk string, row record.Row) error) error {
	for _, r := range j.rights {
		if err := f(r.pk, r.row); err != nil {
			return err
		}
	}
	return nil
}

// OnEvent applies one event routed to this key by CDCSpec.Route and appends
// the changelog records it makes to out, returning the extended slice. The
// n-th record appended by this call has ID record.OutputID(e, n).
//
// Upserts are c, r and u; d deletes. Retractions always carry the stored row,
// never the event's Before, which may be partial. OnEvent trusts Route: an
// event Route would not make (unknown side or op, a missing row, a missing or
// non-scalar primary key) changes nothing and appends nothing.
func (j *CDC) OnEvent(e record.Event, out []record.Output) []record.Output {
	if !j.spec.MaxTs {
		e.Ts = 0
	}
	// The emitter holds a copy of e: a pointer to it would move e to the
	// heap, one allocation per event.
	em := emitter{spec: j.spec, e: e, base: len(out), out: out}
	if j.spec.general() {
		j.manyEvent(&em, &em.e)
		return em.out
	}
	if !j.spec.Where.IsZero() {
		j.whereEvent(&em, &em.e)
		return em.out
	}
	if j.spec.Kinds == KindsFlink {
		j.flinkEvent(&em, &em.e)
		return em.out
	}
	switch e.Side {
	case record.Left:
		switch e.Op {
		case record.OpCreate, record.OpRead, record.OpUpdate:
			if _, ok := j.pkOf(record.Left, e.After); ok {
				j.leftUpsert(&em, e.After, e.Ts)
			}
		case record.OpDelete:
			if pk, ok := j.pkOf(record.Left, e.Before); ok {
				j.leftDelete(&em, pk)
			}
		}
	case record.Right:
		switch e.Op {
		case record.OpCreate, record.OpRead, record.OpUpdate:
			pk, ok := j.pkOf(record.Right, e.After)
			if !ok {
				break
			}
			if e.Op == record.OpUpdate {
				// A primary-key change within an update: delete the old row first.
				if old, ok := j.pkOf(record.Right, e.Before); ok && old != pk {
					j.rightDelete(&em, old)
				}
			}
			j.rightUpsert(&em, pk, e.After, e.Ts)
		case record.OpDelete:
			if pk, ok := j.pkOf(record.Right, e.Before); ok {
				j.rightDelete(&em, pk)
			}
		}
	}
	return em.out
}

// pkOf returns the key form of row's primary key on the given side.
func (j *CDC) pkOf(side record.Side, row record.Row) (string, bool) {
	if row == nil {
		return "", false
	}
	v, ok := row[j.spec.side(side).PK]
	if !ok || v == nil {
		return "", false
	}
	k, ok := record.KeyOf(v)
	return string(k), ok
}

func (j *CDC) leftUpsert(em *emitter, row record.Row, ts int64) {
	old, t := j.left, j.spec.Type
	switch {
	case old != nil && len(j.rights) > 0:
		em.reserve(2 * len(j.rights))
		for _, r := range j.rights {
			em.emit(record.UpdateBefore, old, r.row, r.ts)
			em.emit(record.UpdateAfter, row, r.row, r.ts)
		}
	case old != nil && t.keepsLeft():
		em.reserve(2)
		em.emit(record.UpdateBefore, old, nil, 0)
		em.emit(record.UpdateAfter, row, nil, 0)
	case old == nil && len(j.rights) > 0:
		gone, came := record.Insert, record.Insert
		n := len(j.rights)
		if t.keepsRight() {
			gone, came = j.padSwap()
			n *= 2
		}
		em.reserve(n)
		for _, r := range j.rights {
			if t.keepsRight() {
				em.emit(gone, nil, r.row, r.ts)
			}
			em.emit(came, row, r.row, r.ts)
		}
	case old == nil && t.keepsLeft():
		em.emit(record.Insert, row, nil, 0)
	}
	j.left, j.leftTs, j.leftEnc = row, ts, nil
}

// leftDelete removes the stored left row if its primary key is pk. Another
// left row at this key (possible only if the left join column is not unique)
// is left alone.
func (j *CDC) leftDelete(em *emitter, pk string) {
	old := j.left
	if stored, ok := j.pkOf(record.Left, old); !ok || stored != pk {
		return
	}
	switch {
	case len(j.rights) > 0:
		gone, came := record.Delete, record.Insert
		n := len(j.rights)
		if j.spec.Type.keepsRight() {
			gone, came = j.padSwap()
			n *= 2
		}
		em.reserve(n)
		for _, r := range j.rights {
			em.emit(gone, old, r.row, r.ts)
			if j.spec.Type.keepsRight() {
				em.emit(came, nil, r.row, r.ts)
			}
		}
	case j.spec.Type.keepsLeft():
		em.emit(record.Delete, old, nil, 0)
	}
	j.left, j.leftTs, j.leftEnc = nil, 0, nil
}

func (j *CDC) find(pk string) (int, bool) {
	i := sort.Search(len(j.rights), func(i int) bool { return j.rights[i].pk >= pk })
	return i, i < len(j.rights) && j.rights[i].pk == pk
}

func (j *CDC) rightUpsert(em *emitter, pk string, row record.Row, ts int64) {
	i, found := j.find(pk)
	l, t, lts := j.left, j.spec.Type, j.leftTs
	switch {
	case l != nil && found:
		em.reserve(2)
		em.emit(record.UpdateBefore, l, j.rights[i].row, lts)
		em.emit(record.UpdateAfter, l, row, lts)
	case l != nil && len(j.rights) == 0 && t.keepsLeft():
		em.reserve(2)
		gone, came := j.padSwap()
		em.emit(gone, l, nil, lts)
		em.emit(came, l, row, lts)
	case l != nil:
		em.emit(record.Insert, l, row, lts)
	case t.keepsRight() && found:
		em.reserve(2)
		em.emit(record.UpdateBefore, nil, j.rights[i].row, 0)
		em.emit(record.UpdateAfter, nil, row, 0)
	case t.keepsRight():
		em.emit(record.Insert, nil, row, 0)
	}
	if found {
		j.rights[i].row, j.rights[i].ts, j.rights[i].enc = row, ts, nil
		return
	}
	j.rights = slices.Insert(j.rights, i, &rightRow{pk: pk, row: row, ts: ts})
}

func (j *CDC) rightDelete(em *emitter, pk string) {
	i, found := j.find(pk)
	if !found {
		return
	}
	old := j.rights[i].row
	j.rights = slices.Delete(j.rights, i, i+1)
	if len(j.rights) == 0 {
		j.rights = nil
	}
	l, t := j.left, j.spec.Type
	switch {
	case l != nil && len(j.rights) == 0 && t.keepsLeft():
		em.reserve(2)
		gone, came := j.padSwap()
		em.emit(gone, l, old, j.leftTs)
		em.emit(came, l, nil, j.leftTs)
	case l != nil:
		em.emit(record.Delete, l, old, j.leftTs)
	case t.keepsRight():
		em.emit(record.Delete, nil, old, 0)
	}
}

// padSwap returns the kinds of a result row that replaces another of the
// same left (or, in a full join, right) row, where one side turns from padded
// to matched or back: the old row's and the new one's. KindsKafka makes it
// one update, Change(new, old) in Kafka Streams' terms: -U then +U; the
// other conventions -D then +I.
func (j *CDC) padSwap() (gone, came record.Kind) {
	if j.spec.Kinds == KindsKafka {
		return record.UpdateBefore, record.UpdateAfter
	}
	return record.Delete, record.Insert
}

// emitter appends the outputs of one OnEvent call.
type emitter struct {
	spec *CDCSpec
	e    record.Event
	base int
	out  []record.Output
}

// reserve makes room for n more outputs at once (one growth of the slice,
// not one per doubling).
func (m *emitter) reserve(n int) { m.out = slices.Grow(m.out, n) }

// emit appends one output; otherTs is the source time of the row of the
// other side than the input's in the pair (0 when padded or unknown), so
// with MaxTs the output's Ts is max(input's time, otherTs).
func (m *emitter) emit(k record.Kind, l, r record.Row, otherTs int64) {
	var ts int64
	if m.spec.MaxTs {
		ts = max(m.e.Ts, otherTs)
	}
	m.out = append(m.out, record.Output{
		ID:   record.OutputID(m.e, len(m.out)-m.base),
		Kind: k,
		PK:   m.spec.outputPK(l, r),
		Row:  m.spec.outputRow(l, r),
		Ts:   ts,
	})
}

// outputPK is the result's primary key, the JSON array [left PK, right PK]
// with null for a padded side; in a foreign-key join the JSON of the left
// PK alone.
func (s *CDCSpec) outputPK(l, r record.Row) string {
	var b strings.Builder
	if s.ForeignKey {
		writePKValue(&b, l, s.Left.PK)
		return b.String()
	}
	b.Grow(32) // one allocation for the usual two numbers, not one per growth
	b.WriteByte('[')
	writePKValue(&b, l, s.Left.PK)
	b.WriteByte(',')
	writePKValue(&b, r, s.Right.PK)
	b.WriteByte(']')
	return b.String()
}

func writePKValue(b *strings.Builder, row record.Row, col string) {
	var v any
	if row != nil {
		v = row[col]
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case json.Number:
		if jsonenc.ValidNumber(string(x)) || x != "" && (x[0] == '-' || x[0] >= '0' && x[0] <= '9') && json.Valid([]byte(x)) {
			b.WriteString(string(x))
			return
		}
		writeJSON(b, string(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	default:
		writeJSON(b, v)
	}
}

func writeJSON(b *strings.Builder, v any) {
	enc, err := json.Marshal(v)
	if err != nil {
		// Not JSON-encodable (a NaN, say): fall back to its key form, quoted.
		k, _ := record.KeyOf(v)
		enc, _ = json.Marshal(string(k))
	}
	b.Write(enc)
}

// outputRow projects a joined pair; a nil row is a null-padded side.
func (s *CDCSpec) outputRow(l, r record.Row) record.Row {
	return projectPair(s.Left.Name, s.Right.Name, s.Project, l, r)
}

// rowValue keeps a padded side an untyped nil, never a typed nil Row, so that
// outputs compare equal with reflect.DeepEqual.
func rowValue(r record.Row) any {
	if r == nil {
		return nil
	}
	return r
}

func sortRights(rs []*rightRow) {
	slices.SortFunc(rs, func(a, b *rightRow) int { return strings.Compare(a.pk, b.pk) })
}
