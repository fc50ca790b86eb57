package joins

import (
	"errors"
	"fmt"

	"github.com/joinery/joinery/record"
)

// JoinType is the kind of a changelog join. The zero value is Inner.
type JoinType int

const (
	// Inner emits only matched pairs.
	Inner JoinType = iota
	// LeftOuter also emits a left row padded with nulls while it has no match.
	LeftOuter
	// FullOuter emits both sides' rows padded with nulls while they have no
	// match: LeftOuter and RightOuter at once.
	FullOuter
	// RightOuter emits a right row padded with nulls while it has no match
	// (and no left row without one).
	RightOuter
)

var joinTypeNames = [...]string{"inner", "left", "full", "right"}

func (t JoinType) String() string {
	if t >= 0 && int(t) < len(joinTypeNames) {
		return joinTypeNames[t]
	}
	return fmt.Sprintf("JoinType(%d)", int(t))
}

// ParseJoinType parses "inner", "left", "right" or "full".
func ParseJoinType(s string) (JoinType, error) {
	for i, n := range joinTypeNames {
		if n == s {
			return JoinType(i), nil
		}
	}
	return 0, fmt.Errorf("joins: unknown join type %q (want inner, left, right or full)", s)
}

// MarshalText encodes the type as "inner", "left", "right" or "full".
func (t JoinType) MarshalText() ([]byte, error) {
	if !t.valid() {
		return nil, fmt.Errorf("joins: unknown join type %d", int(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText decodes what MarshalText wrote.
func (t *JoinType) UnmarshalText(b []byte) error {
	v, err := ParseJoinType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

func (t JoinType) valid() bool { return t >= Inner && t <= RightOuter }

// keepsLeft reports whether a left row without a match is emitted
// null-padded (left and full joins).
func (t JoinType) keepsLeft() bool { return t == LeftOuter || t == FullOuter }

// keepsRight reports whether a right row without a match is emitted
// null-padded (right and full joins).
func (t JoinType) keepsRight() bool { return t == RightOuter || t == FullOuter }

// keeps reports whether side's rows without a match are emitted padded.
func (t JoinType) keeps(side record.Side) bool {
	if side == record.Left {
		return t.keepsLeft()
	}
	return t.keepsRight()
}

// SideSpec describes one input of a changelog join.
type SideSpec struct {
	// Name is the input's name, e.g. "users". Without a projection it is the
	// output column that holds this side's row.
	Name string
	// PK is the primary-key column, e.g. "id". Rows are kept by it; the
	// output's primary key is [left PK, right PK] (CDCSpec.ForeignKey: the
	// left PK alone).
	PK string
	// JoinOn is the join column: "id" for users, "user_id" for domains. A
	// left side whose join column is its primary key holds one row per key
	// (value state, the one-to-many fast path); any other left side, and
	// every right side, holds its rows of a key by primary key (map state),
	// so a join value may be shared by many rows of both sides
	// (CDCSpec.LeftMany).
	JoinOn string
	// Versioned makes the side a versioned table (Kafka Streams'
	// versioned key-value stores): a change whose source time (Event.Ts)
	// is older than that of the row's last change at its join key is out of
	// order and ignored, reported late (LateOutOfOrder) instead of applied;
	// a delete's time is kept, so an older change cannot bring the row
	// back. A change that moves the row to another join value is applied
	// whatever its time (its new key cannot know the row's time at the old
	// one). The check is the key core's (keycore), beside its Debezium
	// replay check.
	Versioned bool
}

// Column is one output column of the projection: Name = Side's row[Field],
// or, for a computed column, Name = Compute(left row, right row).
type Column struct {
	Name  string
	Side  record.Side
	Field string
	// Compute, when set, makes the column's value from the pair (a padded
	// side is nil) instead of Side and Field: job files' `expr:` columns. It
	// must be deterministic (replays re-emit equal outputs) and must not keep
	// or modify the rows.
	Compute func(l, r record.Row) any
}

// CDCSpec describes a changelog join. It is a plain value: fill it, call
// Validate, then share a pointer to it, read-only, among all keys' CDC.
type CDCSpec struct {
	Type  JoinType
	Left  SideSpec
	Right SideSpec
	// Project lists the output columns. When empty, the output row is
	// {Left.Name: left row or null, Right.Name: right row or null}.
	Project []Column
	// Kinds is the row-kind convention of the output: KindsUpdate (the
	// default), KindsFlink or KindsKafka.
	Kinds CDCKinds
	// Where is the residual condition on a pair of rows of one key (SQL's
	// ON u.id = d.user_id AND d.active AND u.tier >= d.min_tier, the
	// equality being the key): a left and a right row are a pair only when
	// it holds, so a row of a kept side is padded while no row passes it
	// with it, and a change that flips it for a pair retracts or adds the
	// pair (see cdc_where.go and cdc_many.go). The zero Condition pairs
	// every two rows of a key.
	Where Condition
	// ForeignKey makes the join a foreign-key table join in Kafka Streams'
	// semantics (KTable.join(other, foreignKeyExtractor, joiner), KIP-213):
	// the left table's join column is a foreign key to the right table's
	// primary key (Right.JoinOn == Right.PK), every left row has at most
	// one result, and results are keyed by the left row's primary key
	// alone (Output.PK the JSON of that value) instead of [left PK, right
	// PK]. Only Inner and LeftOuter; with KindsKafka each output is one
	// Change(new, old) of a left row's result (docs/concepts/
	// join-semantics.md, "Foreign-key table join").
	ForeignKey bool
	// MaxTs stamps every output with the larger of its input change's
	// source time (Event.Ts) and the source time of the other side's row in
	// the pair (Kafka Streams' KTable-KTable join timestamps, deletions
	// included); a padded side counts as 0. Without it outputs carry no time.
	MaxTs bool
}

// CDCKinds is the row-kind convention of a changelog join's output.
type CDCKinds int

const (
	// KindsUpdate: a change of a row of a matched pair is -U then +U; a
	// padded row is retracted (-D) when a match replaces it (+I) and comes
	// back (+I) when the last match goes (-D); right rows are visited once
	// per change, each with its -U/+U together.
	KindsUpdate CDCKinds = iota
	// KindsFlink: exactly Flink's StreamingJoinOperator (JoinHelper): an
	// update is a retraction of the old row then an accumulation of the new
	// one; in an outer join a change of the input's side is -D then +I when
	// that side is outer, the null-padded rows come and go as +I and -D, and
	// only an inner side of an inner join forwards -U/+U.
	KindsFlink
	// KindsKafka: Kafka Streams' KTable-KTable join with old values sent,
	// whose every output is one Change(new, old) of a result row: as
	// KindsUpdate, except that a padded row a match replaces, or that
	// replaces the last match, is one -U (old) / +U (new) pair instead of
	// -D then +I. So +I is Change(new, null), -U/+U is Change(new, old)
	// and -D is Change(null, old).
	KindsKafka
)

// ParseCDCKinds parses "" or "update" (KindsUpdate), "flink" and "kafka".
func ParseCDCKinds(s string) (CDCKinds, error) {
	switch s {
	case "", "update":
		return KindsUpdate, nil
	case "flink":
		return KindsFlink, nil
	case "kafka":
		return KindsKafka, nil
	}
	return 0, fmt.Errorf("joins: unknown changelog kinds %q (want update, flink or kafka)", s)
}

// Validate reports every problem of the spec, joined with errors.Join, each
// naming its field, e.g. "left.pk: must not be empty".
func (s *CDCSpec) Validate() error {
	if s == nil {
		return errors.New("joins: nil CDC spec")
	}
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	if !s.Type.valid() {
		bad("type", "unknown join type %d (want inner, left, right or full)", int(s.Type))
	}
	if s.Kinds != KindsUpdate && s.Kinds != KindsFlink && s.Kinds != KindsKafka {
		bad("kinds", "unknown changelog kinds %d (want update, flink or kafka)", int(s.Kinds))
	}
	for _, side := range []struct {
		field string
		spec  SideSpec
	}{{"left", s.Left}, {"right", s.Right}} {
		if side.spec.Name == "" {
			bad(side.field+".name", "must not be empty")
		}
		if side.spec.PK == "" {
			bad(side.field+".pk", "must not be empty")
		}
		if side.spec.JoinOn == "" {
			bad(side.field+".join_on", "must not be empty")
		}
	}
	if s.ForeignKey {
		if s.Type != Inner && s.Type != LeftOuter {
			bad("type", "a foreign-key join is inner or left (got %s)", s.Type)
		}
		if s.Right.JoinOn != s.Right.PK {
			bad("right.join_on", "a foreign-key join's right table joins on its primary key %q (got %q)", s.Right.PK, s.Right.JoinOn)
		}
		if s.Left.JoinOn == s.Left.PK {
			bad("left.join_on", "a foreign-key join's left table joins on a foreign key, not its primary key %q", s.Left.PK)
		}
	}
	if len(s.Project) == 0 && s.Left.Name != "" && s.Left.Name == s.Right.Name {
		bad("right.name", "must differ from left.name %q when there is no projection", s.Left.Name)
	}
	checkProject(bad, s.Project)
	return errors.Join(errs...)
}

func (s *CDCSpec) side(sd record.Side) *SideSpec {
	if sd == record.Left {
		return &s.Left
	}
	return &s.Right
}
