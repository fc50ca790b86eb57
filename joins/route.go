package joins

import (
	"fmt"

	"github.com/joinery/joinery/record"
)

// Reasons a change cannot be routed, the values of RouteError.Reason. They are
// stable and low-cardinality, fit for a metric label.
const (
	ReasonBadSide          = "bad side"            // side is neither left nor right
	ReasonUnknownOp        = "unknown op"          // op is not c, r, u or d
	ReasonMissingAfter     = "missing after"       // c, r or u without an after row
	ReasonMissingBefore    = "missing before"      // d without a before row
	ReasonJoinMissing      = "join column missing" // the after row lacks the join column
	ReasonJoinNull         = "join column null"
	ReasonJoinNotScalar    = "join column not scalar" // an object or array
	ReasonPKMissing        = "pk column missing"
	ReasonPKNull           = "pk column null"
	ReasonPKNotScalar      = "pk column not scalar"
	ReasonDeleteUnroutable = "delete before lacks join column"
)

// RouteError says why CDCSpec.Route refused a change. Reason is one of the
// Reason constants; callers count by it (errors.As, then Reason).
type RouteError struct {
	Reason string
	Side   record.Side
	Op     record.Op
	Pos    record.Position
	Row    string // "before" or "after" when the problem is in a row
	Column string // the column at fault, if any
}

func (e *RouteError) Error() string {
	msg := fmt.Sprintf("joins: cannot route %s change op %q at %s: %s", e.Side, e.Op.String(), e.Pos, e.Reason)
	if e.Column != "" {
		msg += fmt.Sprintf(" (%s.%s)", e.Row, e.Column)
	} else if e.Row != "" {
		msg += " (" + e.Row + ")"
	}
	if e.Reason == ReasonDeleteUnroutable {
		msg += ": a before row holding only the primary key cannot be routed to its join key; capture full before images (e.g. REPLICA IDENTITY FULL)"
	}
	return msg
}

// Route turns one change of one side into the events for the join keys it
// touches. It is pure and does not retain c's rows beyond the returned events.
//
//   - c, r: one event at the key of After.
//   - u: one event at the key of After with Before and After, unless Before
//     holds the join column with another key: then a d event (Seq 0, Before,
//     which must hold the primary key) at the old key and a c event (Seq 1,
//     After) at the new one. A Before without the join column (a partial
//     Debezium before) is taken to mean the key did not change.
//   - d: one event at the key of Before, which must hold the join column.
//
// Rows must hold a non-null scalar primary key and join column where they are
// used; anything else is a *RouteError. Every event carries c.Pos and side.
func (s *CDCSpec) Route(side record.Side, c record.Change) ([]record.Event, error) {
	return s.AppendRoute(nil, side, c)
}

// AppendRoute is Route appending the events to dst (a caller's buffer,
// reused from one change to the next: no slice per change). On an error
// it returns dst unchanged.
func (s *CDCSpec) AppendRoute(dst []record.Event, side record.Side, c record.Change) ([]record.Event, error) {
	fail := func(reason, row, col string) ([]record.Event, error) {
		return dst, &RouteError{Reason: reason, Side: side, Op: c.Op, Pos: c.Pos, Row: row, Column: col}
	}
	if side != record.Left && side != record.Right {
		return fail(ReasonBadSide, "", "")
	}
	ss := s.side(side)
	ev := record.Event{Side: side, Op: c.Op, Pos: c.Pos, Ts: c.TsMs}
	switch c.Op {
	case record.OpCreate, record.OpRead, record.OpUpdate:
		if c.After == nil {
			return fail(ReasonMissingAfter, "after", "")
		}
		key, reason := columnKey(c.After, ss.JoinOn, true)
		if reason != "" {
			return fail(joinReason(reason), "after", ss.JoinOn)
		}
		if _, reason := columnKey(c.After, ss.PK, true); reason != "" {
			return fail(pkReason(reason), "after", ss.PK)
		}
		ev.Key, ev.After = key, c.After
		if c.Op != record.OpUpdate {
			return append(dst, ev), nil
		}
		ev.Before = c.Before
		if c.Before == nil {
			return append(dst, ev), nil
		}
		if _, reason := columnKey(c.Before, ss.PK, false); reason != "" {
			return fail(pkReason(reason), "before", ss.PK)
		}
		if !has(c.Before, ss.JoinOn) {
			return append(dst, ev), nil // a partial before: assume the key is unchanged
		}
		old, reason := columnKey(c.Before, ss.JoinOn, true)
		if reason != "" {
			return fail(joinReason(reason), "before", ss.JoinOn)
		}
		if old == key {
			return append(dst, ev), nil
		}
		if !has(c.Before, ss.PK) {
			// The retraction at the old key needs the row's primary key.
			return fail(ReasonPKMissing, "before", ss.PK)
		}
		del := record.Event{Key: old, Side: side, Op: record.OpDelete, Before: c.Before, Pos: c.Pos, Seq: 0, Ts: c.TsMs}
		ins := record.Event{Key: key, Side: side, Op: record.OpCreate, After: c.After, Pos: c.Pos, Seq: 1, Ts: c.TsMs}
		return append(dst, del, ins), nil
	case record.OpDelete:
		if c.Before == nil {
			return fail(ReasonMissingBefore, "before", "")
		}
		if !has(c.Before, ss.JoinOn) {
			return fail(ReasonDeleteUnroutable, "before", ss.JoinOn)
		}
		key, reason := columnKey(c.Before, ss.JoinOn, true)
		if reason != "" {
			return fail(joinReason(reason), "before", ss.JoinOn)
		}
		if _, reason := columnKey(c.Before, ss.PK, true); reason != "" {
			return fail(pkReason(reason), "before", ss.PK)
		}
		ev.Key, ev.Before = key, c.Before
		return append(dst, ev), nil
	}
	return fail(ReasonUnknownOp, "", "")
}

func has(r record.Row, col string) bool {
	_, ok := r[col]
	return ok
}

// Problems columnKey reports; mapped to join or pk reasons by the caller.
const (
	probMissing   = "missing"
	probNull      = "null"
	probNotScalar = "not scalar"
)

// columnKey returns the key form of r[col]. A missing column is a problem only
// when required; then the key is "".
func columnKey(r record.Row, col string, required bool) (record.Key, string) {
	v, ok := r[col]
	if !ok {
		if required {
			return "", probMissing
		}
		return "", ""
	}
	if v == nil {
		return "", probNull
	}
	k, ok := record.KeyOf(v)
	if !ok {
		return "", probNotScalar
	}
	return k, ""
}

func joinReason(p string) string {
	switch p {
	case probMissing:
		return ReasonJoinMissing
	case probNull:
		return ReasonJoinNull
	}
	return ReasonJoinNotScalar
}

func pkReason(p string) string {
	switch p {
	case probMissing:
		return ReasonPKMissing
	case probNull:
		return ReasonPKNull
	}
	return ReasonPKNotScalar
}
