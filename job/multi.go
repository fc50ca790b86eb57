package job

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/transform"
)

// TypeCDCMulti is the join type of the multi-way changelog join on one key
// (joins.MultiSpec): join.tables lists the tables, the first one driving.
const TypeCDCMulti = "cdc-multi"

// Table is one input of a cdc-multi join:
//
//	join:
//	  type: cdc-multi
//	  tables:
//	    - {name: users, pk: id, join_on: id}                     # the driving table
//	    - {name: domains, pk: id, join_on: user_id, kind: left}  # users LEFT JOIN domains
//	    - {name: settings, pk: id, join_on: user_id}             # … INNER JOIN settings (kind: inner, the default)
//
// Every table is joined on the same key (its join_on column); sources bind
// to a table by its name (sources[].side or sources[].tables).
type Table struct {
	Name   string `yaml:"name"`
	PK     string `yaml:"pk"`
	JoinOn string `yaml:"join_on"`
	// Kind is inner (default) or left: how the table joins the first one.
	// Not for the first table.
	Kind string `yaml:"kind,omitempty"`
}

// Multi reports whether the job runs the multi-way changelog join.
func (s *Spec) Multi() bool { return s.Join.Type == TypeCDCMulti }

// MultiSpec builds the joins spec of a cdc-multi join, with errors naming
// job fields.
func (s *Spec) MultiSpec() (*joins.MultiSpec, error) {
	j := s.Join
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("join.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if j.Mode != "" {
		bad("mode", "not for a cdc-multi join (set each table's kind)")
	}
	if j.Left != (Side{}) || j.Right != (Side{}) {
		bad("left", "left and right are not for a cdc-multi join (list join.tables)")
	}
	if j.Window != (Window{}) || j.AllowedLateness != 0 || j.Lower != 0 || j.Upper != 0 || j.LowerExclusive || j.UpperExclusive {
		bad("window", "window, allowed_lateness and interval bounds are for event-time joins")
	}
	errs = append(errs, j.streamOnly()...)
	if j.Emit != "" {
		bad("emit", "only for window joins")
	}
	if !j.TTL.IsZero() || j.Open != "" {
		bad("ttl", "only for unbounded joins")
	}
	if j.CDC != (CDCOptions{}) {
		bad("cdc", "only for cdc joins (a cdc-multi join emits the update kinds, without times)")
	}
	if j.Temporal != (TemporalOptions{}) {
		bad("temporal", "only for temporal joins")
	}
	ms := &joins.MultiSpec{}
	for i, t := range j.Tables {
		mt := joins.MultiTable{Name: t.Name, PK: t.PK, JoinOn: t.JoinOn}
		switch t.Kind {
		case "", "inner":
		case "left":
			mt.Kind = joins.LeftOuter
			if i == 0 {
				bad(fmt.Sprintf("tables[%d].kind", i), "the first table is the driving side: it takes no kind")
				mt.Kind = joins.Inner
			}
		default:
			bad(fmt.Sprintf("tables[%d].kind", i), "must be inner or left (got %q)", t.Kind)
		}
		ms.Tables = append(ms.Tables, mt)
	}
	for i, c := range j.Project {
		f := fmt.Sprintf("join.project[%d]", i)
		col, err := s.multiColumn(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", f, err))
			continue
		}
		ms.Project = append(ms.Project, col)
	}
	if err := ms.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			errs = append(errs, errors.New("join."+line))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ms, nil
}

// tableOf maps a cdc-multi table name to its index (the events' side).
func (s *Spec) tableOf(name string) (record.Side, bool) {
	for i, t := range s.Join.Tables {
		if t.Name == name && name != "" {
			return record.Side(i), true
		}
	}
	return 0, false
}

func (s *Spec) tableNames() []string {
	names := make([]string, len(s.Join.Tables))
	for i, t := range s.Join.Tables {
		names[i] = t.Name
	}
	return names
}

// multiColumn is projectColumn for a cdc-multi join: `from: table.field`
// with any table, or `expr:` over every table's row, each under its name
// (a padded table is nil: `settings?.theme ?? "default"`). A failing
// expression yields null, counted in ExprErrors, as projectColumn's.
func (s *Spec) multiColumn(c Column) (joins.MultiColumn, error) {
	if c.Name == "" {
		return joins.MultiColumn{}, errors.New("name: must not be empty")
	}
	switch {
	case c.From != "" && c.Expr != "":
		return joins.MultiColumn{}, errors.New("expr: set only one of from and expr")
	case c.Expr != "":
		v, err := transform.CompileValue(c.Expr)
		if err != nil {
			return joins.MultiColumn{}, fmt.Errorf("expr: %w", err)
		}
		names := s.tableNames()
		var logged atomic.Bool
		name := c.Name
		return joins.MultiColumn{Name: c.Name, Compute: func(rows []record.Row) any {
			env := make(map[string]any, len(names))
			for i, n := range names {
				env[n] = nil
				if i < len(rows) && rows[i] != nil {
					env[n] = transform.Env(rows[i])
				}
			}
			out, err := v.Eval(env)
			if err != nil {
				ExprErrors.Add(1)
				if !logged.Swap(true) {
					slog.Warn("projection expression failed; the column is null for this row (logged once per column)", "column", name, "err", err)
				}
				return nil
			}
			return out
		}}, nil
	}
	table, field, ok := strings.Cut(c.From, ".")
	i, okTable := s.tableOf(table)
	if !ok || field == "" || !okTable {
		return joins.MultiColumn{}, fmt.Errorf("from: must be <table>.<field> with table one of %s (got %q)", strings.Join(s.tableNames(), ", "), c.From)
	}
	return joins.MultiColumn{Name: c.Name, Table: int(i), Field: field}, nil
}

// FormatChangelog is the source format that reads another job's output
// in the changelog sink format (formats/changelog.DecodeChange): +I and +U
// upsert the row, -U and -D delete it, so a second job can join the first
// one's result on another key (a chain: users ⋈ domains, then ⋈ companies
// on the result's company_id). Bind the source with side; give the table
// pk: _pk, the column holding the first job's output primary key
// (changelog.PKColumn).
const FormatChangelog = "changelog"
