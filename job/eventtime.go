package job

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/transform"
)

// Timed reports whether the job runs an event-time join.
func (s *Spec) Timed() bool {
	return s.Join.Type != "" && s.Join.Type != "cdc" && s.Join.Type != TypeCDCMulti
}

// PadsNullKeys reports whether a probe (left) input whose key is null is
// joined, padded, instead of refused: a left temporal or temporal-latest
// join with temporal: {semantics: kafka}, Kafka Streams' left
// KStream-KTable join since KIP-962. Such inputs are routed to
// joins.NullKey.
func (s *Spec) PadsNullKeys() bool {
	j := s.Join
	return (j.Type == "temporal-latest" || j.Type == "temporal") && j.Mode == "left" && j.Temporal.Semantics == "kafka"
}

// SourceFormat is the effective record format of a source.
func (s *Spec) SourceFormat(src Source) string {
	switch {
	case src.Format != "":
		return src.Format
	case s.Timed():
		return "json"
	}
	return "debezium"
}

// TimedFactory validates the event-time join of the job and returns a
// constructor of its per-key state machine, with errors naming job fields.
func (s *Spec) TimedFactory() (func() joins.Timed, error) {
	jp, err := s.compileTimed(nil)
	return jp.NewTimed, err
}

// compileTimed compiles the event-time join: the constructor of its per-key
// state machine and the sides' key_expr (nil: the key field), by side; view
// is what a residual condition sees of a row (nil: its columns).
func (s *Spec) compileTimed(view func(record.Row) any) (JoinPlan, error) {
	j := s.Join
	var keyExprs [2]*transform.Value
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("join.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	for _, ns := range []struct {
		name string
		side Side
		at   record.Side
	}{{"left", j.Left, record.Left}, {"right", j.Right, record.Right}} {
		name, side := ns.name, ns.side
		if side.Name == "" {
			bad(name+".name", "must not be empty")
		}
		switch {
		case side.Key == "" && side.KeyExpr == "":
			bad(name+".key", "must name the join-key field of an event-time input (or set key_expr)")
		case side.Key != "" && side.KeyExpr != "":
			bad(name+".key_expr", "set one of key and key_expr")
		}
		var kerr error
		if keyExprs[ns.at], kerr = side.CompiledKeyExpr(); kerr != nil {
			bad(name+".key_expr", "%v", kerr)
		}
		if side.Ts == "" {
			bad(name+".ts", "must name the event-time field of an event-time input")
		}
		if side.Versioned {
			bad(name+".versioned", "only for cdc joins (a temporal join's versioned table is its right side)")
		}
	}
	mode := j.Mode
	if mode == "" {
		mode = "inner"
	}
	jt, err := joins.ParseTimedJoinType(mode)
	if err != nil {
		bad("mode", "must be inner, left, right, full or semi (got %q)", j.Mode)
	}
	var project []joins.Column
	for i, c := range j.Project {
		col, err := s.projectColumn(c, j.Left.Name, j.Right.Name)
		if err != nil {
			bad(fmt.Sprintf("project[%d]", i), "%v", err)
			continue
		}
		project = append(project, col)
	}
	var where joins.Condition
	var late joins.LateRule
	temporal := j.Type == "temporal" || j.Type == "temporal-latest"
	sem, serr := joins.ParseTemporalSemantics(j.Temporal.Semantics)
	if serr != nil {
		bad("temporal.semantics", "must be strict, flink or kafka (got %q)", j.Temporal.Semantics)
	}
	grace, history := j.Temporal.KafkaVersioned(j.Type, bad)
	if !temporal && j.Temporal != (TemporalOptions{}) {
		bad("temporal", "only for temporal joins")
	}
	if j.Right.Kind != "" && !temporal {
		bad("right.kind", "only for temporal joins")
	}
	if j.Left.Kind != "" && (!temporal || sem != joins.SemanticsFlink) {
		bad("left.kind", "only for temporal joins with temporal: {semantics: flink} (a changelog probe side)")
	}
	if j.CDC != (CDCOptions{}) {
		bad("cdc", "only for cdc joins")
	}
	if temporal {
		errs = append(errs, j.streamOnly()...)
	} else {
		var err error
		if where, err = CompileCondition(j.Condition, j.LeftCondition, j.RightCondition, j.Left.Name, j.Right.Name, view); err != nil {
			for _, e := range unjoin(err) {
				errs = append(errs, fmt.Errorf("join.%w", e))
			}
		}
		if late, err = joins.ParseLateRule(j.Late.Rule); err != nil {
			bad("late.rule", "must be ts<wm, ts<=wm or none (got %q)", j.Late.Rule)
		}
	}
	onArrival := false
	switch j.Emit {
	case "", "on-close":
	case "on-arrival":
		onArrival = true
	default:
		bad("emit", "must be on-close or on-arrival (got %q)", j.Emit)
	}
	if j.Emit != "" && j.Type != "window" {
		bad("emit", "only for window joins")
	}
	var open joins.OpenBound
	switch j.Open {
	case "":
	case "lower":
		open = joins.OpenLower
	case "upper":
		open = joins.OpenUpper
	default:
		bad("open", "must be lower or upper, the bound a half-bounded range lacks (got %q)", j.Open)
	}
	if j.Open != "" && j.Type != "time-bounded" {
		bad("open", "only for time-bounded joins (a half-bounded range)")
	}
	if !j.TTL.IsZero() && j.Type != "unbounded" && !(j.Type == "time-bounded" && j.Open != "") {
		bad("ttl", "only for unbounded joins and half-bounded time-bounded joins (open: lower or upper)")
	}

	ms := func(d interface{ Milliseconds() int64 }) int64 { return d.Milliseconds() }
	var factory func() joins.Timed
	var verr error
	switch j.Type {
	case "window":
		var a joins.Assigner
		switch j.Window.Type {
		case "tumbling":
			a = joins.Tumbling(ms(j.Window.Size), ms(j.Window.Offset))
		case "sliding":
			a = joins.Sliding(ms(j.Window.Size), ms(j.Window.Slide), ms(j.Window.Offset))
		case "session":
			a = joins.Session(ms(j.Window.Gap))
		default:
			bad("window.type", "must be tumbling, sliding or session (got %q)", j.Window.Type)
		}
		spec := &joins.WindowJoinSpec{Type: jt, Left: j.Left.Name, Right: j.Right.Name, Assigner: a,
			AllowedLateness: ms(j.AllowedLateness), Project: project, Where: where, Late: late, OnArrival: onArrival}
		verr = spec.Validate()
		factory = func() joins.Timed { return joins.NewWindowJoin(spec) }
	case "interval":
		if jt != joins.TimedInner {
			bad("mode", "an interval join is inner; use type time-bounded for outer and semi modes")
		}
		spec := &joins.IntervalSpec{Left: j.Left.Name, Right: j.Right.Name, Lower: ms(j.Lower), Upper: ms(j.Upper),
			LowerExclusive: j.LowerExclusive, UpperExclusive: j.UpperExclusive, Project: project, Where: where, Late: late}
		verr = spec.Validate()
		factory = func() joins.Timed { return joins.NewInterval(spec) }
	case "time-bounded":
		spec := &joins.TimeBoundedSpec{Type: jt, Left: j.Left.Name, Right: j.Right.Name, Lower: ms(j.Lower), Upper: ms(j.Upper), Project: project,
			Where: where, Late: late, Open: open}
		if open != joins.OpenNone {
			spec.TTL = j.TTL.Millis()
		}
		verr = spec.Validate()
		factory = func() joins.Timed { return joins.NewTimeBounded(spec) }
	case "unbounded":
		spec := &joins.UnboundedSpec{Type: jt, Left: j.Left.Name, Right: j.Right.Name, TTL: j.TTL.Millis(), Project: project,
			Where: where, Late: late}
		verr = spec.Validate()
		factory = func() joins.Timed { return joins.NewUnbounded(spec) }
	case "temporal", "temporal-latest":
		spec := &joins.TemporalSpec{Type: jt, Left: j.Left.Name, Right: j.Right.Name, Project: project, Semantics: sem,
			Grace: grace, History: history}
		verr = spec.Validate()
		if j.Type == "temporal" {
			factory = func() joins.Timed { return joins.NewTemporalJoin(spec) }
		} else {
			// Processing time: a probe joins the version current when it
			// reaches its key; semantics only decides the probes' row kinds,
			// which it always keeps.
			factory = func() joins.Timed { return joins.NewTemporalLatest(spec) }
		}
	}
	if verr != nil {
		for _, line := range strings.Split(verr.Error(), "\n") {
			errs = append(errs, errors.New("join."+strings.TrimPrefix(line, "joins: ")))
		}
	}
	if len(errs) > 0 {
		return JoinPlan{}, errors.Join(errs...)
	}
	jp := JoinPlan{NewTimed: factory, KeyExprs: keyExprs, Conditioned: !where.IsZero()}
	for _, s := range [...]struct {
		side record.Side
		sd   Side
	}{{record.Left, j.Left}, {record.Right, j.Right}} {
		side, sd := s.side, s.sd
		if sd.KeyExpr != "" {
			continue // the key's expression may read any column
		}
		if cols, all := joins.ReadColumns(project, where, side, sd.Key, sd.Ts, sd.Kind); !all {
			jp.TimedKept[side] = cols
		}
	}
	return jp, nil
}

// KafkaVersioned checks temporal.grace and temporal.history, the options
// of Kafka Streams' versioned KStream-KTable join (join type temporal,
// semantics kafka), reporting each problem with bad (fields relative to
// the join), and returns them in ms when they are valid (0 otherwise, so the
// joins spec reports nothing twice). replay checks bare specs with it too.
func (t TemporalOptions) KafkaVersioned(joinType string, bad func(field, format string, a ...any)) (grace, history int64) {
	sem, _ := joins.ParseTemporalSemantics(t.Semantics)
	versioned := joinType == "temporal" && sem == joins.SemanticsKafka
	ok := true
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"grace", t.Grace}, {"history", t.History}} {
		switch {
		case f.d != 0 && !versioned:
			bad("temporal."+f.name, "only for type temporal with semantics kafka (Kafka Streams' join against a versioned table)")
			ok = false
		case f.d < 0:
			bad("temporal."+f.name, "must not be negative (got %v)", f.d)
			ok = false
		case f.d%time.Millisecond != 0:
			bad("temporal."+f.name, "must be a whole number of milliseconds (got %v)", f.d)
			ok = false
		}
	}
	switch {
	case versioned && t.History == 0:
		bad("temporal.history", "required for type temporal with semantics kafka: the versioned table's history retention (Kafka Streams' historyRetention), e.g. 1h")
		ok = false
	case ok && t.Grace > t.History:
		bad("temporal.grace", "must not exceed temporal.history (%v > %v), as Kafka Streams requires", t.Grace, t.History)
		ok = false
	}
	if !ok || !versioned {
		return 0, 0
	}
	return t.Grace.Milliseconds(), t.History.Milliseconds()
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// SideSpec returns the join side's settings.
func (s *Spec) SideSpec(side record.Side) Side {
	if side == record.Left {
		return s.Join.Left
	}
	return s.Join.Right
}
