package connectors_test

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/connectors"
)

// entryA and entryB are two kinds' configurations.
type entryA struct {
	Path  string `yaml:"path"`
	Inner struct {
		Addr string   `yaml:"addr"`
		List []string `yaml:"list"`
	} `yaml:"inner"`
	Items []struct {
		N int `yaml:"n"`
	} `yaml:"items"`
	Shared `yaml:",inline"`
}

type Shared struct {
	Group string `yaml:"group"`
}

func (*entryA) Validate(v *connectors.Validator) { v.Require("path", true) }

type entryB struct {
	Shards int `yaml:"shards"`
}

func (*entryB) Validate(v *connectors.Validator) {
	if v.EventTime {
		v.Bad("shards", "not in an event-time job")
	}
}

var table = connectors.NewTable("source",
	connectors.SourceKind{Type: "a", New: func() connectors.Config { return new(entryA) }},
	connectors.SourceKind{Type: "b", New: func() connectors.Config { return new(entryB) }},
	connectors.SourceKind{Type: "none", New: func() connectors.Config { return connectors.None{} }},
)

// fields decodes a flow mapping as the job file's entry.
func fields(t *testing.T, in string) connectors.Fields {
	t.Helper()
	var f connectors.Fields
	if err := yaml.Unmarshal([]byte(in), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDecodeUnknownFields: a field no kind takes is an error at its path,
// nested ones included; one another kind takes names that kind.
func TestDecodeUnknownFields(t *testing.T) {
	for _, c := range []struct {
		typ, in string
		want    []string
	}{
		{"a", "{path: p, inner: {addr: x, list: [a]}, items: [{n: 1}], group: g}", nil},
		{"a", "{path: p, inner: {<<: {addr: x}, list: [a]}, items: [{n: 1}], group: g}", nil},
		{"a", "{path: p, inner: {<<: {adr: x}}}", []string{"sources[2].inner.adr: unknown field"}},
		{"a", "{path: p, pth: q}", []string{"sources[2].pth: unknown field"}},
		{"a", "{path: p, inner: {adr: x}}", []string{"sources[2].inner.adr: unknown field"}},
		{"a", "{items: [{n: 1}, {m: 2}]}", []string{"sources[2].items[1].m: unknown field"}},
		{"a", "{shards: 4, grup: g}", []string{"sources[2].shards: is only for a b source (this one is a)", "sources[2].grup: unknown field"}},
		{"none", "{path: p}", []string{"sources[2].path: is only for a a source (this one is none)"}},
		{"b", "{shards: many}", []string{"sources[2]: yaml: unmarshal errors:"}},
		{"c", "{}", []string{`sources[2].type: must be a, b or none (got "c")`}},
	} {
		_, cfg, errs := table.Decode("sources[2]", c.typ, fields(t, c.in))
		var got []string
		for _, err := range errs {
			got = append(got, err.Error())
		}
		if len(got) != len(c.want) {
			t.Errorf("%s %s: errors %q, want %q", c.typ, c.in, got, c.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s %s: error %q, want %q", c.typ, c.in, got[i], c.want[i])
			}
		}
		if len(c.want) == 0 {
			a := cfg.(*entryA)
			if a.Path != "p" || a.Inner.Addr != "x" || len(a.Items) != 1 || a.Group != "g" {
				t.Errorf("decoded %+v", a)
			}
		}
	}
}

// TestCompileValidates: Compile decodes and validates, with the job's
// context (EventTime), and names the entry in messages.
func TestCompileValidates(t *testing.T) {
	_, cfg, errs := table.Compile(&connectors.Validator{At: "sources[0]"}, "b", fields(t, "{shards: 3}"))
	if len(errs) != 0 || cfg.(*entryB).Shards != 3 {
		t.Fatalf("compile: %v %+v", errs, cfg)
	}
	_, cfg, errs = table.Compile(&connectors.Validator{At: "sources[0]", EventTime: true}, "b", fields(t, "{shards: 3}"))
	if len(errs) != 1 || errs[0].Error() != "sources[0].shards: not in an event-time job" || cfg != nil {
		t.Errorf("compile in an event-time job: %v %v", errs, cfg)
	}
}

// TestFieldsSet: Set changes a field at a path, creating mappings, and
// leaves the nodes it was read from (another entry's) unchanged.
func TestFieldsSet(t *testing.T) {
	orig := fields(t, "{path: p, inner: {addr: x}}")
	f := connectors.Fields{}
	for k, v := range orig {
		f[k] = v
	}
	for _, s := range []struct {
		path string
		v    any
	}{{"inner.addr", "y"}, {"inner.list", []string{"l"}}, {"items", []map[string]int{{"n": 2}}}, {"group", "g"}} {
		if err := f.Set(s.path, s.v); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Set("path.x", 1); err == nil {
		t.Error("set under a scalar: no error")
	}
	_, cfg, errs := table.Decode("s", "a", f)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	a := cfg.(*entryA)
	if a.Path != "p" || a.Inner.Addr != "y" || len(a.Inner.List) != 1 || a.Items[0].N != 2 || a.Group != "g" {
		t.Errorf("after Set: %+v", a)
	}
	_, cfg, _ = table.Decode("s", "a", orig)
	if o := cfg.(*entryA); o.Inner.Addr != "x" || o.Inner.List != nil {
		t.Errorf("Set changed the fields it copied: %+v", o)
	}
	built, err := connectors.FieldsOf(map[string]any{"path": "q", "inner": map[string]string{"addr": "z"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, cfg, errs := table.Decode("s", "a", built); len(errs) > 0 || cfg.(*entryA).Inner.Addr != "z" {
		t.Errorf("FieldsOf: %v %+v", errs, cfg)
	}
}
