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
	// Spec is the join of a bare replay spec (FormSpec); zero for a job
	// file. The sides' key and ts columns are not used: every events line
	// carries its key and ts. Spec.Project is not used either: an output
	// is the pair of matched input values.
	Spec Spec
	// Join is the join in the job package's dialect, the one a node
	// compiles: a job file's join: section, or Spec lowered (a replay spec
	// is sugar for it). Its sides' names default to left and right, their
	// key and ts are the events lines' own, and it has no projection.
	Join job.Join
	// EndOfInput is EndFlush (the default when empty) or EndHold.
	EndOfInput string
	// Form is FormJob or FormSpec.
	Form string
	// machine is Join compiled by the job package (job.Spec.CompileJoin).
	// Nil for a Job made in Go, whose Spec RunEvents compiles.
	machine *built
}

// lowerJoin compiles a job file's join (its sides' key and ts set, its
// projection dropped: an output is the pair of matched values) with the
// job package's compiler, as a node does.
func lowerJoin(js job.Spec) (*built, error) {
	js.Join.Project = nil
	jp, err := js.CompileJoin(conditionView)
	if err != nil {
		return nil, errors.Join(prefixed("replay: job: ", err)...)
	}
	return &built{join: join{js.Join}, cdc: jp.CDC, multi: jp.Multi, fresh: jp.NewTimed, conditioned: jp.Conditioned}, nil
}

// prefixed is err's lines, each an error with prefix.
func prefixed(prefix string, err error) []error {
	var errs []error
	for _, line := range strings.Split(err.Error(), "\n") {
		errs = append(errs, errors.New(prefix+line))
	}
	return errs
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
	if s.Type != TypeCDCMulti { // a cdc-multi join's inputs are its tables
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
	}
	s.Project = nil
	m, err := s.build()
	if err := errors.Join(checkEnd(f.EndOfInput, "end_of_input"), err); err != nil {
		return nil, err
	}
	return &Job{Spec: s, Join: m.join.Join, EndOfInput: f.EndOfInput, Form: FormSpec, machine: m}, nil
}

func parseJobFile(b []byte) (*Job, error) {
	var f jobFile
	if err := strictYAML(b, &f); err != nil {
		return nil, fmt.Errorf("replay: job: %w", err)
	}
	js := f.Spec // a copy: defaults below are replay's, not the file's
	j := &js.Join
	if j.Type != job.TypeCDCMulti { // its inputs are its tables
		if j.Left.Name == "" {
			j.Left.Name = "left"
		}
		if j.Right.Name == "" {
			j.Right.Name = "right"
		}
	}
	switch j.Type {
	case "window", "interval", "time-bounded", "unbounded", "temporal", "temporal-latest":
		for _, sd := range []*job.Side{&j.Left, &j.Right} {
			sd.Key, sd.Ts = "key", "ts" // events lines carry them
		}
	}
	errs := replayChecks(*j)
	if err := checkEnd(f.Replay.EndOfInput, "replay.end_of_input"); err != nil {
		errs = append([]error{err}, errs...)
	}
	m, err := lowerJoin(js)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Job{Join: m.join.Join, EndOfInput: f.Replay.EndOfInput, Form: FormJob, machine: m}, nil
}

// replayChecks are what replay asks of a job file's join beyond what a
// node does: times in whole milliseconds (replay's unit), and no setting
// the join's type does not use.
func replayChecks(j job.Join) []error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("replay: job: join.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	whole := func(field string, d time.Duration) {
		if d%time.Millisecond != 0 {
			bad(field, "%v is not a whole number of milliseconds", d)
		}
	}
	windowed := j.Type == "window"
	bounded := j.Type == "interval" || j.Type == "time-bounded"
	if windowed {
		switch j.Window.Type {
		case "tumbling":
			whole("window.size", j.Window.Size)
			whole("window.offset", j.Window.Offset)
		case "sliding":
			whole("window.size", j.Window.Size)
			whole("window.slide", j.Window.Slide)
			whole("window.offset", j.Window.Offset)
		case "session":
			whole("window.gap", j.Window.Gap)
		}
		whole("allowed_lateness", j.AllowedLateness)
	}
	if !j.TTL.None {
		whole("ttl", j.TTL.D)
	}
	if bounded {
		whole("lower", j.Lower)
		whole("upper", j.Upper)
		if j.Type == "time-bounded" && (j.LowerExclusive || j.UpperExclusive) {
			bad("lower_exclusive", "exclusive bounds are for interval joins only")
		}
	} else if j.Lower != 0 || j.Upper != 0 || j.LowerExclusive || j.UpperExclusive {
		bad("lower", "lower, upper and their exclusive flags are for interval and time-bounded joins only")
	}
	if !windowed {
		if j.Window != (job.Window{}) {
			bad("window", "only for window joins")
		}
		if j.AllowedLateness != 0 {
			bad("allowed_lateness", "only for window joins")
		}
	}
	for i, t := range j.Tables {
		if reservedOutput[t.Name] {
			bad(fmt.Sprintf("tables[%d].name", i), "%q is a field of the output lines; name the table otherwise", t.Name)
		}
	}
	return errs
}
