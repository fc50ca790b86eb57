package job

import (
	"fmt"
	"math"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/transform"
)

// Join describes the join.
type Join struct {
	// Type is the join family: cdc (the changelog join over Debezium
	// changes), cdc-multi (the multi-way changelog join on one key, see
	// Table), or an event-time join over plain JSON events: window,
	// interval, time-bounded (Spark-style, with outer modes), unbounded (a
	// regular join whose state is bounded by ttl) or temporal.
	Type string `yaml:"type"`
	// Mode is inner, left, right, full or semi (a left semi join), what
	// the type supports.
	Mode string `yaml:"mode"`
	// Window assigns windows for type window.
	Window Window `yaml:"window"`
	// AllowedLateness keeps windows open this long past their end (late firings).
	AllowedLateness time.Duration `yaml:"allowed_lateness"`
	// Lower and Upper bound r.ts - l.ts for interval and time-bounded joins
	// (inclusive unless LowerExclusive/UpperExclusive; interval only).
	Lower          time.Duration `yaml:"lower"`
	Upper          time.Duration `yaml:"upper"`
	LowerExclusive bool          `yaml:"lower_exclusive"`
	UpperExclusive bool          `yaml:"upper_exclusive"`
	// Left and Right describe the two inputs.
	Left  Side `yaml:"left"`
	Right Side `yaml:"right"`
	// Tables lists the inputs of a cdc-multi join, the first one driving
	// (see Table).
	Tables []Table `yaml:"tables,omitempty"`
	// Project lists the output columns; empty means {left name: row, right name: row}.
	Project []Column `yaml:"project"`
	// Condition, LeftCondition and RightCondition are the residual
	// (non-equi) join condition of a window, interval or time-bounded join,
	// expr-lang expressions applied after the key match (see
	// CompileCondition and docs/concepts/join-semantics.md).
	Condition      string `yaml:"condition,omitempty"`
	LeftCondition  string `yaml:"left_condition,omitempty"`
	RightCondition string `yaml:"right_condition,omitempty"`
	// Late is the late-data rule of a window, interval, time-bounded or
	// unbounded join.
	Late Late `yaml:"late,omitempty"`
	// TTL bounds the state of an unbounded join: a row is kept until the
	// watermark passes its time + TTL (required for type unbounded), or for
	// ever with `ttl: none`. A half-bounded time-bounded join (Open) needs
	// it for the rows of its open side.
	TTL TTL `yaml:"ttl,omitempty"`
	// Open makes a time-bounded join's range half-bounded: lower (no lower
	// bound) or upper (no upper bound); the open side's rows are kept for
	// TTL.
	Open string `yaml:"open,omitempty"`
	// Temporal holds the options of a temporal join (type temporal or
	// temporal-latest): semantics strict (the default), flink or kafka
	// (Kafka Streams' KStream-KTable join; on type temporal with its grace
	// and history).
	Temporal TemporalOptions `yaml:"temporal,omitempty"`
	// CDC holds the options of a changelog join (type cdc): its row kinds,
	// output timestamps and the foreign-key table join.
	CDC CDCOptions `yaml:"cdc,omitempty"`
	// Emit is when a window join emits: on-close (the default, Flink's: a
	// window's pairs and padded rows when the watermark closes it) or
	// on-arrival (Spark's windowed join: a pair as soon as both rows are
	// there, only the unmatched outer rows at the close).
	Emit string `yaml:"emit,omitempty"`
}

// TTL is a state time-to-live: a Go duration, or `none` (kept for ever,
// joins.NoTTL).
type TTL struct {
	D    time.Duration
	None bool
}

// UnmarshalYAML decodes a duration or none.
func (t *TTL) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "none" {
		*t = TTL{None: true}
		return nil
	}
	var d time.Duration
	if err := n.Decode(&d); err != nil {
		return fmt.Errorf("line %d: ttl: want a duration (10m) or none", n.Line)
	}
	*t = TTL{D: d}
	return nil
}

// IsZero reports whether no TTL is set.
func (t TTL) IsZero() bool { return t == TTL{} }

// Millis is the TTL in ms, joins.NoTTL for none.
func (t TTL) Millis() int64 {
	if t.None {
		return math.MaxInt64
	}
	return t.D.Milliseconds()
}

// TemporalOptions are a temporal join's options.
type TemporalOptions struct {
	// Semantics is strict (the default: an input behind the watermark is
	// late; a probe at t is emitted once the watermark passes t), flink
	// (Flink's TemporalRowTimeJoinOperator: nothing is late, a probe at t is
	// emitted once t <= watermark, in arrival order, with its row kind) or
	// kafka (Kafka Streams' KStream-KTable join and its null rules: on type
	// temporal-latest against the table's latest value, on type temporal
	// against a versioned table with a grace period, KIP-914; see
	// docs/concepts/join-semantics.md).
	Semantics string `yaml:"semantics,omitempty"`
	// Grace (type temporal, semantics kafka) is Kafka Streams'
	// Joined.withGracePeriod: a stream record at t waits until the
	// watermark (Kafka Streams' stream time) reaches t + grace, then joins
	// the table version valid at t; one already that far behind is joined
	// at once. Default 0: every record joins on arrival (once the watermark
	// reaches its time). At most History.
	Grace time.Duration `yaml:"grace,omitempty"`
	// History (type temporal, semantics kafka; required there) is the
	// versioned table's history retention (Kafka Streams'
	// persistentVersionedKeyValueStore historyRetention): a table record
	// older than watermark - history is refused (late, behind-history), a
	// stream record that old finds no version, and older versions are
	// dropped once no record can reach them.
	History time.Duration `yaml:"history,omitempty"`
}

// CDCOptions are a changelog join's options.
type CDCOptions struct {
	// Kinds is update (the default: an update of a matched row is -U/+U),
	// flink (Flink's StreamingJoinOperator: an outer side's change is -D/+I,
	// a padded row comes and goes as +I/-D) or kafka (Kafka Streams'
	// Change(new, old): a padded row a match replaces, or that replaces the
	// last match, is one -U/+U pair).
	Kinds string `yaml:"kinds,omitempty"`
	// Ts is none (the default: outputs carry no time) or max (Kafka
	// Streams' KTable-KTable join: an output's ts is the larger of its input
	// change's source time, Debezium's ts_ms, and the other row's).
	Ts string `yaml:"ts,omitempty"`
	// ForeignKey makes the join a foreign-key table join (Kafka Streams'
	// KTable foreign-key join): the left table's join_on is a foreign key to
	// the right table's primary key, and each left row has one result,
	// keyed by the left row's primary key. Inner or left.
	ForeignKey bool `yaml:"foreign_key,omitempty"`
}

// Side describes one input of the join.
type Side struct {
	Name string `yaml:"name"`
	// PK and JoinOn: the primary-key and join columns of a cdc table.
	PK     string `yaml:"pk"`
	JoinOn string `yaml:"join_on"`
	// Key and Ts: the join-key and event-time fields of an event-time input
	// (Ts holds epoch milliseconds or an RFC 3339 string).
	Key string `yaml:"key"`
	Ts  string `yaml:"ts"`
	// KeyExpr computes the join key with an expr-lang expression over the
	// input's fields instead of Key (re-keying), e.g. `lower(email)` or
	// `country + "/" + string(user_id)`. Set one of key and key_expr.
	KeyExpr string `yaml:"key_expr,omitempty"`
	// Kind names the field of a temporal join's input holding its row kind
	// (+I, -U, +U, -D; absent or null: +I): on the versioned (right) side
	// -U and -D end a version; on the probe (left) side, with temporal:
	// {semantics: flink}, the kind is kept on the output.
	Kind string `yaml:"kind,omitempty"`
	// Versioned (cdc joins) makes the table a versioned table, as a Kafka
	// Streams table materialized in a versioned store: a change older (by
	// its source time) than the row's last change is out of order and
	// ignored, written to the dead letters as late (out-of-order) instead
	// of applied. For tables whose changes can arrive out of time order
	// (a topic written by several producers); Debezium's changes of a row
	// arrive in order.
	Versioned bool `yaml:"versioned,omitempty"`
}

// CompiledKeyExpr compiles the side's key_expr; nil without one.
func (s Side) CompiledKeyExpr() (*transform.Value, error) {
	if s.KeyExpr == "" {
		return nil, nil
	}
	return transform.CompileValue(s.KeyExpr)
}

// Window is a window assigner: tumbling (size, offset), sliding (size,
// slide, offset) or session (gap).
type Window struct {
	Type   string        `yaml:"type"`
	Size   time.Duration `yaml:"size"`
	Slide  time.Duration `yaml:"slide"`
	Offset time.Duration `yaml:"offset"`
	Gap    time.Duration `yaml:"gap"`
}

// Watermark configures a source's event-time watermarks.
type Watermark struct {
	// MaxOutOfOrderness is how late (in event time) an element may arrive
	// behind the newest one of its partition and still be on time.
	MaxOutOfOrderness time.Duration `yaml:"max_out_of_orderness"`
	// IdleTimeout stops a quiet partition from holding the watermark back.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
}

// Column is one output column: Name takes the value of From,
// "table.field", or of Expr, an expr-lang expression over both sides'
// rows (see projectColumn).
type Column struct {
	Name string `yaml:"name"`
	From string `yaml:"from"`
	Expr string `yaml:"expr"`
}
