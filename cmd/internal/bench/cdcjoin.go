package bench

import (
	"runtime"
	"slices"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// cdcJob is a changelog join over Debezium lines: the spec, which table feeds
// which side, and an optional row filter applied after decoding (a WHERE on
// one input, which the node cannot express: see Workload.NodeLines).
type cdcJob struct {
	spec   *joins.CDCSpec
	tables map[string]record.Side
	filter func(table string, row record.Row) bool
}

// change decodes line i and finds its side; ok is false for a line the job
// drops (unknown table, filtered out, not decodable).
func (j *cdcJob) change(i int, line []byte) (record.Side, record.Change, bool) {
	ch, err := debezium.Decode(line, record.Position{Source: "in", Offset: int64(i)})
	if err != nil {
		return 0, ch, false
	}
	table := tableOf(line)
	side, ok := j.tables[table]
	if !ok {
		return 0, ch, false
	}
	if j.filter != nil {
		row := ch.After
		if row == nil {
			row = ch.Before
		}
		if !j.filter(table, row) {
			return 0, ch, false
		}
	}
	return side, ch, true
}

// cdcCore is the engine's hot path without actors: decode, route, and one
// keycore.Machine (the changelog join) per key, in one goroutine.
type cdcCore struct {
	j   *cdcJob
	ms  *keycore.Machines
	out []record.Output
	h   Hasher
	res RunResult
}

func (j *cdcJob) engine() Stepper {
	return &cdcCore{j: j, ms: keycore.NewMachines(keycore.MachineSpec{CDC: j.spec})}
}

func (c *cdcCore) Step(i int, line []byte) int {
	side, ch, ok := c.j.change(i, line)
	if !ok {
		return 0
	}
	evs, err := c.j.spec.Route(side, ch)
	if err != nil {
		c.res.Rejected++
		return 0
	}
	n := 0
	for _, e := range evs {
		st := c.ms.Get(e.Key)
		c.out = st.OnEvent(e, c.out[:0])
		for _, o := range c.out {
			c.res.Check.Add(o.Kind, c.h.HashOutput(o, true))
		}
		n += len(c.out)
		c.ms.Stepped(e.Key, st)
	}
	return n
}

func (c *cdcCore) Live() int { return c.ms.Len() }

func (c *cdcCore) Finish() RunResult {
	runtime.KeepAlive(c.ms)
	return c.res
}

// baseline is the same join as a plain Go hash join: maps of rows by join
// key and primary key, the changelog's effect hashed straight from them
// (no output records built), one goroutine, the same decoder.
func (j *cdcJob) baseline(lines [][]byte, probe func(live int)) RunResult {
	b := newBaseJoin(j.spec)
	for i, line := range lines {
		side, ch, ok := j.change(i, line)
		if !ok {
			continue
		}
		b.apply(side, ch)
	}
	b.res.LiveKeys = len(b.left) + len(b.rights)
	probe(b.res.LiveKeys)
	runtime.KeepAlive(b)
	return b.res
}

type baseCol struct {
	name, field string
	side        record.Side
}

type baseJoin struct {
	spec   *joins.CDCSpec
	outer  bool
	cols   []baseCol                        // sorted by name
	left   map[string]record.Row            // join key -> left row
	lkey   map[string]string                // left pk -> join key
	rights map[string]map[string]record.Row // join key -> right pk -> row
	rkey   map[string]string                // right pk -> join key
	h      Hasher
	res    RunResult
}

func newBaseJoin(spec *joins.CDCSpec) *baseJoin {
	b := &baseJoin{spec: spec, outer: spec.Type == joins.LeftOuter,
		left: map[string]record.Row{}, lkey: map[string]string{},
		rights: map[string]map[string]record.Row{}, rkey: map[string]string{}}
	for _, c := range spec.Project {
		b.cols = append(b.cols, baseCol{name: c.Name, field: c.Field, side: c.Side})
	}
	slices.SortFunc(b.cols, func(x, y baseCol) int {
		if x.name < y.name {
			return -1
		}
		if x.name > y.name {
			return 1
		}
		return 0
	})
	return b
}

// emit folds the pair (l, r) (r nil: padded) with sign +1 or -1.
func (b *baseJoin) emit(plus bool, l, r record.Row) {
	var rpk any
	if r != nil {
		rpk = r[b.spec.Right.PK]
	}
	b.h.Begin("["+pkText(l[b.spec.Left.PK])+","+pkText(rpk)+"]", 0)
	for _, c := range b.cols {
		src := l
		if c.side == record.Right {
			src = r
		}
		var v any
		if src != nil {
			v = src[c.field]
		}
		b.h.Col(c.name, v)
	}
	k := record.Delete
	if plus {
		k = record.Insert
	}
	b.res.Check.Add(k, b.h.Sum64())
}

func (b *baseJoin) apply(side record.Side, ch record.Change) {
	s := b.spec
	if side == record.Left {
		if ch.Op == record.OpDelete {
			pk, _ := rowKey(ch.Before, s.Left.PK)
			k, ok := b.lkey[pk]
			if !ok {
				return
			}
			old := b.left[k]
			b.forRights(k, func(r record.Row) { b.emit(false, old, r) }, func() { b.emit(false, old, nil) })
			delete(b.left, k)
			delete(b.lkey, pk)
			return
		}
		pk, ok1 := rowKey(ch.After, s.Left.PK)
		k, ok2 := rowKey(ch.After, s.Left.JoinOn)
		if !ok1 || !ok2 {
			b.res.Rejected++
			return
		}
		if ok, had := b.lkey[pk]; had && ok != k {
			old := b.left[ok]
			b.forRights(ok, func(r record.Row) { b.emit(false, old, r) }, func() { b.emit(false, old, nil) })
			delete(b.left, ok)
		}
		if old := b.left[k]; old != nil {
			b.forRights(k, func(r record.Row) { b.emit(false, old, r) }, func() { b.emit(false, old, nil) })
		}
		row := ch.After
		b.left[k], b.lkey[pk] = row, k
		b.forRights(k, func(r record.Row) { b.emit(true, row, r) }, func() { b.emit(true, row, nil) })
		return
	}
	if ch.Op == record.OpDelete {
		pk, _ := rowKey(ch.Before, s.Right.PK)
		if k, ok := b.rkey[pk]; ok {
			b.rightDelete(k, pk)
		}
		return
	}
	pk, ok1 := rowKey(ch.After, s.Right.PK)
	k, ok2 := rowKey(ch.After, s.Right.JoinOn)
	if !ok1 || !ok2 {
		b.res.Rejected++
		return
	}
	if old, had := b.rkey[pk]; had && old != k {
		b.rightDelete(old, pk)
	}
	rs := b.rights[k]
	if rs == nil {
		rs = map[string]record.Row{}
		b.rights[k] = rs
	}
	if l := b.left[k]; l != nil {
		if old := rs[pk]; old != nil {
			b.emit(false, l, old)
		} else if len(rs) == 0 && b.outer {
			b.emit(false, l, nil)
		}
		b.emit(true, l, ch.After)
	}
	rs[pk], b.rkey[pk] = ch.After, k
}

func (b *baseJoin) rightDelete(k, pk string) {
	rs := b.rights[k]
	old := rs[pk]
	delete(rs, pk)
	delete(b.rkey, pk)
	if len(rs) == 0 {
		delete(b.rights, k)
	}
	if l := b.left[k]; l != nil && old != nil {
		b.emit(false, l, old)
		if len(rs) == 0 && b.outer {
			b.emit(true, l, nil)
		}
	}
}

// forRights calls each for every right row of k, or none when k has none.
func (b *baseJoin) forRights(k string, each func(record.Row), none func()) {
	rs := b.rights[k]
	if len(rs) == 0 {
		if b.outer {
			none()
		}
		return
	}
	for _, r := range rs {
		each(r)
	}
}
