package joins

import (
	"reflect"
	"slices"

	"github.com/joinery/joinery/record"
)

// The changelog join with a residual condition (CDCSpec.Where): a left row
// and a right row of one key are a pair only when the condition holds for
// them, so a row of a kept side is padded while no row of the other side
// both shares its key and passes the condition with it. Any change can
// flip the condition of every pair it is in, so the key's results are
// recomputed around each event and the difference emitted, in the update
// kinds: a result that goes is -D, one that comes is +I, one that stays
// with a changed row is -U then +U. The retractions come first, in the
// order of the results before the event (right rows by primary key, each
// paired or padded, then the padded left row), then the new results in
// the same order after it. A key's work per event is its number of right
// rows, on either side's change.

// whereResult is one result row of a key: a pair, or one side padded.
type whereResult struct {
	pk       string
	l, r     record.Row
	lts, rts int64
}

// whereResults appends the key's current results to out.
func (j *CDC) whereResults(out []whereResult) []whereResult {
	t, w := j.spec.Type, &j.spec.Where
	l := j.left
	matched := false
	for _, r := range j.rights {
		switch {
		case l != nil && w.match(l, r.row):
			matched = true
			out = append(out, whereResult{pk: j.spec.outputPK(l, r.row), l: l, r: r.row, lts: j.leftTs, rts: r.ts})
		case t.keepsRight():
			out = append(out, whereResult{pk: j.spec.outputPK(nil, r.row), r: r.row, rts: r.ts})
		}
	}
	if l != nil && !matched && t.keepsLeft() {
		out = append(out, whereResult{pk: j.spec.outputPK(l, nil), l: l, lts: j.leftTs})
	}
	return out
}

// whereEvent applies e to the state and emits the difference of the key's
// results.
func (j *CDC) whereEvent(em *emitter, e *record.Event) {
	before := j.whereResults(nil)
	if !j.whereApply(e) {
		return
	}
	after := j.whereResults(nil)
	// The other side's time of a result, for MaxTs, as the input sees it.
	other := func(x *whereResult) int64 {
		if e.Side == record.Left {
			return x.rts
		}
		return x.lts
	}
	find := func(rs []whereResult, pk string) int {
		return slices.IndexFunc(rs, func(x whereResult) bool { return x.pk == pk })
	}
	for i := range before {
		b := &before[i]
		k := find(after, b.pk)
		switch {
		case k < 0:
			em.emit(record.Delete, b.l, b.r, other(b))
		case !sameRow(b.l, after[k].l) || !sameRow(b.r, after[k].r):
			a := &after[k]
			em.reserve(2)
			em.emit(record.UpdateBefore, b.l, b.r, other(b))
			em.emit(record.UpdateAfter, a.l, a.r, other(a))
		}
	}
	for i := range after {
		if a := &after[i]; find(before, a.pk) < 0 {
			em.emit(record.Insert, a.l, a.r, other(a))
		}
	}
}

// sameRow reports whether a and b are the same stored row (the state
// replaces a row on every change, never modifies it in place).
func sameRow(a, b record.Row) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// whereApply applies e to the state as OnEvent does, emitting nothing; it
// reports whether the state changed.
func (j *CDC) whereApply(e *record.Event) bool {
	switch e.Side {
	case record.Left:
		switch e.Op {
		case record.OpCreate, record.OpRead, record.OpUpdate:
			if _, ok := j.pkOf(record.Left, e.After); ok {
				j.left, j.leftTs, j.leftEnc = e.After, e.Ts, nil
				return true
			}
		case record.OpDelete:
			pk, ok := j.pkOf(record.Left, e.Before)
			if stored, sok := j.pkOf(record.Left, j.left); ok && sok && stored == pk {
				j.left, j.leftTs, j.leftEnc = nil, 0, nil
				return true
			}
		}
	case record.Right:
		switch e.Op {
		case record.OpCreate, record.OpRead, record.OpUpdate:
			pk, ok := j.pkOf(record.Right, e.After)
			if !ok {
				return false
			}
			if e.Op == record.OpUpdate {
				if old, ok := j.pkOf(record.Right, e.Before); ok && old != pk {
					j.whereRightDelete(old)
				}
			}
			i, found := j.find(pk)
			if found {
				j.rights[i].row, j.rights[i].ts, j.rights[i].enc = e.After, e.Ts, nil
			} else {
				j.rights = slices.Insert(j.rights, i, &rightRow{pk: pk, row: e.After, ts: e.Ts})
			}
			return true
		case record.OpDelete:
			if pk, ok := j.pkOf(record.Right, e.Before); ok {
				return j.whereRightDelete(pk)
			}
		}
	}
	return false
}

func (j *CDC) whereRightDelete(pk string) bool {
	i, found := j.find(pk)
	if !found {
		return false
	}
	j.rights = slices.Delete(j.rights, i, i+1)
	if len(j.rights) == 0 {
		j.rights = nil
	}
	return true
}
