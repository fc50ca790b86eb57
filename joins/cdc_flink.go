package joins

import (
	"slices"

	"github.com/joinery/joinery/record"
)

// The changelog join with Flink's row kinds (CDCSpec.Kinds == KindsFlink):
// Flink's JoinHelper.processJoin, which StreamingJoinOperator runs for every
// input record, with a Debezium change as the records Flink's changelog
// source makes of it: c and r are +I; u is -U of the stored row then +U of
// the new one; d is -D of the stored row. The left side holds one row per
// key, so a right row is associated with at most one left row: its number
// of associations is 1 while a left row is there, else 0; the left row's is
// the number of right rows.
//
// A change without a Before of a stored row (a bare +U of an upsert source,
// a repeated insert) replaces the row without retracting it, as Flink's
// join does when its input's unique key finds the record in state
// (replacesRecordInState): no association changes. Retractions carry the
// stored row, never the event's partial Before, and a retraction of a row
// that is not stored does nothing (Flink would forward it); otherwise the
// kinds and their order are Flink's:
//
//	accumulate a row of an outer side:  no match: +I[row+null];
//	                                    else -D[null+other] for each other
//	                                    row of an outer side with no
//	                                    association, then +I[row+other]s
//	accumulate a row of an inner side:  -D[null+other] as above, then
//	                                    +I[row+other]s when the other side is
//	                                    outer, else the input's kind (+I/+U)
//	retract a row of an outer side:     no match: -D[row+null]; else
//	                                    -D[row+other]s
//	retract a row of an inner side:     the input's kind (-U/-D)[row+other]s
//	then, either way, +I[null+other] for each other row of an outer side
//	whose only association this was.

func (j *CDC) flinkEvent(em *emitter, e *record.Event) {
	switch e.Side {
	case record.Left:
		switch e.Op {
		case record.OpCreate, record.OpRead, record.OpUpdate:
			if _, ok := j.pkOf(record.Left, e.After); !ok {
				return
			}
			kind := record.Insert
			if e.Op == record.OpUpdate {
				kind = record.UpdateAfter
			}
			switch {
			case j.left != nil && e.Before == nil:
				// An upsert (a bare +U, or a repeated insert): it replaces
				// the stored row without retracting it.
				j.flinkLeftAccumulate(em, e.After, e.Ts, kind, true)
			case j.left != nil:
				j.flinkLeftRetract(em, record.UpdateBefore)
				j.flinkLeftAccumulate(em, e.After, e.Ts, record.UpdateAfter, false)
			default:
				j.flinkLeftAccumulate(em, e.After, e.Ts, kind, false)
			}
		case record.OpDelete:
			pk, ok := j.pkOf(record.Left, e.Before)
			if !ok {
				return
			}
			if stored, ok := j.pkOf(record.Left, j.left); ok && stored == pk {
				j.flinkLeftRetract(em, record.Delete)
			}
		}
	case record.Right:
		switch e.Op {
		case record.OpCreate, record.OpRead, record.OpUpdate:
			pk, ok := j.pkOf(record.Right, e.After)
			if !ok {
				return
			}
			kind := record.Insert
			if e.Op == record.OpUpdate {
				kind = record.UpdateAfter
				if old, ok := j.pkOf(record.Right, e.Before); ok && old != pk {
					j.flinkRightRetract(em, old, record.UpdateBefore)
				}
			}
			_, found := j.find(pk)
			switch {
			case found && e.Before == nil:
				j.flinkRightAccumulate(em, pk, e.After, e.Ts, kind) // an upsert: replaces
			case found:
				j.flinkRightRetract(em, pk, record.UpdateBefore)
				j.flinkRightAccumulate(em, pk, e.After, e.Ts, record.UpdateAfter)
			default:
				j.flinkRightAccumulate(em, pk, e.After, e.Ts, kind)
			}
		case record.OpDelete:
			if pk, ok := j.pkOf(record.Right, e.Before); ok {
				j.flinkRightRetract(em, pk, record.Delete)
			}
		}
	}
}

// flinkLeftAccumulate adds row; replaced: it replaces the stored left row
// (an upsert), so the right rows already have their association.
func (j *CDC) flinkLeftAccumulate(em *emitter, row record.Row, ts int64, kind record.Kind, replaced bool) {
	leftOuter, rightOuter := j.spec.Type.keepsLeft(), j.spec.Type.keepsRight()
	switch {
	case len(j.rights) == 0:
		if leftOuter {
			em.emit(record.Insert, row, nil, 0)
		}
	default:
		if rightOuter && !replaced { // no left row: every right row has no association
			for _, r := range j.rights {
				em.emit(record.Delete, nil, r.row, r.ts)
			}
		}
		k := kind
		if leftOuter || rightOuter {
			k = record.Insert
		}
		for _, r := range j.rights {
			em.emit(k, row, r.row, r.ts)
		}
	}
	j.left, j.leftTs, j.leftEnc = row, ts, nil
}

func (j *CDC) flinkLeftRetract(em *emitter, kind record.Kind) {
	old := j.left
	leftOuter, rightOuter := j.spec.Type.keepsLeft(), j.spec.Type.keepsRight()
	j.left, j.leftTs, j.leftEnc = nil, 0, nil
	if len(j.rights) == 0 {
		if leftOuter {
			em.emit(record.Delete, old, nil, 0)
		}
		return
	}
	k := kind
	if leftOuter {
		k = record.Delete
	}
	for _, r := range j.rights {
		em.emit(k, old, r.row, r.ts)
	}
	if rightOuter {
		for _, r := range j.rights {
			em.emit(record.Insert, nil, r.row, r.ts)
		}
	}
}

func (j *CDC) flinkRightAccumulate(em *emitter, pk string, row record.Row, ts int64, kind record.Kind) {
	leftOuter, rightOuter := j.spec.Type.keepsLeft(), j.spec.Type.keepsRight()
	l, lts := j.left, j.leftTs
	switch {
	case l == nil:
		if rightOuter {
			em.emit(record.Insert, nil, row, 0)
		}
	default:
		if leftOuter && len(j.rights) == 0 {
			em.emit(record.Delete, l, nil, lts)
		}
		k := kind
		if leftOuter || rightOuter {
			k = record.Insert
		}
		em.emit(k, l, row, lts)
	}
	i, found := j.find(pk)
	if found { // an upsert: the row keeps its association
		j.rights[i].row, j.rights[i].ts, j.rights[i].enc = row, ts, nil
		return
	}
	j.rights = slices.Insert(j.rights, i, &rightRow{pk: pk, row: row, ts: ts})
}

func (j *CDC) flinkRightRetract(em *emitter, pk string, kind record.Kind) {
	i, found := j.find(pk)
	if !found {
		return
	}
	old := j.rights[i].row
	j.rights = slices.Delete(j.rights, i, i+1)
	if len(j.rights) == 0 {
		j.rights = nil
	}
	leftOuter, rightOuter := j.spec.Type.keepsLeft(), j.spec.Type.keepsRight()
	l, lts := j.left, j.leftTs
	if l == nil {
		if rightOuter {
			em.emit(record.Delete, nil, old, 0)
		}
		return
	}
	k := kind
	if rightOuter {
		k = record.Delete
	}
	em.emit(k, l, old, lts)
	if leftOuter && len(j.rights) == 0 {
		em.emit(record.Insert, l, nil, lts)
	}
}
