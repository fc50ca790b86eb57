package job

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/transform"
)

// Late is the late-data policy of an event-time join (join.late).
type Late struct {
	// Rule is "ts<wm" (the default: an element is late iff its time is
	// below the watermark, Flink's and Kafka's processor rule), "ts<=wm"
	// (Spark's: also at the watermark; a window closes when its end <= the
	// watermark) or "none" (Kafka Streams' stream-stream join: the
	// watermark drops nothing; interval and time-bounded joins only).
	Rule string `yaml:"rule"`
}

// streamOnly reports the stream-stream join fields set on a join that is
// not one (cdc, cdc-multi, temporal): a cdc join takes the conditions, not
// the rest.
func (j Join) streamOnly() []error {
	var errs []error
	if j.Type != "cdc" { // a changelog join takes a residual condition too
		for _, f := range []struct{ name, v string }{
			{"condition", j.Condition}, {"left_condition", j.LeftCondition}, {"right_condition", j.RightCondition},
		} {
			if f.v != "" {
				errs = append(errs, fmt.Errorf("join.%s: only for window, interval, time-bounded, unbounded and cdc joins (got type %s)", f.name, j.Type))
			}
		}
	}
	if j.Late.Rule != "" {
		errs = append(errs, fmt.Errorf("join.late.rule: only for window, interval, time-bounded and unbounded joins (got type %s)", j.Type))
	}
	if j.Type == "cdc" && j.Emit != "" {
		errs = append(errs, fmt.Errorf("join.emit: only for window joins"))
	}
	if j.Type == "cdc" && !j.TTL.IsZero() {
		errs = append(errs, fmt.Errorf("join.ttl: only for unbounded joins"))
	}
	if j.Type == "cdc" && j.Open != "" {
		errs = append(errs, fmt.Errorf("join.open: only for time-bounded joins"))
	}
	return errs
}

// CompileCondition compiles the residual condition of a stream-stream
// join into a joins.Condition: pair (condition:) sees both rows, each under
// its side's name (`ads.price > visits.min_price`); left (left_condition:)
// only the left row under leftName, right (right_condition:) only the right
// row under rightName. Empty sources leave that part unset. Each must yield
// a bool; an expression that names anything but its sides (another side,
// a misspelt one) is refused here, with the field named.
//
// view turns a row into what an expression sees under the side's name; nil
// means the row's columns (transform.Env: numbers as int64 or float64).
//
// An expression that fails on a row or pair at run time (comparing a
// string with a number, a missing column used in arithmetic) counts as
// false — the pair does not match — and is counted in ExprErrors and logged
// once per expression: bad data cannot stop the job, and shows in the
// metric.
func CompileCondition(pair, left, right, leftName, rightName string, view func(record.Row) any) (joins.Condition, error) {
	if view == nil {
		view = func(r record.Row) any { return transform.Env(r) }
	}
	var c joins.Condition
	var errs []error
	compile := func(field, src string, names ...string) *transform.Filter {
		if src == "" {
			return nil
		}
		if err := checkNames(src, names); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
			return nil
		}
		f, err := transform.CompileFilter(src)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
			return nil
		}
		return f
	}
	eval := func(field string, f *transform.Filter) func(env map[string]any) bool {
		var logged atomic.Bool
		return func(env map[string]any) bool {
			ok, err := f.KeepEnv(env)
			if err != nil {
				ExprErrors.Add(1)
				if !logged.Swap(true) {
					slog.Warn("join condition failed; the row or pair does not match (logged once per condition)", "field", field, "err", err)
				}
				return false
			}
			return ok
		}
	}
	if f := compile("condition", pair, leftName, rightName); f != nil {
		run := eval("condition", f)
		c.Pair = func(l, r record.Row) bool { return run(map[string]any{leftName: view(l), rightName: view(r)}) }
	}
	if f := compile("left_condition", left, leftName); f != nil {
		run := eval("left_condition", f)
		c.Left = func(l record.Row) bool { return run(map[string]any{leftName: view(l)}) }
	}
	if f := compile("right_condition", right, rightName); f != nil {
		run := eval("right_condition", f)
		c.Right = func(r record.Row) bool { return run(map[string]any{rightName: view(r)}) }
	}
	return c, errors.Join(errs...)
}

// checkNames refuses an expression whose variables are not among names
// (function names and let-bound variables aside).
func checkNames(src string, names []string) error {
	tree, err := parser.Parse(src)
	if err != nil {
		return fmt.Errorf("%q: %w", src, err)
	}
	v := &identifiers{}
	ast.Walk(&tree.Node, v)
	var unknown []string
	for _, id := range v.used {
		if !slices.Contains(names, id) && !slices.Contains(v.declared, id) && !slices.Contains(v.callees, id) && !slices.Contains(unknown, id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%q names %s; it may name only %s", src, strings.Join(unknown, ", "), strings.Join(names, " and "))
	}
	if v.clock {
		return fmt.Errorf("%q reads the clock (now()): a join condition must give the same answer when replayed", src)
	}
	return nil
}

type identifiers struct {
	used, declared, callees []string
	clock                   bool
}

func (v *identifiers) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.IdentifierNode:
		v.used = append(v.used, x.Value)
	case *ast.VariableDeclaratorNode:
		v.declared = append(v.declared, x.Name)
	case *ast.CallNode:
		if id, ok := x.Callee.(*ast.IdentifierNode); ok {
			v.callees = append(v.callees, id.Value)
			v.clock = v.clock || id.Value == "now"
		}
	case *ast.BuiltinNode:
		v.clock = v.clock || x.Name == "now"
	}
}
