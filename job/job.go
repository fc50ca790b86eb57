package job

import (
	"errors"
	"fmt"
	"strings"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// Spec is a whole job file.
type Spec struct {
	// Name names the job; state keys and actor kinds carry it. Letters, digits, '-', '_' and '.'.
	Name string `yaml:"name"`
	// Join is the join the job runs.
	Join Join `yaml:"join"`
	// Sources are the inputs this node reads. A node of a fleet that only hosts key actors has none.
	Sources []Source `yaml:"sources"`
	// Sinks receive the join's outputs. A node-local sink (file, stdout,
	// table) gets those made from this node's sources; a shared one (Kafka,
	// Redis) is written by each key's owner node, whichever node read the
	// key's inputs, so every node of a fleet lists the same shared sinks.
	Sinks []Sink `yaml:"sinks"`
	// DeadLetter, when set, receives every input record a source rejects
	// (with policy dead-letter): a file, a Kafka topic or a Redis Stream. A
	// plain string is a file path (see DeadLetter).
	DeadLetter DeadLetter `yaml:"dead_letter"`
	// State names the state store.
	State State `yaml:"state"`
	// Cluster holds membership and remoting settings.
	Cluster Cluster `yaml:"cluster"`
	// Ingest, when set, serves HTTP ingest into one of the sources.
	Ingest Ingest `yaml:"ingest"`
	// Admin is the node's HTTP endpoint: /healthz, /readyz, /metrics and the admin API joinctl uses.
	Admin Admin `yaml:"admin"`
	// Runtime tunes the Go runtime of the process (internal/gctune).
	Runtime Runtime `yaml:"runtime,omitempty"`

	dir string // directory of the job file; relative paths are resolved against it
	// unresolved holds the secret fields whose ${VAR} or *_file could not
	// be read (expandSecrets): that error is their first cause, so Validate
	// says nothing more about them (an unset ${JOINERY_GOSSIP_KEY} is not
	// also "not base64").
	unresolved map[string]bool
	// lookup reads the environment for the secrets of the connectors'
	// configurations when they are decoded (expandConn): set for a spec
	// read from a file, nil (nothing expanded) for one built in code.
	lookup func(string) (string, bool)
}

// sideOf maps "left"/"right" or a side's table name to the side; for a
// cdc-multi join, a table's name to its index.
func (s *Spec) sideOf(v string) (record.Side, bool) {
	if s.Multi() {
		return s.tableOf(v)
	}
	switch v {
	case "left", s.Join.Left.Name:
		return record.Left, v != ""
	case "right", s.Join.Right.Name:
		return record.Right, v != ""
	}
	return 0, false
}

// SideOf maps a source's side or table binding value to the join side.
func (s *Spec) SideOf(v string) (record.Side, bool) { return s.sideOf(v) }

// CDCSpec builds the joins spec of the job's join, with errors naming job fields.
func (s *Spec) CDCSpec() (*joins.CDCSpec, error) {
	var errs []error
	mode := s.Join.Mode
	if mode == "" {
		mode = "inner"
	}
	jt, err := joins.ParseJoinType(mode)
	if err != nil {
		errs = append(errs, fmt.Errorf("join.mode: must be inner, left, right or full (got %q)", s.Join.Mode))
	}
	kinds, err := joins.ParseCDCKinds(s.Join.CDC.Kinds)
	if err != nil {
		errs = append(errs, fmt.Errorf("join.cdc.kinds: must be update, flink or kafka (got %q)", s.Join.CDC.Kinds))
	}
	switch s.Join.CDC.Ts {
	case "", "none", "max":
	default:
		errs = append(errs, fmt.Errorf("join.cdc.ts: must be none or max (got %q)", s.Join.CDC.Ts))
	}
	if s.Join.Temporal != (TemporalOptions{}) {
		errs = append(errs, errors.New("join.temporal: only for temporal joins"))
	}
	cs := &joins.CDCSpec{
		Kinds: kinds, MaxTs: s.Join.CDC.Ts == "max", ForeignKey: s.Join.CDC.ForeignKey,
		Type:  jt,
		Left:  joins.SideSpec{Name: s.Join.Left.Name, PK: s.Join.Left.PK, JoinOn: s.Join.Left.JoinOn, Versioned: s.Join.Left.Versioned},
		Right: joins.SideSpec{Name: s.Join.Right.Name, PK: s.Join.Right.PK, JoinOn: s.Join.Right.JoinOn, Versioned: s.Join.Right.Versioned},
	}
	where, err := CompileCondition(s.Join.Condition, s.Join.LeftCondition, s.Join.RightCondition, s.Join.Left.Name, s.Join.Right.Name, nil)
	if err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, fmt.Errorf("join.%w", e))
		}
	}
	cs.Where = where
	for i, c := range s.Join.Project {
		f := fmt.Sprintf("join.project[%d]", i)
		col, err := s.projectColumn(c, s.Join.Left.Name, s.Join.Right.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", f, err))
			continue
		}
		if c.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name: must not be empty", f))
		}
		cs.Project = append(cs.Project, col)
	}
	if err := cs.Validate(); err != nil {
		// joins names fields relative to the join ("left.pk: …").
		for _, line := range strings.Split(err.Error(), "\n") {
			errs = append(errs, errors.New("join."+line))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cs, nil
}
