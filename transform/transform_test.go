package transform

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/joinery/joinery/record"
)

func row(s string) record.Row {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var r record.Row
	if err := d.Decode(&r); err != nil {
		panic(err)
	}
	return r
}

func TestFilterKeep(t *testing.T) {
	for _, c := range []struct {
		expr, row string
		want      bool
		err       string
	}{
		{`status == "active"`, `{"status":"active"}`, true, ""},
		{`status == "active"`, `{"status":"gone"}`, false, ""},
		{`amount > 10`, `{"amount":11}`, true, ""},
		{`amount > 10`, `{"amount":10.5}`, true, ""},
		{`amount > 10`, `{"amount":9}`, false, ""},
		{`amount >= 1e3`, `{"amount":1000}`, true, ""},
		{`missing == nil`, `{}`, true, ""},
		{`addr.city in ["Oslo", "Bergen"]`, `{"addr":{"city":"Oslo"}}`, true, ""},
		{`len(tags) > 1`, `{"tags":["a","b"]}`, true, ""},
		{`name startsWith "Eg"`, `{"name":"Egor"}`, true, ""},
		{`amount > 10`, `{"amount":"x"}`, false, "filter"},
	} {
		f, err := CompileFilter(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got, err := f.Keep(row(c.row))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s on %s: err %v, want one containing %q", c.expr, c.row, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s on %s = %v, %v; want %v", c.expr, c.row, got, err, c.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, src := range []string{`status ==`, `1 + 1`, `"x"`, `)`} {
		if _, err := CompileFilter(src); err == nil {
			t.Errorf("filter %q compiled", src)
		}
	}
	if _, err := CompileValue(`a +`); err == nil {
		t.Error("bad value expression compiled")
	}
}

func TestFilterChange(t *testing.T) {
	f, err := CompileFilter(`active`)
	if err != nil {
		t.Fatal(err)
	}
	on, off := row(`{"id":1,"active":true}`), row(`{"id":1,"active":false}`)
	for _, c := range []struct {
		name   string
		in     record.Change
		wantOp record.Op
		kept   bool
	}{
		{"insert in", record.Change{Op: record.OpCreate, After: on}, record.OpCreate, true},
		{"insert out", record.Change{Op: record.OpCreate, After: off}, 0, false},
		{"snapshot read in", record.Change{Op: record.OpRead, After: on}, record.OpRead, true},
		{"update in→in", record.Change{Op: record.OpUpdate, Before: on, After: on}, record.OpUpdate, true},
		{"update out→in", record.Change{Op: record.OpUpdate, Before: off, After: on}, record.OpCreate, true},
		{"update in→out", record.Change{Op: record.OpUpdate, Before: on, After: off}, record.OpDelete, true},
		{"update out→out", record.Change{Op: record.OpUpdate, Before: off, After: off}, 0, false},
		{"delete in", record.Change{Op: record.OpDelete, Before: on}, record.OpDelete, true},
		{"delete out", record.Change{Op: record.OpDelete, Before: off}, 0, false},
	} {
		got, kept, err := f.FilterChange(c.in, nil)
		if err != nil || kept != c.kept || (kept && got.Op != c.wantOp) {
			t.Errorf("%s: %+v kept=%v err=%v; want op %c kept=%v", c.name, got, kept, err, c.wantOp, c.kept)
		}
		if kept && got.Op == record.OpDelete && got.After != nil || kept && got.Op == record.OpCreate && got.Before != nil {
			t.Errorf("%s: images %+v", c.name, got)
		}
	}
}

func TestProject(t *testing.T) {
	cols := []Column{}
	for _, c := range [][2]string{
		{"full", `users.firstname + " " + users.lastname`},
		{"n", `domains.id * 2`},
		{"ratio", `domains.id / 4`},
		{"upper", `upper(domains.domain_name)`},
		{"missing", `users.nope`},
	} {
		v, err := CompileValue(c[1])
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, Column{Name: c[0], Expr: v})
	}
	env := map[string]any{
		"users":   Env(row(`{"firstname":"Egor","lastname":"Myasnikov"}`)),
		"domains": Env(row(`{"id":3,"domain_name":"stoppage"}`)),
	}
	out, err := Project(cols, env)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	if want := `{"full":"Egor Myasnikov","missing":null,"n":6,"ratio":0.75,"upper":"STOPPAGE"}`; string(b) != want {
		t.Errorf("projection %s, want %s", b, want)
	}
	bad, _ := CompileValue(`1 / 0`)
	if _, err := Project([]Column{{Name: "x", Expr: bad}}, nil); err == nil {
		t.Error("a non-finite result was accepted")
	}
}

// FuzzFilter: compiling and running arbitrary expressions on arbitrary rows
// returns errors, never panics.
func FuzzFilter(f *testing.F) {
	f.Add(`a > 1`, `{"a":2}`)
	f.Add(`a.b[0] == "x"`, `{"a":{"b":["x"]}}`)
	f.Add(`len(a) / 0 > 1`, `{"a":"abc"}`)
	f.Fuzz(func(t *testing.T, src, js string) {
		d := json.NewDecoder(strings.NewReader(js))
		d.UseNumber()
		var r record.Row
		if d.Decode(&r) != nil {
			return
		}
		if fl, err := CompileFilter(src); err == nil {
			_, _ = fl.Keep(r)
		}
		if v, err := CompileValue(src); err == nil {
			_, _ = v.Eval(Env(r))
		}
	})
}
