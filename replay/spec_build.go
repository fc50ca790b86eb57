package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/transform"
)

// built is a join compiled by the job package (job.Spec.CompileJoin): the
// join in the job package's dialect, which the driver reads its settings
// from, and its machine.
type built struct {
	join  join
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

// build checks the spec's own fields (the replay dialect: which blocks
// belong to which type, the modes of each type, side.field columns), then
// lowers it to the job package's join section (lower) and compiles that
// with job.Spec.CompileJoin, the compiler a node runs: replay has no join
// compiler of its own. The compiler's problems are reported under the
// spec's field names, leaving out those on a field already refused.
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
	if _, err := joins.ParseTemporalSemantics(s.Temporal.Semantics); err != nil {
		bad("temporal.semantics", "must be strict, flink or kafka (got %q)", s.Temporal.Semantics)
	}
	s.Temporal.KafkaVersioned(s.Type, bad)
	if !temporal && s.Temporal != (job.TemporalOptions{}) {
		bad("temporal", "only for temporal and temporal-latest joins")
	}
	if _, err := joins.ParseCDCKinds(s.CDC.Kinds); err != nil {
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
		if f.v != "" && !stream && (s.Type != TypeCDC || f.name == "late.rule") {
			bad(f.name, "only for window, cogroup-outer, interval, time-bounded, unbounded and (not late.rule) cdc joins")
		}
	}
	if stream {
		if _, err := joins.ParseLateRule(s.Late.Rule); err != nil {
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
		TypeCDC: {"inner", "left", "right", "full"}, TypeWindow: {"inner", "semi"}, TypeCoGroupOuter: {"left", "right", "full"},
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
	for i, c := range s.Project {
		f := fmt.Sprintf("project[%d]", i)
		side, field, ok := strings.Cut(c.From, ".")
		switch {
		case !ok || field == "":
			bad(f+".from", "%q is not side.field", c.From)
		case side != s.Left.Name && side != s.Right.Name:
			bad(f+".from", "side %q is neither left (%q) nor right (%q)", side, s.Left.Name, s.Right.Name)
		}
	}
	if s.Window != nil {
		errs = append(errs, s.Window.check()...)
	}
	errs = append(errs, s.checkMillis()...)
	if windowed && s.Window == nil || bounded && s.Interval == nil {
		return nil, errors.Join(errs...)
	}
	return s.compile(mode, errs)
}

// compile lowers the spec (with mode, the one to compile) and compiles it
// as a job's join section, adding to errs, the spec's own problems, the
// compiler's on fields not already among them.
func (s *Spec) compile(mode string, errs []error) (*built, error) {
	js := job.Spec{Join: s.lower(mode)}
	jp, err := js.CompileJoin(conditionView)
	if err != nil {
		errs = append(errs, lowered(err, errs)...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &built{join: join{js.Join}, cdc: jp.CDC, multi: jp.Multi, fresh: jp.NewTimed, conditioned: jp.Conditioned}, nil
}

// lower is the spec as the job package's join section, the one join
// dialect; mode replaces the spec's. The spec is sugar for it: type
// cogroup-outer is a window join in an outer mode, the interval block the
// join's lower and upper bounds, a window's assigner its type, and Millis
// whole milliseconds (checkMillis keeps them within a time.Duration).
func (s *Spec) lower(mode string) job.Join {
	d := func(m Millis) time.Duration { return time.Duration(m) * time.Millisecond }
	j := job.Join{Type: s.Type, Mode: mode, AllowedLateness: d(s.AllowedLateness), Open: s.Open,
		Condition: s.Condition, LeftCondition: s.LeftCondition, RightCondition: s.RightCondition,
		Late: s.Late, Emit: s.Emit, Temporal: s.Temporal, CDC: s.CDC,
		Left:  job.Side{Name: s.Left.Name, Key: s.Left.Key, Ts: s.Left.Ts, PK: s.Left.PK, JoinOn: s.Left.JoinOn},
		Right: job.Side{Name: s.Right.Name, Key: s.Right.Key, Ts: s.Right.Ts, PK: s.Right.PK, JoinOn: s.Right.JoinOn}}
	if s.Type == TypeCoGroupOuter {
		j.Type = TypeWindow
	}
	if w := s.Window; w != nil {
		j.Window = job.Window{Type: w.Assigner, Size: d(w.Size), Slide: d(w.Slide), Offset: d(w.Offset), Gap: d(w.Gap)}
	}
	if iv := s.Interval; iv != nil {
		j.Lower, j.Upper, j.LowerExclusive, j.UpperExclusive = d(iv.Lower), d(iv.Upper), iv.LowerExclusive, iv.UpperExclusive
	}
	switch {
	case s.TTL == TTLMillis(joins.NoTTL):
		j.TTL = job.TTL{None: true}
	case s.TTL != 0:
		j.TTL = job.TTL{D: d(Millis(s.TTL))}
	}
	for _, c := range s.Project {
		j.Project = append(j.Project, job.Column{Name: c.Name, From: c.From})
	}
	for _, t := range s.Tables {
		j.Tables = append(j.Tables, job.Table{Name: t.Name, PK: t.PK, JoinOn: t.JoinOn, Kind: t.Kind})
	}
	return j
}

// maxMillis is the largest Millis a time.Duration holds.
const maxMillis = Millis(math.MaxInt64 / int64(time.Millisecond))

// checkMillis refuses a length of time that lower cannot carry.
func (s *Spec) checkMillis() []error {
	var errs []error
	check := func(field string, m Millis) {
		if m > maxMillis || m < -maxMillis {
			errs = append(errs, fmt.Errorf("replay: spec: %s: %d ms is out of range (at most %d in size)", field, m, maxMillis))
		}
	}
	check("allowed_lateness", s.AllowedLateness)
	if s.TTL != TTLMillis(joins.NoTTL) {
		check("ttl", Millis(s.TTL))
	}
	if w := s.Window; w != nil {
		check("window.size", w.Size)
		check("window.slide", w.Slide)
		check("window.offset", w.Offset)
		check("window.gap", w.Gap)
	}
	if iv := s.Interval; iv != nil {
		check("interval.lower", iv.Lower)
		check("interval.upper", iv.Upper)
	}
	return errs
}

// lowered is the compiler's problems (job fields: "join.lower: …") under
// the spec's field names ("replay: spec: interval.lower: …"), leaving out
// those on a field that one of reported already names, or that is inside
// one it names (project[0] and project[0].from).
func lowered(err error, reported []error) []error {
	var fields []string
	for _, e := range reported {
		if f, _, ok := strings.Cut(strings.TrimPrefix(e.Error(), "replay: spec: "), ": "); ok {
			fields = append(fields, f)
		}
	}
	var out []error
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "join.")
	}
	for _, e := range unjoin(translate(errors.New(strings.Join(lines, "\n")))) {
		f, _, _ := strings.Cut(strings.TrimPrefix(e.Error(), "replay: spec: "), ": ")
		if !slices.ContainsFunc(fields, func(r string) bool { return within(f, r) || within(r, f) }) {
			out = append(out, e)
		}
	}
	return out
}

// within reports whether field a is b or inside it (b.x, b[i]).
func within(a, b string) bool {
	return a == b || strings.HasPrefix(a, b) && (a[len(b)] == '.' || a[len(b)] == '[')
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// check reports the fields a window's assigner does not use (the job
// package's window ignores them) and an unknown assigner.
func (w *Window) check() []error {
	var errs []error
	switch w.Assigner {
	case "tumbling", "sliding", "session":
	default:
		return []error{fmt.Errorf("replay: spec: window.assigner: unknown assigner %q (want tumbling, sliding or session)", w.Assigner)}
	}
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
	return errs
}

// fieldNames maps the compiler's field names (a job's join section's,
// and the joins specs' it reports) to the spec's.
var fieldNames = map[string]string{
	"lower": "interval.lower", "upper": "interval.upper", "open": "open",
	"lower_exclusive": "interval.lower_exclusive", "upper_exclusive": "interval.upper_exclusive",
	"left": "left.name", "right": "right.name", "late": "late.rule", "window.type": "window.assigner",
}

// translate rewrites the "field: msg" errors of the compiler (its "join."
// taken off) to name the spec's field and carry the package prefix.
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
