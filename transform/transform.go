// Package transform owns the expressions of job files: a source's filter
// (which records enter the join), a computed key (re-keying an event-time
// side) and computed output columns (projections after the join).
//
// Expressions are github.com/expr-lang/expr: a small, well-kept, sandboxed
// expression language for Go (no loops, no side effects, bounded memory),
// compiled once when the job is built and evaluated per record without
// reflection-heavy paths. We picked it over cel-go for its lighter
// dependency tree and its Go-like syntax (`status == "active" && amount >
// 10`), which job-file authors read without learning a new language. We
// write no parser of our own.
//
// A record is seen as its row's columns (a CDC change: the row image being
// filtered); numbers in rows, which Joinery keeps as json.Number so they
// round-trip exactly, are given to expressions as int64 when integral and
// float64 otherwise.
//
// Filtering a changelog keeps it a changelog: FilterChange applies the
// predicate to each row image, so an update that moves a row out of the
// filter becomes a delete, one that moves it in becomes an insert, and a
// change with neither image kept is dropped — what a WHERE clause on the
// materialized table would do.
package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/joinery/joinery/record"
)

// Filter is a compiled boolean expression over a row.
type Filter struct {
	src  string
	prog *vm.Program
}

// CompileFilter compiles a filter. The expression must yield a bool; it
// sees the row's columns as variables (a missing column is nil).
func CompileFilter(src string) (*Filter, error) {
	prog, err := expr.Compile(src, expr.AsBool(), expr.AllowUndefinedVariables())
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", src, err)
	}
	return &Filter{src: src, prog: prog}, nil
}

// String returns the expression's source.
func (f *Filter) String() string { return f.src }

// Keep evaluates the filter on row. A runtime error (e.g. comparing a
// string with a number) is returned, never a panic; the caller dead-letters
// the record with it.
func (f *Filter) Keep(row record.Row) (bool, error) {
	return f.KeepEnv(Env(row))
}

// KeepEnv is Keep over prepared variables (see Env), for callers that add
// their own, such as _table.
func (f *Filter) KeepEnv(env map[string]any) (bool, error) {
	out, err := expr.Run(f.prog, env)
	if err != nil {
		return false, fmt.Errorf("filter %q: %w", f.src, err)
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("filter %q: yields %T, not a bool", f.src, out)
	}
	return b, nil
}

// FilterChange applies f to a change's row images. It returns the change to
// apply and whether there is one: inserts and deletes are kept or dropped
// whole; an update becomes an insert (only the new image passes), a delete
// (only the old one passes), stays an update (both) or is dropped (none).
//
// extra variables (e.g. _table), when not nil, are added to each image's.
func (f *Filter) FilterChange(c record.Change, extra map[string]any) (record.Change, bool, error) {
	var keepB, keepA bool
	var err error
	keep := func(row record.Row) (bool, error) {
		env := Env(row)
		for k, v := range extra {
			env[k] = v
		}
		return f.KeepEnv(env)
	}
	if c.Before != nil {
		if keepB, err = keep(c.Before); err != nil {
			return c, false, err
		}
	}
	if c.After != nil {
		if keepA, err = keep(c.After); err != nil {
			return c, false, err
		}
	}
	switch {
	case keepB && keepA:
		return c, true, nil
	case keepA:
		op := c.Op
		if op == record.OpUpdate {
			op = record.OpCreate
		}
		return record.Change{Op: op, After: c.After, Pos: c.Pos, TsMs: c.TsMs}, true, nil
	case keepB:
		return record.Change{Op: record.OpDelete, Before: c.Before, Pos: c.Pos, TsMs: c.TsMs}, true, nil
	}
	return c, false, nil
}

// Value is a compiled expression yielding any value.
type Value struct {
	src  string
	prog *vm.Program
}

// CompileValue compiles an expression that yields a value.
func CompileValue(src string) (*Value, error) {
	prog, err := expr.Compile(src, expr.AllowUndefinedVariables())
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	return &Value{src: src, prog: prog}, nil
}

// String returns the expression's source.
func (v *Value) String() string { return v.src }

// Eval evaluates the expression with env's variables (see Env) and returns
// its result in Joinery's row form: integral numbers as json.Number, so
// outputs round-trip like input columns.
func (v *Value) Eval(env map[string]any) (any, error) {
	out, err := expr.Run(v.prog, env)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", v.src, err)
	}
	return rowValue(out)
}

// Column is one computed output column.
type Column struct {
	Name string
	Expr *Value
}

// Project computes columns from env, in order, into a new row.
func Project(cols []Column, env map[string]any) (record.Row, error) {
	row := make(record.Row, len(cols))
	for _, c := range cols {
		v, err := c.Expr.Eval(env)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		row[c.Name] = v
	}
	return row, nil
}

// Env turns a row into expression variables: json.Number columns become
// int64 or float64, nested objects and arrays are converted the same way.
// The row itself is not modified.
func Env(row record.Row) map[string]any {
	env := make(map[string]any, len(row))
	for k, v := range row {
		env[k] = exprValue(v)
	}
	return env
}

func exprValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	case map[string]any:
		return Env(x)
	case record.Row:
		return Env(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = exprValue(e)
		}
		return out
	}
	return v
}

var errNotFinite = errors.New("yields a number that is not finite")

// rowValue converts an expression result back to row form.
func rowValue(v any) (any, error) {
	switch x := v.(type) {
	case int:
		return json.Number(strconv.Itoa(x)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case int32, int16, int8, uint, uint8, uint16, uint32, uint64:
		return json.Number(fmt.Sprint(x)), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errNotFinite
		}
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case float32:
		return rowValue(float64(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := rowValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := rowValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}
