package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
)

// Join types a Spec names.
const (
	TypeCDC            = "cdc"             // changelog join of two Debezium upsert streams
	TypeWindow         = "window"          // inner window join (Flink join().window())
	TypeCoGroupOuter   = "cogroup-outer"   // left/right/full outer window join on the coGroup
	TypeInterval       = "interval"        // interval join (Flink intervalJoin().between())
	TypeTimeBounded    = "time-bounded"    // Spark-style time-range join with outer variants
	TypeUnbounded      = "unbounded"       // regular join, state bounded by an event-time TTL
	TypeTemporal       = "temporal"        // event-time as-of join; right is the versioned side
	TypeTemporalLatest = "temporal-latest" // join against the latest version on arrival
)

var types = []string{TypeCDC, TypeCDCMulti, TypeWindow, TypeCoGroupOuter, TypeInterval, TypeTimeBounded, TypeUnbounded, TypeTemporal, TypeTemporalLatest}

// Spec describes the one join a replay runs. It is decoded from YAML
// (ParseSpec) or filled in Go; Validate checks it. Run does not modify it.
//
//	type: interval
//	left:  {name: orange, key: k, ts: ts}
//	right: {name: green, key: k, ts: ts}
//	interval: {lower: -2ms, upper: 1ms}
//	project: [{name: o, from: orange.v}, {name: g, from: green.v}]
type Spec struct {
	// Type is cdc, cdc-multi, window, cogroup-outer, interval, time-bounded, unbounded,
	// temporal or temporal-latest.
	Type string `yaml:"type"`
	// Mode is inner (the default when empty), left, right, full or semi
	// (a left semi join), as the type allows: cdc inner/left/full; window
	// inner/semi; cogroup-outer left/right/full; interval inner;
	// time-bounded and unbounded any; temporal and temporal-latest
	// inner/left.
	Mode string `yaml:"mode"`
	// Left and Right describe the inputs. For temporal joins the left side
	// is the probe stream and the right side the versioned one.
	Left  Side `yaml:"left"`
	Right Side `yaml:"right"`
	// Window is the window assigner of window and cogroup-outer joins.
	Window *Window `yaml:"window"`
	// AllowedLateness (window and cogroup-outer) keeps a fired window for
	// this long past its end; 0 by default.
	AllowedLateness Millis `yaml:"allowed_lateness"`
	// Interval bounds r.ts - l.ts for interval and time-bounded joins.
	Interval *Bounds `yaml:"interval"`
	// TTL keeps each row of an unbounded join until the watermark passes
	// its time + TTL (required there, > 0, or none: for ever), and the rows
	// of the open side of a half-bounded time-bounded join (Open).
	TTL TTLMillis `yaml:"ttl"`
	// Open (time-bounded joins): lower or upper, the bound the range lacks.
	Open string `yaml:"open"`
	// Project lists the output columns; empty means
	// {left name: left row, right name: right row}.
	Project []Column `yaml:"project"`
	// Condition, LeftCondition and RightCondition are the residual join
	// condition of a window, cogroup-outer, interval, time-bounded or cdc
	// join (job.CompileCondition): expr-lang expressions over the rows,
	// each under its side's name. In the events mode a side's name stands
	// for the input's value (`left.price > right.min_price`, or `left <
	// right` for numbers), except in a cdc join; in a script, and in a cdc
	// join, for its row.
	Condition      string `yaml:"condition"`
	LeftCondition  string `yaml:"left_condition"`
	RightCondition string `yaml:"right_condition"`
	// Late is the late-data rule of those joins: {rule: "ts<wm"} (the
	// default), "ts<=wm" (Spark) or "none" (Kafka Streams; interval and
	// time-bounded only).
	Late job.Late `yaml:"late"`
	// Tables lists the inputs of a cdc-multi join (see Table); the first
	// one drives. Only for cdc-multi, which takes no left, right or mode.
	Tables []Table `yaml:"tables"`
	// Emit (window and cogroup-outer joins) is on-close (the default,
	// Flink's) or on-arrival (Spark's windowed join: pairs at once, unmatched
	// outer rows at the close).
	Emit string `yaml:"emit"`
	// Temporal (temporal and temporal-latest joins): {semantics: strict}
	// (the default), {semantics: flink}, Flink's TemporalRowTimeJoinOperator
	// (nothing late, probes emitted once t <= watermark in arrival order)
	// with a changelog probe side (+I, -U, +U, -D kept on the outputs), or
	// {semantics: kafka}, Kafka Streams' KStream-KTable join (temporal:
	// against a versioned table, with grace and history, Go durations).
	Temporal job.TemporalOptions `yaml:"temporal"`
	// CDC (cdc joins): {kinds: update|flink|kafka, ts: none|max}, the row
	// kinds (today's -U/+U, Flink's StreamingJoinOperator's, or Kafka
	// Streams' Change(new, old) as -U/+U) and the output
	// times (none, or Kafka Streams' max of the two rows' source times).
	CDC job.CDCOptions `yaml:"cdc"`
}

// Side describes one input.
type Side struct {
	// Name names the input; script lines say which input they belong to by
	// it ("side": name) and projections refer to it.
	Name string `yaml:"name"`
	// Key is the join key column of an event-time join's rows.
	Key string `yaml:"key"`
	// Ts is the event-time column of an event-time join's rows: an integer
	// (ms since the epoch) or an RFC 3339 string.
	Ts string `yaml:"ts"`
	// PK and JoinOn are a cdc join's primary-key and join columns.
	PK     string `yaml:"pk"`
	JoinOn string `yaml:"join_on"`
}

// Window is a window assigner: tumbling (size, offset), sliding (size,
// slide, offset) or session (gap), as Flink's event-time assigners.
type Window struct {
	Assigner string `yaml:"assigner"`
	Size     Millis `yaml:"size"`
	Slide    Millis `yaml:"slide"`
	Offset   Millis `yaml:"offset"`
	Gap      Millis `yaml:"gap"`
}

// Bounds are the bounds of r.ts - l.ts, inclusive unless marked exclusive
// (exclusive bounds: interval joins only).
type Bounds struct {
	Lower          Millis `yaml:"lower"`
	Upper          Millis `yaml:"upper"`
	LowerExclusive bool   `yaml:"lower_exclusive"`
	UpperExclusive bool   `yaml:"upper_exclusive"`
}

// Column is one output column: Name takes the value of From, "side.field"
// with side a side's name.
type Column struct {
	Name string `yaml:"name"`
	From string `yaml:"from"`
}

// Millis is a length of time in milliseconds. In YAML it is a plain integer
// (ms) or a Go duration string such as "10s", "2ms" or "-2ms" (a whole
// number of milliseconds).
type Millis int64

// UnmarshalYAML decodes an integer or a duration string.
func (m *Millis) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration (10s, 2ms) or a number of ms", n.Line)
	}
	if n.Tag == "!!int" {
		v, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			return fmt.Errorf("line %d: %q is not a number of ms: %v", n.Line, n.Value, err)
		}
		*m = Millis(v)
		return nil
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (want e.g. 10s, 2ms or a number of ms)", n.Line, n.Value)
	}
	if d%time.Millisecond != 0 {
		return fmt.Errorf("line %d: %q is not a whole number of milliseconds", n.Line, n.Value)
	}
	*m = Millis(d.Milliseconds())
	return nil
}

// TTLMillis is a TTL: Millis, or none (joins.NoTTL: kept for ever).
type TTLMillis Millis

// UnmarshalYAML decodes none or what Millis takes.
func (t *TTLMillis) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "none" {
		*t = TTLMillis(joins.NoTTL)
		return nil
	}
	return (*Millis)(t).UnmarshalYAML(n)
}

// ParseSpec decodes a YAML spec, refusing unknown fields, and validates it.
func ParseSpec(b []byte) (*Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("replay: spec: empty")
		}
		return nil, fmt.Errorf("replay: spec: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// eventTime reports whether the spec is an event-time join (not cdc).
func (s *Spec) eventTime() bool { return s.Type != TypeCDC && s.Type != TypeCDCMulti }

// Validate reports every problem of the spec at once (errors.Join), each
// naming its YAML field, e.g. "replay: spec: window.size: must be positive,
// got 0".
func (s *Spec) Validate() error {
	_, err := s.build()
	return err
}
