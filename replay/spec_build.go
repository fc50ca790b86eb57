package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/transform"
)

// built is a validated spec turned into the joins machinery.
type built struct {
	cdc   *joins.CDCSpec
	multi *joins.MultiSpec // a cdc-multi join
	fresh func() joins.Timed
	// conditioned: the join has a residual condition, so an events row
	// carries its decoded value (eventRow).
	conditioned bool
}

// valueCol holds, in an events row of a join with a residual condition,
// the input's value decoded (json.Number numbers), for the condition to
// read; no output shows it.
const valueCol = "\x00value"

// eventRow is the row of an events input at ref with value text v: the
// reference to the text, plus the decoded value when a condition needs it.
func (b *built) eventRow(ref string, v json.RawMessage) record.Row {
	row := record.Row{refCol: ref}
	if b.conditioned {
		var x any
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		if dec.Decode(&x) == nil {
			row[valueCol] = x
		}
	}
	return row
}

// conditionView is what a condition sees of a row under its side's name:
// an events row's decoded value, or a script row's columns.
func conditionView(r record.Row) any {
	if _, ok := r[refCol]; ok {
		return transform.Env(record.Row{"v": r[valueCol]})["v"]
	}
	return transform.Env(r)
}

func (s *Spec) build() (*built, error) {
	if s == nil {
		return nil, errors.New("replay: spec: nil")
	}
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("replay: spec: %s: "+format, append([]any{field}, args...)...))
	}
	known := false
	for _, t := range types {
		known = known || s.Type == t
	}
	if !known {
		bad("type", "unknown join type %q (want %s)", s.Type, strings.Join(types, ", "))
		return nil, errors.Join(errs...)
	}
	if s.Type == TypeCDCMulti {
		return s.buildMulti()
	}
	if len(s.Tables) > 0 {
		bad("tables", "only for a cdc-multi join")
	}
	// Sides.
	for _, sd := range []struct {
		f string
		s Side
	}{{"left", s.Left}, {"right", s.Right}} {
		if sd.s.Name == "" {
			bad(sd.f+".name", "must not be empty")
		}
		if s.eventTime() {
			if sd.s.Key == "" {
				bad(sd.f+".key", "must not be empty")
			}
			if sd.s.Ts == "" {
				bad(sd.f+".ts", "must not be empty")
			}
			if sd.s.PK != "" {
				bad(sd.f+".pk", "only for a cdc join")
			}
			if sd.s.JoinOn != "" {
				bad(sd.f+".join_on", "only for a cdc join (use key)")
			}
		} else {
			if sd.s.Key != "" {
				bad(sd.f+".key", "not for a cdc join (use join_on)")
			}
			if sd.s.Ts != "" {
				bad(sd.f+".ts", "not for a cdc join")
			}
		}
	}
	if s.Left.Name != "" && s.Left.Name == s.Right.Name {
		bad("right.name", "must differ from left.name %q", s.Left.Name)
	}
	// Blocks that belong to some types only.
	windowed := s.Type == TypeWindow || s.Type == TypeCoGroupOuter
	bounded := s.Type == TypeInterval || s.Type == TypeTimeBounded
	switch {
	case windowed && s.Window == nil:
		bad("window", "must be set for a %s join", s.Type)
	case !windowed && s.Window != nil:
		bad("window", "only for window and cogroup-outer joins")
	}
	if !windowed && s.AllowedLateness != 0 {
		bad("allowed_lateness", "only for window and cogroup-outer joins")
	}
	switch {
	case bounded && s.Interval == nil:
		bad("interval", "must be set for a %s join", s.Type)
	case !bounded && s.Interval != nil:
		bad("interval", "only for interval and time-bounded joins")
	}
	stream := windowed || bounded || s.Type == TypeUnbounded
	switch s.Emit {
	case "", "on-close", "on-arrival":
		if s.Emit != "" && !windowed {
			bad("emit", "only for window and cogroup-outer joins")
		}
	default:
		bad("emit", "must be on-close or on-arrival (got %q)", s.Emit)
	}
	switch s.Open {
	case "", "lower", "upper":
	default:
		bad("open", "must be lower or upper, the bound a half-bounded range lacks (got %q)", s.Open)
	}
	if s.Open != "" && s.Type != TypeTimeBounded {
		bad("open", "only for time-bounded joins (a half-bounded range)")
	}
	if s.Type != TypeUnbounded && s.TTL != 0 && !(s.Type == TypeTimeBounded && s.Open != "") {
		bad("ttl", "only for unbounded joins and half-bounded time-bounded joins (open: lower or upper)")
	}
	temporal := s.Type == TypeTemporal || s.Type == TypeTemporalLatest
	sem, err := joins.ParseTemporalSemantics(s.Temporal.Semantics)
	if err != nil {
		bad("temporal.semantics", "must be strict, flink or kafka (got %q)", s.Temporal.Semantics)
	}
	grace, history := s.Temporal.KafkaVersioned(s.Type, bad)
	if !temporal && s.Temporal != (job.TemporalOptions{}) {
		bad("temporal", "only for temporal and temporal-latest joins")
	}
	kinds, err := joins.ParseCDCKinds(s.CDC.Kinds)
	if err != nil {
		bad("cdc.kinds", "must be update, flink or kafka (got %q)", s.CDC.Kinds)
	}
	switch s.CDC.Ts {
	case "", "none", "max":
	default:
		bad("cdc.ts", "must be none or max (got %q)", s.CDC.Ts)
	}
	if s.Type != TypeCDC && s.CDC != (job.CDCOptions{}) {
		bad("cdc", "only for cdc joins")
	}
	for _, f := range []struct{ name, v string }{
		{"condition", s.Condition}, {"left_condition", s.LeftCondition}, {"right_condition", s.RightCondition}, {"late.rule", s.Late.Rule},
	} {
		if f.v != "" && !stream {
			bad(f.name, "only for window, cogroup-outer, interval, time-bounded and unbounded joins")
		}
	}
	var where joins.Condition
	var late joins.LateRule
	if stream {
		var err error
		where, err = job.CompileCondition(s.Condition, s.LeftCondition, s.RightCondition, s.Left.Name, s.Right.Name, conditionView)
		for _, e := range unjoin(err) {
			if e != nil {
				errs = append(errs, fmt.Errorf("replay: spec: %w", e))
			}
		}
		if late, err = joins.ParseLateRule(s.Late.Rule); err != nil {
			bad("late.rule", "must be ts<wm, ts<=wm or none (got %q)", s.Late.Rule)
		}
	}
	if s.Type == TypeTimeBounded && s.Interval != nil && (s.Interval.LowerExclusive || s.Interval.UpperExclusive) {
		bad("interval", "exclusive bounds are for interval joins only")
	}
	// Mode.
	mode := s.Mode
	if mode == "" {
		mode = "inner"
	}
	allowed := map[string][]string{
		TypeCDC: {"inner", "left", "full"}, TypeWindow: {"inner", "semi"}, TypeCoGroupOuter: {"left", "right", "full"},
		TypeInterval: {"inner"}, TypeTimeBounded: {"inner", "left", "right", "full", "semi"}, TypeUnbounded: {"inner", "left", "right", "full", "semi"},
		TypeTemporal: {"inner", "left"}, TypeTemporalLatest: {"inner", "left"},
	}[s.Type]
	modeOK := false
	for _, m := range allowed {
		modeOK = modeOK || m == mode
	}
	if !modeOK {
		bad("mode", "%q is not a mode of a %s join (want %s)", s.Mode, s.Type, strings.Join(allowed, ", "))
		mode = allowed[0] // validate the rest as if it were valid
	}
	// Projection.
	var cols []joins.Column
	for i, c := range s.Project {
		f := fmt.Sprintf("project[%d]", i)
		side, field, ok := strings.Cut(c.From, ".")
		col := joins.Column{Name: c.Name, Field: field}
		switch {
		case !ok || field == "":
			bad(f+".from", "%q is not side.field", c.From)
			continue
		case side == s.Left.Name:
			col.Side = record.Left
		case side == s.Right.Name:
			col.Side = record.Right
		default:
			bad(f+".from", "side %q is neither left (%q) nor right (%q)", side, s.Left.Name, s.Right.Name)
			continue
		}
		cols = append(cols, col)
	}
	if windowed && s.Window == nil || bounded && s.Interval == nil {
		return nil, errors.Join(errs...)
	}
	b, err := s.joinsSpec(mode, cols, where, late, sem, kinds, grace, history)
	if err != nil {
		// Add the joins spec's problems not already reported.
		seen := make(map[string]bool, len(errs))
		for _, e := range errs {
			seen[e.Error()] = true
		}
		for _, e := range unjoin(err) {
			if !seen[e.Error()] {
				errs = append(errs, e)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return b, nil
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// joinsSpec builds and validates the joins spec; its field names are
// translated to the YAML ones.
func (s *Spec) joinsSpec(mode string, cols []joins.Column, where joins.Condition, late joins.LateRule, sem joins.TemporalSemantics, kinds joins.CDCKinds, grace, history int64) (*built, error) {
	b := built{conditioned: !where.IsZero()}
	var err error
	typ, _ := joins.ParseTimedJoinType(mode)
	l, r := s.Left.Name, s.Right.Name
	switch s.Type {
	case TypeCDC:
		jt, _ := joins.ParseJoinType(mode)
		b.cdc = &joins.CDCSpec{Type: jt,
			Left:    joins.SideSpec{Name: l, PK: s.Left.PK, JoinOn: s.Left.JoinOn},
			Right:   joins.SideSpec{Name: r, PK: s.Right.PK, JoinOn: s.Right.JoinOn},
			Project: cols, Kinds: kinds, MaxTs: s.CDC.Ts == "max"}
		err = b.cdc.Validate()
	case TypeWindow, TypeCoGroupOuter:
		a, aerr := s.Window.assigner()
		if aerr != nil {
			return nil, aerr
		}
		js := &joins.WindowJoinSpec{Type: typ, Left: l, Right: r, Assigner: a,
			AllowedLateness: int64(s.AllowedLateness), Project: cols, Where: where, Late: late, OnArrival: s.Emit == "on-arrival"}
		err = js.Validate()
		b.fresh = func() joins.Timed { return joins.NewWindowJoin(js) }
	case TypeInterval:
		iv := s.Interval
		js := &joins.IntervalSpec{Left: l, Right: r, Lower: int64(iv.Lower), Upper: int64(iv.Upper),
			LowerExclusive: iv.LowerExclusive, UpperExclusive: iv.UpperExclusive, Project: cols, Where: where, Late: late}
		err = js.Validate()
		b.fresh = func() joins.Timed { return joins.NewInterval(js) }
	case TypeTimeBounded:
		js := &joins.TimeBoundedSpec{Type: typ, Left: l, Right: r,
			Lower: int64(s.Interval.Lower), Upper: int64(s.Interval.Upper), Project: cols, Where: where, Late: late}
		switch s.Open {
		case "lower":
			js.Open, js.TTL = joins.OpenLower, int64(s.TTL)
		case "upper":
			js.Open, js.TTL = joins.OpenUpper, int64(s.TTL)
		}
		err = js.Validate()
		b.fresh = func() joins.Timed { return joins.NewTimeBounded(js) }
	case TypeUnbounded:
		js := &joins.UnboundedSpec{Type: typ, Left: l, Right: r, TTL: int64(s.TTL), Project: cols, Where: where, Late: late}
		err = js.Validate()
		b.fresh = func() joins.Timed { return joins.NewUnbounded(js) }
	case TypeTemporal, TypeTemporalLatest:
		js := &joins.TemporalSpec{Type: typ, Left: l, Right: r, Project: cols, Semantics: sem, Grace: grace, History: history}
		err = js.Validate()
		if s.Type == TypeTemporal {
			b.fresh = func() joins.Timed { return joins.NewTemporalJoin(js) }
		} else {
			b.fresh = func() joins.Timed { return joins.NewTemporalLatest(js) }
		}
	}
	if err != nil {
		return nil, translate(err)
	}
	return &b, nil
}

func (w *Window) assigner() (joins.Assigner, error) {
	var a joins.Assigner
	switch w.Assigner {
	case "tumbling":
		a = joins.Tumbling(int64(w.Size), int64(w.Offset))
	case "sliding":
		a = joins.Sliding(int64(w.Size), int64(w.Slide), int64(w.Offset))
	case "session":
		a = joins.Session(int64(w.Gap))
	default:
		return a, fmt.Errorf("replay: spec: window.assigner: unknown assigner %q (want tumbling, sliding or session)", w.Assigner)
	}
	var errs []error
	bad := func(f string) {
		errs = append(errs, fmt.Errorf("replay: spec: window.%s: not used by a %s window", f, w.Assigner))
	}
	if w.Assigner != "sliding" && w.Slide != 0 {
		bad("slide")
	}
	if w.Assigner == "session" && w.Size != 0 {
		bad("size")
	}
	if w.Assigner == "session" && w.Offset != 0 {
		bad("offset")
	}
	if w.Assigner != "session" && w.Gap != 0 {
		bad("gap")
	}
	return a, errors.Join(errs...)
}

// fieldNames maps the joins specs' field names to the YAML ones.
var fieldNames = map[string]string{
	"lower": "interval.lower", "upper": "interval.upper", "open": "open",
	"lower_exclusive": "interval.lower_exclusive", "upper_exclusive": "interval.upper_exclusive",
	"left": "left.name", "right": "right.name", "late": "late.rule",
}

// translate rewrites the "field: msg" errors of a joins Validate to name the
// YAML field and carry the package prefix.
func translate(err error) error {
	list := unjoin(err)
	out := make([]error, 0, len(list))
	for _, e := range list {
		msg := e.Error()
		if field, rest, ok := strings.Cut(msg, ": "); ok && !strings.Contains(field, " ") {
			switch {
			case fieldNames[field] != "":
				field = fieldNames[field]
			case strings.HasPrefix(field, "assigner."):
				field = "window." + strings.TrimPrefix(field, "assigner.")
			case strings.HasPrefix(field, "project[") && (strings.HasSuffix(field, "].side") || strings.HasSuffix(field, "].field")):
				field = field[:strings.LastIndex(field, "].")+1] + ".from"
			}
			msg = field + ": " + rest
		}
		out = append(out, errors.New("replay: spec: "+msg))
	}
	return errors.Join(out...)
}
