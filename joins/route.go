package joins

import (
	"errors"
	"fmt"
	"strings"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

// Why Route refuses a change is one of the reject reasons every part of
// Joinery names its refusals from (sinks/deadletter/reason, a leaf):
// reason.UnknownSide (side is neither left nor right), UnknownOp (op is
// not c, r, u or d), MissingAfter (c, r or u without an after row),
// MissingBefore (d without a before row), WrongType (a join or primary-key
// value that is an object or array), ReservedKey (a string join value in
// the form of a null-key row's key), MissingPK (a primary key absent or
// null) and Unroutable (a delete whose before lacks the join column).
// RouteError's Row and Column say where.

// ErrUnmatched is what Route returns, with no events, for a change of a row
// whose join column is null (or absent) before and after it, in a join that
// does not keep that side (inner; the right side of a left join, the left
// side of a right join): per SQL the row matches nothing and is not
// emitted, so there is nothing to keep. It is not bad input: callers count
// it and read on, they do not dead-letter it.
var ErrUnmatched = errors.New("joins: the row's join column is null: it matches nothing and the join does not keep its side")

// nullKeyPrefix begins every key NullRowKey makes. Its first byte is NUL,
// and Route refuses (reason.ReservedKey) a join value that begins with the
// whole prefix, so no real join key takes one of these keys. Keys are
// UTF-8 text (they travel as protobuf strings between nodes): a byte that
// is not UTF-8 would be a cheaper reservation, but no node could send it.
const nullKeyPrefix = "\x00null/"

// NullRowKey is the key of a row of side whose join column is null (or
// absent) in a join that keeps that side (left and full for the left side,
// right and full for the right): the prefix "\x00null/", the side ("left/"
// or "right/") and pk, the key form of the row's primary key. Each such
// row is its own key holding just that row, so the per-key state is
// unchanged: the key's CDC has a row of one side and never one of the
// other, and emits it padded, updates it and retracts it as any unmatched
// row of a kept side.
func NullRowKey(side record.Side, pk record.Key) record.Key {
	sd := "left/"
	if side == record.Right {
		sd = "right/"
	}
	return record.Key(nullKeyPrefix + sd + string(pk))
}

// IsNullRowKey reports whether k is a key NullRowKey makes.
func IsNullRowKey(k record.Key) bool { return strings.HasPrefix(string(k), nullKeyPrefix) }

// RouteError says why CDCSpec.Route refused a change. Reason is one of the
// reject reasons above; callers count and dead-letter by it (errors.As,
// then Reason).
type RouteError struct {
	Reason reason.Reason
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
	if e.Reason == reason.ReservedKey {
		msg += ": a string join value may not begin with \"\\u0000null/\", the keys of rows whose join value is null"
	}
	if e.Reason == reason.Unroutable {
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
// A row whose join column is null or absent (SQL's null join value, which
// never matches) is, in a join that keeps its side, at its own key,
// NullRowKey(side, its primary key): there the join emits it padded and
// retracts it on its update or delete. An update that gives it a join
// value is a d at that key and a c at the new one, and the reverse when an
// update nulls the join value of a row. In a join that does not keep its
// side the null image goes nowhere: an update from or to it is the other
// image's c or d alone, and a change with no image anywhere is
// ErrUnmatched.
//
// Rows must hold a non-null scalar primary key, and a scalar join column
// where they are used; anything else is a *RouteError. Every event carries
// c.Pos and side.
func (s *CDCSpec) Route(side record.Side, c record.Change) ([]record.Event, error) {
	return s.AppendRoute(nil, side, c)
}

// AppendRoute is Route appending the events to dst (a caller's buffer,
// reused from one change to the next: no slice per change). On an error
// it returns dst unchanged.
func (s *CDCSpec) AppendRoute(dst []record.Event, side record.Side, c record.Change) ([]record.Event, error) {
	fail := func(why reason.Reason, row, col string) ([]record.Event, error) {
		return dst, &RouteError{Reason: why, Side: side, Op: c.Op, Pos: c.Pos, Row: row, Column: col}
	}
	if side != record.Left && side != record.Right {
		return fail(reason.UnknownSide, "", "")
	}
	ss := s.side(side)
	keep := s.Type.keeps(side)
	ev := record.Event{Side: side, Op: c.Op, Pos: c.Pos, Ts: c.TsMs}
	switch c.Op {
	case record.OpCreate, record.OpRead, record.OpUpdate:
		if c.After == nil {
			return fail(reason.MissingAfter, "after", "")
		}
		pk, prob := columnKey(c.After, ss.PK, true)
		if prob != "" {
			return fail(pkReason(prob), "after", ss.PK)
		}
		key, null, why := joinKey(c.After, ss.JoinOn)
		if why != "" {
			return fail(why, "after", ss.JoinOn)
		}
		if null {
			key = NullRowKey(side, pk)
		}
		placed := !null || keep // the after image has a key
		ev.Key, ev.After = key, c.After
		if c.Op != record.OpUpdate || c.Before == nil {
			if !placed {
				return dst, ErrUnmatched
			}
			if c.Op == record.OpUpdate {
				ev.Before = c.Before
			}
			return append(dst, ev), nil
		}
		ev.Before = c.Before
		oldPK, prob := columnKey(c.Before, ss.PK, false)
		if prob != "" {
			return fail(pkReason(prob), "before", ss.PK)
		}
		if !has(c.Before, ss.PK) {
			oldPK = pk // a partial before: the primary key is the after's
		}
		old, oldNull := key, null
		if has(c.Before, ss.JoinOn) {
			if old, oldNull, why = joinKey(c.Before, ss.JoinOn); why != "" {
				return fail(why, "before", ss.JoinOn)
			}
		} // else a partial before: assume the join value is unchanged
		if oldNull {
			old = NullRowKey(side, oldPK)
		}
		oldPlaced := !oldNull || keep
		switch {
		case !placed && !oldPlaced:
			return dst, ErrUnmatched
		case placed && oldPlaced && old == key:
			return append(dst, ev), nil
		case oldPlaced && !has(c.Before, ss.PK):
			// The retraction at the old key needs the row's primary key.
			return fail(reason.MissingPK, "before", ss.PK)
		}
		if oldPlaced {
			del := record.Event{Key: old, Side: side, Op: record.OpDelete, Before: c.Before, Pos: c.Pos, Seq: 0, Ts: c.TsMs}
			if ss.Versioned && placed {
				// The key core of a versioned side tells the retraction of a
				// move from a delete by its new row (keycore's isMove).
				del.After = c.After
			}
			dst = append(dst, del)
		}
		if placed {
			dst = append(dst, record.Event{Key: key, Side: side, Op: record.OpCreate, After: c.After, Pos: c.Pos, Seq: 1, Ts: c.TsMs})
		}
		return dst, nil
	case record.OpDelete:
		if c.Before == nil {
			return fail(reason.MissingBefore, "before", "")
		}
		if !has(c.Before, ss.JoinOn) {
			return fail(reason.Unroutable, "before", ss.JoinOn)
		}
		key, null, why := joinKey(c.Before, ss.JoinOn)
		if why != "" {
			return fail(why, "before", ss.JoinOn)
		}
		pk, prob := columnKey(c.Before, ss.PK, true)
		if prob != "" {
			return fail(pkReason(prob), "before", ss.PK)
		}
		if null {
			if !keep {
				return dst, ErrUnmatched
			}
			key = NullRowKey(side, pk)
		}
		ev.Key, ev.Before = key, c.Before
		return append(dst, ev), nil
	}
	return fail(reason.UnknownOp, "", "")
}

// joinKey returns the key form of r's join value col; null reports a null
// or absent one (key ""). reason is a Reason constant for a value that
// cannot be a join key: an object or array, or a string in the form of a
// null-key row's key.
func joinKey(r record.Row, col string) (key record.Key, null bool, why reason.Reason) {
	v := r[col]
	if v == nil {
		return "", true, ""
	}
	k, ok := record.KeyOf(v)
	switch {
	case !ok:
		return "", false, reason.WrongType
	case IsNullRowKey(k):
		return "", false, reason.ReservedKey
	}
	return k, false, ""
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

func pkReason(p string) reason.Reason {
	switch p {
	case probMissing:
		return reason.MissingPK
	case probNull:
		return reason.MissingPK
	}
	return reason.WrongType
}
