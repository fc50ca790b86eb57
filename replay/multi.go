package replay

import (
	"fmt"
	"slices"
	"strings"

	"github.com/joinery/joinery/record"
)

// TypeCDCMulti is the multi-way changelog join on one key (joins.MultiSpec):
// Spec.Tables lists the tables, the first one driving, each further one
// inner or left joined to it.
//
//	type: cdc-multi
//	tables:
//	  - {name: users, pk: id, join_on: id}
//	  - {name: domains, pk: id, join_on: user_id, kind: left}
//	  - {name: settings, pk: id, join_on: user_id}   # kind: inner, the default
const TypeCDCMulti = "cdc-multi"

// Table is one input of a cdc-multi join: Name (script and events lines
// name it in "side"), PK, JoinOn, and Kind (inner, the default, or left;
// not for the first table).
type Table struct {
	Name   string `yaml:"name"`
	PK     string `yaml:"pk"`
	JoinOn string `yaml:"join_on"`
	Kind   string `yaml:"kind"`
}

// reservedOutput are the events output's own fields, which a cdc-multi
// table may not be named (its rows are written under the table names).
var reservedOutput = map[string]bool{"ts": true, "op": true}

// buildMulti checks a cdc-multi spec's own fields and compiles it as build
// does.
func (s *Spec) buildMulti() (*built, error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("replay: spec: %s: "+format, append([]any{field}, args...)...))
	}
	if s.Left != (Side{}) || s.Right != (Side{}) {
		bad("left", "left and right are not for a cdc-multi join (list tables)")
	}
	if s.Mode != "" {
		bad("mode", "not for a cdc-multi join (set each table's kind)")
	}
	if s.Window != nil || s.AllowedLateness != 0 || s.Interval != nil || s.TTL != 0 || s.Emit != "" {
		bad("window", "window, allowed_lateness, interval, ttl and emit are for event-time joins")
	}
	if s.Condition != "" || s.LeftCondition != "" || s.RightCondition != "" || s.Late.Rule != "" {
		bad("condition", "conditions and late rules are for stream-stream joins")
	}
	names := make([]string, len(s.Tables))
	for i, t := range s.Tables {
		names[i] = t.Name
		switch t.Kind {
		case "", "inner":
		case "left":
			if i == 0 {
				bad(fmt.Sprintf("tables[%d].kind", i), "the first table is the driving side: it takes no kind")
			}
		default:
			bad(fmt.Sprintf("tables[%d].kind", i), "must be inner or left (got %q)", t.Kind)
		}
		if reservedOutput[t.Name] {
			bad(fmt.Sprintf("tables[%d].name", i), "%q is a field of the output lines; name the table otherwise", t.Name)
		}
	}
	for i, c := range s.Project {
		table, field, ok := strings.Cut(c.From, ".")
		if !ok || field == "" || table == "" || !slices.Contains(names, table) {
			bad(fmt.Sprintf("project[%d].from", i), "%q is not table.field with a table of tables", c.From)
		}
	}
	return s.compile(s.Mode, errs)
}

// sideOf maps an input's side name to its side: left or right (or their
// names), a cdc-multi table's name to its index.
func (d *driver) sideOf(name string) (record.Side, bool) {
	if d.b.multi != nil {
		i, ok := d.b.multi.TableIndex(name)
		return record.Side(i), ok
	}
	return d.side(name)
}

// sideNames says which names an input's side may take, for errors: "is "
// + sideNames().
func (d *driver) sideNames() string {
	if d.b.multi != nil {
		var q []string
		for _, t := range d.b.multi.Tables {
			q = append(q, fmt.Sprintf("%q", t.Name))
		}
		return "not one of " + strings.Join(q, ", ")
	}
	return fmt.Sprintf("neither %q nor %q", d.join.Left.Name, d.join.Right.Name)
}

// sideName names side in late lines.
func (d *driver) sideName(side record.Side) string {
	if d.b.multi != nil && int(side) < len(d.b.multi.Tables) {
		return d.b.multi.Tables[side].Name
	}
	return side.String()
}

// route routes a change of a changelog join (two- or multi-way).
func (d *driver) route(side record.Side, c record.Change) ([]record.Event, error) {
	if d.b.multi != nil {
		return d.b.multi.Route(int(side), c)
	}
	return d.b.cdc.Route(side, c)
}

// pkColumn is the primary-key column of side's rows in a changelog join.
func (d *driver) pkColumn(side record.Side) string {
	switch {
	case d.b.multi != nil:
		return d.b.multi.Tables[side].PK
	case side == record.Right:
		return d.join.Right.PK
	}
	return d.join.Left.PK
}

// multiOutput writes one events output line of a cdc-multi join: every
// table's matched input value under its name, in table order.
func (r *eventsRun) multiOutput(o record.Output) error {
	b := append(r.buf[:0], '{')
	for i, t := range r.d.b.multi.Tables {
		v, err := r.value(o.Row[t.Name])
		if err != nil {
			return err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, t.Name)
		b = append(b, ':')
		b = append(b, v...)
	}
	b = append(b, `,"ts":null`...)
	if r.ops {
		b = append(b, `,"op":"`...)
		b = append(b, o.Kind.String()...)
		b = append(b, '"')
	}
	b = append(b, "}\n"...)
	r.buf = b
	r.sum.Outputs++
	if _, err := r.out.Write(b); err != nil {
		r.d.werr = fmt.Errorf("replay: write: %w", err)
		return r.d.werr
	}
	return nil
}

func appendJSONString(b []byte, s string) []byte {
	enc, _ := marshal(s)
	return append(b, enc...)
}
