package stream

import (
	"fmt"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// keyedOp drives one keycore.Machine per key (the join with its timers, as
// a key actor's core holds it) and an index of the keys' next timers, as
// replay/ does: it is the key actor of every key of one join or window.
//
// Keys of type K get record.Keys "k" + a 20-digit sequence number in order
// of first appearance, so timers of equal time fire in that order. A key
// whose machine is empty and has no timer is forgotten (and numbered anew
// if it comes back).
type keyedOp[K comparable] struct {
	env     *Env
	ms      *keycore.Machines
	ids     map[K]record.Key
	keys    map[record.Key]K
	next    uint64
	wm      *combiner
	outs    []record.Output
	lates   []joins.Late
	seq     int64
	out     func(o record.Output)
	late    func(l joins.Late)
	forward func(w int64)
}

func newKeyedOp[K comparable](env *Env, inputs int, fresh func() joins.Timed) *keyedOp[K] {
	return &keyedOp[K]{env: env, ms: keycore.NewMachines(keycore.MachineSpec{NewTimed: fresh}),
		ids: map[K]record.Key{}, keys: map[record.Key]K{}, wm: newCombiner(inputs)}
}

func (op *keyedOp[K]) idOf(key K) record.Key {
	id, ok := op.ids[key]
	if !ok {
		op.next++
		id = record.Key(fmt.Sprintf("k%020d", op.next))
		op.ids[key] = id
		op.keys[id] = key
	}
	return id
}

// element applies one element of side to its key's machine.
func (op *keyedOp[K]) element(side record.Side, key K, row record.Row, ts int64) {
	id := op.idOf(key)
	j := op.ms.Get(id)
	op.seq++
	e := joins.Element{Side: side, Ts: ts, Row: row,
		Pos: record.Position{Source: "stream", Partition: int32(side), Offset: op.seq}}
	op.outs, op.lates = j.OnElement(e, op.wm.cur, op.outs[:0], op.lates[:0])
	op.effects(id, op.ms.Stepped(id, j))
}

// effects hands on key id's outputs and late elements of its last step,
// and forgets its id once its machine is gone.
func (op *keyedOp[K]) effects(id record.Key, forgotten bool) {
	for _, o := range op.outs {
		op.out(o)
	}
	for _, l := range op.lates {
		op.env.late++
		op.late(l)
	}
	clear(op.outs)
	clear(op.lates)
	if forgotten {
		delete(op.ids, op.keys[id])
		delete(op.keys, id)
	}
}

// watermark records input i's watermark; when the combined watermark rises
// it fires every due timer in (time, key) order, timers set while firing
// included, then forwards the watermark.
func (op *keyedOp[K]) watermark(i int, w int64) {
	if !op.wm.update(i, w) {
		return
	}
	cur := op.wm.cur
	for {
		id, outs, lates, forgotten, ok := op.ms.FireNext(cur, op.outs[:0], op.lates[:0])
		if !ok {
			break
		}
		op.outs, op.lates = outs, lates
		op.effects(id, forgotten)
	}
	op.forward(cur)
}

// Typed values travel through the machines in rows: the value and its time
// under valueCol, its key under keyCol (for coGroup and windows, whose
// functions see no key otherwise).
const (
	valueCol = "v"
	keyCol   = "k"
	leftCol  = "l" // side names of the pair rows the machines build
	rightCol = "r"
)

type box[T any] struct {
	v  T
	ts int64
}

func boxRow[T any](v T, ts int64) record.Row { return record.Row{valueCol: box[T]{v: v, ts: ts}} }

func boxKeyRow[T any, K comparable](v T, ts int64, key K) record.Row {
	return record.Row{valueCol: box[T]{v: v, ts: ts}, keyCol: key}
}

func unbox[T any](r record.Row) box[T] { return r[valueCol].(box[T]) }

// pairOf reads the pair row {l: left row or nil, r: right row or nil}.
func pairOf[L, R any](row record.Row) (l *box[L], r *box[R]) {
	if x, ok := row[leftCol].(record.Row); ok {
		b := unbox[L](x)
		l = &b
	}
	if x, ok := row[rightCol].(record.Row); ok {
		b := unbox[R](x)
		r = &b
	}
	return l, r
}

// Late is an element a two-input join reported late, with the machine's
// reason (joins.LateWindowClosed, joins.LateBehindWatermark, ...) and its
// time. Exactly one of Left and Right is set: the late element (for a late
// version delete of a temporal join, Right is the deleting element).
type Late[L, R any] struct {
	Left   *L
	Right  *R
	Ts     int64
	Reason string
}

// twoInput wires a two-input keyed machine: a and b keyed by kl and kr
// feed op; outputs go through conv; late elements to late.
func twoInput[K comparable, L, R, O any](op *keyedOp[K], a *Stream[L], b *Stream[R], kl func(L) K, kr func(R) K,
	rowL func(L, int64) record.Row, rowR func(R, int64) record.Row,
	conv func(o record.Output, emit func(O, int64)), late *Stream[Late[L, R]]) *Stream[O] {
	out := newStream[O](a.env)
	sameEnv("join", a.env, b.env)
	var curR *R // the right element being applied (a delete's row is nil)
	op.out = func(o record.Output) { conv(o, out.emit) }
	op.late = func(l joins.Late) {
		x := Late[L, R]{Ts: l.Element.Ts, Reason: l.Reason}
		if l.Element.Side == record.Left {
			v := unbox[L](l.Element.Row).v
			x.Left = &v
		} else if l.Element.Row != nil {
			v := unbox[R](l.Element.Row).v
			x.Right = &v
		} else if curR != nil {
			v := *curR
			x.Right = &v
		}
		late.emit(x, l.Element.Ts)
	}
	op.forward = func(w int64) {
		out.emitWatermark(w)
		late.emitWatermark(w)
	}
	a.subscribe(func(v L, ts int64) { op.element(record.Left, kl(v), rowL(v, ts), ts) },
		func(w int64) { op.watermark(0, w) })
	b.subscribe(func(v R, ts int64) {
		curR = &v
		op.element(record.Right, kr(v), rowR(v, ts), ts)
		curR = nil
	}, func(w int64) { op.watermark(1, w) })
	return out
}
