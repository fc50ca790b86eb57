package joins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
)

// Multi is the state of one join key of a multi-way changelog join: every
// table's rows by primary key (sorted, so outputs are deterministic). No
// intermediate result is kept: outputs are made from the rows when a change
// arrives.
//
// The changelog follows the two-way CDC join's rules (see CDC): an update
// of a stored row retracts each result row it is in with -U and re-adds it
// with +U; a table that gets its first row turns each null-padded result
// row (left join) into -D then +I of the joined one, and back when it loses
// its last row; a result row that appears or disappears otherwise is +I or
// -D. A result row exists only while the driving table and every inner
// table hold a row at the key.
//
// An output's primary key is the JSON array of every table's primary key
// (null for a padded table), [users.id, domains.id, settings.id]; with the
// join key first when the driving table is not keyed by its primary key
// (KeyInPK).
//
// A Multi is not safe for concurrent use. It takes ownership of its events'
// rows; rows it returns or outputs are shared with its state: read-only.
type Multi struct {
	spec   *MultiSpec
	tables [][]*rightRow // per table, sorted by pk
	combo  []record.Row  // scratch: one result's rows
}

// NewMulti returns the empty state of one key. spec must be valid and must
// not change while the Multi is in use.
func NewMulti(spec *MultiSpec) *Multi {
	return &Multi{spec: spec, tables: make([][]*rightRow, len(spec.Tables))}
}

// Empty reports whether the key holds no row of any table.
func (m *Multi) Empty() bool {
	for _, t := range m.tables {
		if len(t) > 0 {
			return false
		}
	}
	return true
}

// Rows returns table i's stored rows sorted by primary key (key form,
// compared as strings), nil when none. The slice is new; rows read-only.
func (m *Multi) Rows(i int) []record.Row {
	if i < 0 || i >= len(m.tables) || len(m.tables[i]) == 0 {
		return nil
	}
	out := make([]record.Row, len(m.tables[i]))
	for j, r := range m.tables[i] {
		out[j] = r.row
	}
	return out
}

// OnEvent applies one event routed to this key by MultiSpec.Route and
// appends the changelog records it makes to out. The n-th record appended
// by this call has ID record.OutputID(e, n). Upserts are c, r and u; d
// deletes. Retractions carry the stored rows, never the event's Before. An
// event Route would not make changes nothing and appends nothing.
func (m *Multi) OnEvent(e record.Event, out []record.Output) []record.Output {
	i := int(e.Side)
	if i >= len(m.tables) {
		return out
	}
	em := multiEmitter{spec: m.spec, e: e, base: len(out), out: out} // a copy of e: see CDC.OnEvent
	switch e.Op {
	case record.OpCreate, record.OpRead, record.OpUpdate:
		pk, ok := m.pkOf(i, e.After)
		if !ok {
			break
		}
		if e.Op == record.OpUpdate {
			if old, ok := m.pkOf(i, e.Before); ok && old != pk {
				m.delete(&em, i, old)
			}
		}
		m.upsert(&em, i, pk, e.After)
	case record.OpDelete:
		if pk, ok := m.pkOf(i, e.Before); ok {
			m.delete(&em, i, pk)
		}
	}
	return em.out
}

func (m *Multi) pkOf(i int, row record.Row) (string, bool) {
	if row == nil {
		return "", false
	}
	v, ok := row[m.spec.Tables[i].PK]
	if !ok || v == nil {
		return "", false
	}
	k, ok := record.KeyOf(v)
	return string(k), ok
}

func (m *Multi) find(i int, pk string) (int, bool) {
	rs := m.tables[i]
	j, _ := slices.BinarySearchFunc(rs, pk, func(r *rightRow, pk string) int { return strings.Compare(r.pk, pk) })
	return j, j < len(rs) && rs[j].pk == pk
}

// padded reports whether table i, when it holds no row, is null-padded in
// results (a left-joined table) rather than removing them.
func (m *Multi) padded(i int) bool { return i > 0 && m.spec.Tables[i].Kind == LeftOuter }

func (m *Multi) upsert(em *multiEmitter, i int, pk string, row record.Row) {
	j, found := m.find(i, pk)
	switch {
	case found:
		old := m.tables[i][j].row
		m.each(i, func(c []record.Row) {
			c[i] = old
			em.emit(record.UpdateBefore, c)
			c[i] = row
			em.emit(record.UpdateAfter, c)
		})
		m.tables[i][j].row, m.tables[i][j].enc = row, nil
		return
	case len(m.tables[i]) == 0 && m.padded(i):
		m.each(i, func(c []record.Row) {
			c[i] = nil
			em.emit(record.Delete, c)
			c[i] = row
			em.emit(record.Insert, c)
		})
	default:
		m.each(i, func(c []record.Row) {
			c[i] = row
			em.emit(record.Insert, c)
		})
	}
	m.tables[i] = slices.Insert(m.tables[i], j, &rightRow{pk: pk, row: row})
}

func (m *Multi) delete(em *multiEmitter, i int, pk string) {
	j, found := m.find(i, pk)
	if !found {
		return
	}
	old := m.tables[i][j].row
	m.tables[i] = slices.Delete(m.tables[i], j, j+1)
	if len(m.tables[i]) == 0 {
		m.tables[i] = nil
	}
	pad := len(m.tables[i]) == 0 && m.padded(i)
	m.each(i, func(c []record.Row) {
		c[i] = old
		em.emit(record.Delete, c)
		if pad {
			c[i] = nil
			em.emit(record.Insert, c)
		}
	})
}

// each calls f with every combination of the other tables' rows (table
// skip's slot is for f to fill), in order: table 0's rows outermost, each
// table's by primary key; an empty left-joined table contributes one nil
// (padding); an empty driving or inner table makes no combination at all.
// f may change c[skip] only.
func (m *Multi) each(skip int, f func(c []record.Row)) {
	n := len(m.tables)
	for k := range n {
		if k != skip && len(m.tables[k]) == 0 && !m.padded(k) {
			return
		}
	}
	if cap(m.combo) < n {
		m.combo = make([]record.Row, n)
	}
	c := m.combo[:n]
	idx := make([]int, n)
	for {
		for k := range n {
			if k == skip {
				continue
			}
			if len(m.tables[k]) == 0 {
				c[k] = nil
			} else {
				c[k] = m.tables[k][idx[k]].row
			}
		}
		f(c)
		// Advance the odometer, the last table fastest.
		k := n - 1
		for ; k >= 0; k-- {
			if k == skip {
				continue
			}
			if idx[k]+1 < len(m.tables[k]) {
				idx[k]++
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			clear(c)
			return
		}
	}
}

type multiEmitter struct {
	spec *MultiSpec
	e    record.Event
	base int
	out  []record.Output
}

func (m *multiEmitter) emit(k record.Kind, rows []record.Row) {
	m.out = append(m.out, record.Output{
		ID:   record.OutputID(m.e, len(m.out)-m.base),
		Kind: k,
		PK:   m.spec.outputPK(rows),
		Row:  m.spec.outputRow(rows),
	})
}

// MultiSnapshotVersion is the first byte of every Multi snapshot.
const MultiSnapshotVersion byte = 1

// multiSnap is the body of a version 1 snapshot, JSON after the version
// byte: one object per table, its rows by primary key (key form).
type multiSnap struct {
	T []map[string]record.Row `json:"t"`
}

// Snapshot encodes the state: MultiSnapshotVersion then JSON as
// encoding/json encodes a multiSnap (sorted keys, no HTML escaping), so
// equal states encode to equal bytes. Each row's JSON is cached until the
// row changes. Rows must be JSON-encodable (Snapshot panics otherwise).
func (m *Multi) Snapshot() []byte {
	size := 16
	for _, t := range m.tables {
		for _, r := range t {
			size += len(r.pk) + len(r.enc) + 4
		}
	}
	buf := make([]byte, 0, size)
	buf = append(buf, MultiSnapshotVersion)
	buf = append(buf, `{"t":[`...)
	for i, t := range m.tables {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '{')
		for j, r := range t {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = jsonenc.AppendString(buf, r.pk)
			buf = append(buf, ':')
			if r.enc == nil {
				r.enc = mustJSON(r.row)
			}
			buf = append(buf, r.enc...)
		}
		buf = append(buf, '}')
	}
	return append(buf, "]}"...)
}

// Restore replaces the state with the one b encodes. On error (a wrapped
// ErrBadSnapshot) the state is unchanged. Numbers come back as json.Number.
func (m *Multi) Restore(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty", ErrBadSnapshot)
	}
	if b[0] != MultiSnapshotVersion {
		return fmt.Errorf("%w: unknown multi-way version %d (want %d)", ErrBadSnapshot, b[0], MultiSnapshotVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(b[1:]))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var s multiSnap
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing data after the state", ErrBadSnapshot)
	}
	if len(s.T) != len(m.spec.Tables) {
		return fmt.Errorf("%w: %d tables, the join has %d", ErrBadSnapshot, len(s.T), len(m.spec.Tables))
	}
	tables := make([][]*rightRow, len(s.T))
	for i, rows := range s.T {
		for pk, row := range rows {
			got, ok := m.pkOf(i, row)
			if !ok || got != pk {
				return fmt.Errorf("%w: table %q row %q: %q is not its primary key", ErrBadSnapshot, m.spec.Tables[i].Name, pk, m.spec.Tables[i].PK)
			}
			tables[i] = append(tables[i], &rightRow{pk: pk, row: row})
		}
		sortRights(tables[i])
	}
	m.tables = tables
	return nil
}
