package stream

import (
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// TemporalJoin starts a temporal (as-of) join (Flink's temporal table
// join, seed dynamic-joiner-watermarks): each probe element at time t joins
// the version of its key with the greatest version time <= t. Finish it
// with Process. O is the result type; L, R and K are inferred.
func TemporalJoin[O, L, R any, K comparable](probe *KeyedStream[L, K], versions *KeyedStream[R, K]) *TemporalJoined[O, L, R, K] {
	sameEnv("temporal join", probe.s.env, versions.s.env)
	return &TemporalJoined[O, L, R, K]{a: probe, b: versions, late: newStream[Late[L, R]](probe.s.env)}
}

// TemporalJoined is a temporal join ready to process: inner unless
// LeftOuter, event time unless ProcessingTime.
//
// In event time it runs joins.Temporal: a probe is emitted once the
// watermark passes its time, stamped with it; either side's element behind
// the watermark on arrival is late; versions no probe can reach are
// dropped. With ProcessingTime it runs joins.TemporalLatest: a probe joins
// the version current when it arrives, at once, and nothing is late.
type TemporalJoined[O, L any, R any, K comparable] struct {
	a        *KeyedStream[L, K]
	b        *KeyedStream[R, K]
	outer    bool
	latest   bool
	isDelete func(R) bool
	late     *Stream[Late[L, R]]
}

// LeftOuter emits a probe with no version with v nil.
func (j *TemporalJoined[O, L, R, K]) LeftOuter() *TemporalJoined[O, L, R, K] {
	j.outer = true
	return j
}

// ProcessingTime joins each probe with the latest version at its arrival
// (Flink's lookup-style join against the latest version).
func (j *TemporalJoined[O, L, R, K]) ProcessingTime() *TemporalJoined[O, L, R, K] {
	j.latest = true
	return j
}

// Deletes marks the version elements for which isDelete returns true as
// deletes: from its time on, the key has no version until the next one.
func (j *TemporalJoined[O, L, R, K]) Deletes(isDelete func(R) bool) *TemporalJoined[O, L, R, K] {
	j.isDelete = isDelete
	return j
}

// Late is the late-data side output.
func (j *TemporalJoined[O, L, R, K]) Late() *Stream[Late[L, R]] { return j.late }

// Process makes one result per emitted probe, v nil when it has no version
// (left outer only).
func (j *TemporalJoined[O, L, R, K]) Process(fn func(p L, v *R) O) *Stream[O] {
	env := j.a.s.env
	spec := &joins.TemporalSpec{Type: joins.TimedInner, Left: leftCol, Right: rightCol}
	if j.outer {
		spec.Type = joins.TimedLeftOuter
	}
	if err := spec.Validate(); err != nil {
		env.fail("temporal join", err)
	}
	fresh := func() joins.Timed { return joins.NewTemporal(spec) }
	if j.latest {
		fresh = func() joins.Timed { return joins.NewTemporalLatest(spec) }
	}
	op := newKeyedOp[K](env, 2, fresh)
	rowR := func(v R, ts int64) record.Row {
		if j.isDelete != nil && j.isDelete(v) {
			return nil
		}
		return boxRow(v, ts)
	}
	conv := pairConv(func(l *L, r *R) O { return fn(*l, r) })
	return twoInput(op, j.a.s, j.b.s, j.a.key, j.b.key, boxRow[L], rowR, conv, j.late)
}
