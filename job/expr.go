package job

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/transform"
)

// ExprErrors counts runtime errors of projection expressions (a column that
// came out null because its expression failed on a pair, e.g. adding a string
// to a number). Nodes export it as a metric.
var ExprErrors atomic.Int64

// projectColumn turns a job-file column into a join column: `from:
// table.field` copies a field, `expr:` computes the value with an
// expr-lang expression (transform) over both sides, each under its name
// (`users.firstname + " " + users.lastname`; a padded side is nil, so
// `domains?.domain_name ?? "none"` handles outer rows).
//
// An expression that fails on a pair yields null for that column, counted
// in ExprErrors and logged (the first time per column): the pair's other
// columns are still right, and a bad expression cannot stop the job.
func (s *Spec) projectColumn(c Column, left, right string) (joins.Column, error) {
	switch {
	case c.From != "" && c.Expr != "":
		return joins.Column{}, fmt.Errorf("expr: set only one of from and expr")
	case c.Expr != "":
		v, err := transform.CompileValue(c.Expr)
		if err != nil {
			return joins.Column{}, fmt.Errorf("expr: %w", err)
		}
		var logged atomic.Bool
		name := c.Name
		return joins.Column{Name: c.Name, Compute: func(l, r record.Row) any {
			env := map[string]any{left: nil, right: nil}
			if l != nil {
				env[left] = transform.Env(l)
			}
			if r != nil {
				env[right] = transform.Env(r)
			}
			out, err := v.Eval(env)
			if err != nil {
				ExprErrors.Add(1)
				if !logged.Swap(true) {
					slog.Warn("projection expression failed; the column is null for this pair (logged once per column)", "column", name, "err", err)
				}
				return nil
			}
			return out
		}}, nil
	}
	table, field, ok := strings.Cut(c.From, ".")
	side, okSide := s.sideOf(table)
	if !ok || field == "" || !okSide {
		return joins.Column{}, fmt.Errorf("from: must be <input>.<field> with input %q or %q (got %q)", left, right, c.From)
	}
	return joins.Column{Name: c.Name, Side: side, Field: field}, nil
}
