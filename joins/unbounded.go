package joins

import "fmt"

// UnboundedSpec describes a regular (unbounded) stream-stream join: a left
// row and a right row of one key match whatever their times (Flink SQL's
// regular join, Spark's stream-stream join without a time condition), and
// state is bounded by a time-to-live in event time: a row is kept until the
// watermark passes ts + TTL (Flink's table.exec.state.ttl, measured in
// event time so that a replay gives the same answer). Two rows meet only
// while the earlier one is kept.
//
// Matches are emitted at once, stamped max(l.ts, r.ts); a row of an outer
// side that matched nothing is emitted padded, stamped with its own time,
// when it expires — append-only, never a padded row retracted later (Flink's
// regular outer join emits the padded row first and retracts it on a
// match). Where and Late work as in TimeBoundedSpec.
//
// It is a plain value: fill it, call Validate, then share a pointer to it,
// read-only, among all keys' joins.
type UnboundedSpec struct {
	Type        TimedJoinType
	Left, Right string
	// TTL (ms, > 0) keeps each row until the watermark passes ts + TTL;
	// NoTTL keeps rows for ever (until the input ends: outer rows are
	// padded then).
	TTL     int64
	Project []Column
	Where   Condition
	Late    LateRule
}

// Validate reports every problem of the spec, joined, each naming its
// field.
func (s *UnboundedSpec) Validate() error {
	if s == nil {
		return fmt.Errorf("joins: nil unbounded join spec")
	}
	var c collector
	if !s.Type.valid() {
		c.bad("type", "unknown join type %d (want inner, left, right, full or semi)", int(s.Type))
	}
	validateSemi(&c, s.Type, s.Project)
	if s.TTL <= 0 {
		c.bad("ttl", "must be positive (the state of an unbounded join needs a bound), got %d", s.TTL)
	}
	validateLate(&c, s.Late, true)
	validateShape(c.bad, s.Left, s.Right, s.Project, nil, nil)
	return c.err()
}

// NewUnbounded returns the empty state of one key of an unbounded join: a
// TimeBounded whose range is the whole buffer and whose rows expire at
// ts + TTL. Output ids are unbounded|leftPos|rightPos|ts|0 (ts the output's
// time). spec must be valid and must not change while the join is in use.
func NewUnbounded(spec *UnboundedSpec) *TimeBounded {
	return &TimeBounded{typ: spec.Type, lo: -spec.TTL, hi: spec.TTL, all: true, kind: "unbounded",
		where: spec.Where, rule: spec.Late,
		shape: &pairShape{left: spec.Left, right: spec.Right, project: spec.Project, semi: spec.Type.semi()}}
}
