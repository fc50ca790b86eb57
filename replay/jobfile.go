package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/job"
)

// End-of-input behaviours of RunEvents (Job.EndOfInput).
const (
	// EndFlush moves the watermark to +infinity when the input ends, so
	// every pending window, outer row and probe is emitted (as Flink does
	// when a bounded source ends). The default.
	EndFlush = "flush"
	// EndHold leaves the watermark where the input left it: only what the
	// input's own watermarks made due is emitted.
	EndHold = "hold"
)

// Forms of the file a Job was read from.
const (
	FormJob  = "job"  // a node job file (job/): its join: section
	FormSpec = "spec" // a bare replay spec (Spec)
)

// Job is what RunEvents runs: a join and how to end the input. ParseJob
// reads it from a node job file or from a bare replay spec.
type Job struct {
	// Spec is the join. The sides' key and ts columns are not used: every
	// events line carries its key and ts. Spec.Project is not used either:
	// an output is the pair of matched input values.
	Spec Spec
	// EndOfInput is EndFlush (the default when empty) or EndHold.
	EndOfInput string
	// Form is FormJob or FormSpec.
	Form string
	// machine is a job file's join compiled by the job package
	// (job.Spec.CompileJoin): the one join dialect a node runs too. Nil for
	// a bare spec, whose machine Spec builds.
	machine *built
}

// lowerJoin compiles a job file's join (its sides' key and ts set, its
// projection dropped: an output is the pair of matched values) with the
// job package's compiler, as a node does.
func lowerJoin(js job.Spec) (*built, error) {
	js.Join.Project = nil
	jp, err := js.CompileJoin(conditionView)
	if err != nil {
		return nil, fmt.Errorf("replay: job: %w", err)
	}
	return &built{cdc: jp.CDC, multi: jp.Multi, fresh: jp.NewTimed, conditioned: jp.Conditioned}, nil
}

// replayOptions is the replay: section of a node job file, and the extra
// top-level field of a bare spec.
type replayOptions struct {
	// EndOfInput: flush (default) or hold.
	EndOfInput string `yaml:"end_of_input"`
}

// jobFile is a node job file plus an optional replay: section.
type jobFile struct {
	job.Spec `yaml:",inline"`
	Replay   replayOptions `yaml:"replay"`
}

// specFile is a bare replay spec plus end_of_input.
type specFile struct {
	Spec       `yaml:",inline"`
	EndOfInput string `yaml:"end_of_input"`
}

// ParseJob reads the join to replay from YAML: either a node job file
// (recognised by its top-level join: key; see job.Spec) or a bare replay
// spec (a top-level type: key; see Spec). Unknown fields are errors. Of a
// job file only the join: section and an optional replay: section
// (end_of_input) are used; name, sources, sinks, state, cluster, ingest and
// admin may be there and are ignored, and unlike a node, replay does not
// require name. Side names default to left and right.
//
// Join types: cdc, cdc-multi, window (mode inner; left, right or full make the coGroup
// outer window join), interval, time-bounded, temporal, and temporal-latest
// (the processing-time temporal join). Every problem is reported at once,
// each naming its field.
func ParseJob(b []byte) (*Job, error) {
	var top map[string]any
	if err := yaml.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("replay: job: %w", err)
	}
	_, hasJoin := top["join"]
	_, hasType := top["type"]
	switch {
	case hasJoin && hasType:
		return nil, errors.New("replay: job: both join: (a node job file) and type: (a replay spec) at the top level")
	case hasJoin:
		return parseJobFile(b)
	case hasType:
		return parseSpecFile(b)
	}
	return nil, errors.New("replay: job: neither a node job file (a top-level join: section) nor a replay spec (a top-level type:)")
}

func strictYAML(b []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty")
		}
		return err
	}
	return nil
}

func checkEnd(end, field string) error {
	switch end {
	case "", EndFlush, EndHold:
		return nil
	}
	return fmt.Errorf("replay: job: %s: must be flush or hold (got %q)", field, end)
}

func parseSpecFile(b []byte) (*Job, error) {
	var f specFile
	if err := strictYAML(b, &f); err != nil {
		return nil, fmt.Errorf("replay: spec: %w", err)
	}
	s := f.Spec
	if s.Type == TypeCDCMulti {
		s.Project = nil
		errs := []error{checkEnd(f.EndOfInput, "end_of_input"), s.Validate()}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return &Job{Spec: s, EndOfInput: f.EndOfInput, Form: FormSpec}, nil
	}
	for _, sd := range []*Side{&s.Left, &s.Right} {
		if s.Type != TypeCDC {
			sd.Key, sd.Ts = "key", "ts"
		}
	}
	if s.Left.Name == "" {
		s.Left.Name = "left"
	}
	if s.Right.Name == "" {
		s.Right.Name = "right"
	}
	s.Project = nil
	errs := []error{checkEnd(f.EndOfInput, "end_of_input")}
	if err := s.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Job{Spec: s, EndOfInput: f.EndOfInput, Form: FormSpec}, nil
}

func parseJobFile(b []byte) (*Job, error) {
	var f jobFile
	if err := strictYAML(b, &f); err != nil {
		return nil, fmt.Errorf("replay: job: %w", err)
	}
	if f.Spec.Join.Type == job.TypeCDCMulti {
		return parseMultiJob(f)
	}
	js := f.Spec // a copy: defaults below are replay's, not the file's
	j := &js.Join
	if j.Left.Name == "" {
		j.Left.Name = "left"
	}
	if j.Right.Name == "" {
		j.Right.Name = "right"
	}
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("replay: job: join.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	addAll := func(err error) {
		for _, line := range strings.Split(err.Error(), "\n") {
			errs = append(errs, errors.New("replay: job: "+line))
		}
	}
	if err := checkEnd(f.Replay.EndOfInput, "replay.end_of_input"); err != nil {
		errs = append(errs, err)
	}
	// Validate with the job package's own rules, so errors name job fields.
	switch j.Type {
	case "cdc":
		if _, err := js.CDCSpec(); err != nil {
			addAll(err)
		}
	case "window", "interval", "time-bounded", "unbounded", "temporal", "temporal-latest":
		for _, sd := range []*job.Side{&j.Left, &j.Right} {
			sd.Key, sd.Ts = "key", "ts" // events lines carry them
		}
		if _, err := js.TimedFactory(); err != nil {
			addAll(err)
		}
	default:
		bad("type", "must be cdc, cdc-multi, window, interval, time-bounded, unbounded, temporal or temporal-latest (got %q)", j.Type)
		return nil, errors.Join(errs...)
	}
	ms := func(field string, d time.Duration) Millis {
		if d%time.Millisecond != 0 {
			bad(field, "%v is not a whole number of milliseconds", d)
		}
		return Millis(d.Milliseconds())
	}
	s := Spec{Mode: j.Mode, Condition: j.Condition, LeftCondition: j.LeftCondition, RightCondition: j.RightCondition, Late: j.Late, Emit: j.Emit,
		Temporal: j.Temporal, CDC: j.CDC,
		Left:  Side{Name: j.Left.Name, PK: j.Left.PK, JoinOn: j.Left.JoinOn},
		Right: Side{Name: j.Right.Name, PK: j.Right.PK, JoinOn: j.Right.JoinOn}}
	if j.Type != "cdc" {
		s.Left.Key, s.Left.Ts, s.Right.Key, s.Right.Ts = "key", "ts", "key", "ts"
		s.Left.PK, s.Left.JoinOn, s.Right.PK, s.Right.JoinOn = "", "", "", ""
	}
	windowed := j.Type == "window"
	bounded := j.Type == "interval" || j.Type == "time-bounded"
	switch j.Type {
	case "cdc":
		s.Type = TypeCDC
	case "window":
		s.Type = TypeWindow
		if m := j.Mode; m != "" && m != "inner" && m != "semi" {
			s.Type = TypeCoGroupOuter
		}
		w := &Window{Assigner: j.Window.Type}
		switch j.Window.Type {
		case "tumbling":
			w.Size, w.Offset = ms("window.size", j.Window.Size), ms("window.offset", j.Window.Offset)
		case "sliding":
			w.Size, w.Slide, w.Offset = ms("window.size", j.Window.Size), ms("window.slide", j.Window.Slide), ms("window.offset", j.Window.Offset)
		case "session":
			w.Gap = ms("window.gap", j.Window.Gap)
		}
		s.Window = w
		s.AllowedLateness = ms("allowed_lateness", j.AllowedLateness)
	case "interval":
		s.Type = TypeInterval
	case "time-bounded":
		s.Type = TypeTimeBounded
	case "unbounded":
		s.Type = TypeUnbounded
	case "temporal":
		s.Type = TypeTemporal
	case "temporal-latest":
		s.Type = TypeTemporalLatest
	}
	s.TTL = TTLMillis(j.TTL.Millis())
	if !j.TTL.None {
		s.TTL = TTLMillis(ms("ttl", j.TTL.D))
	}
	s.Open = j.Open
	if bounded {
		s.Interval = &Bounds{Lower: ms("lower", j.Lower), Upper: ms("upper", j.Upper),
			LowerExclusive: j.LowerExclusive, UpperExclusive: j.UpperExclusive}
		if j.Type == "time-bounded" && (j.LowerExclusive || j.UpperExclusive) {
			bad("lower_exclusive", "exclusive bounds are for interval joins only")
			s.Interval.LowerExclusive, s.Interval.UpperExclusive = false, false
		}
	} else {
		if j.Lower != 0 || j.Upper != 0 || j.LowerExclusive || j.UpperExclusive {
			bad("lower", "lower, upper and their exclusive flags are for interval and time-bounded joins only")
		}
	}
	if !windowed {
		if j.Window != (job.Window{}) {
			bad("window", "only for window joins")
		}
		if j.AllowedLateness != 0 {
			bad("allowed_lateness", "only for window joins")
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	m, err := lowerJoin(js)
	if err != nil {
		return nil, err
	}
	return &Job{Spec: s, EndOfInput: f.Replay.EndOfInput, Form: FormJob, machine: m}, nil
}
