// Package refdoc lists what the reference pages under docs/reference
// document, as the code defines it: every job-file field (walked from the
// job package's structs and each connector kind's configuration by their
// YAML tags), and reads the names a reference page documents (the first
// code span of each table row). Its tests, and cmd/joinctl's and
// cmd/node's, fail when the code and docs/reference disagree in either
// direction, so the reference cannot drift from the code.
package refdoc

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connectors/all"
	"github.com/joinery/joinery/job"
)

// Field is one job-file field: its path ("state.redis.addr",
// "sources[].kafka.brokers") and, for a connector field, the connector
// types that have it (sources[].type, sinks[].type, dead_letter.type).
type Field struct {
	Path  string
	Types []string
}

// JobFields lists every field of a job file, sorted by path.
func JobFields() []Field {
	byPath := map[string]*Field{}
	add := func(path, typ string) {
		f := byPath[path]
		if f == nil {
			f = &Field{Path: path}
			byPath[path] = f
		}
		if typ != "" && !contains(f.Types, typ) {
			f.Types = append(f.Types, typ)
		}
	}
	walk("", reflect.TypeOf(job.Spec{}), func(p string) { add(p, "") })
	connector := func(prefix string, types []string, config func(string) connectors.Config) {
		for _, typ := range types {
			walk(prefix, reflect.TypeOf(config(typ)), func(p string) { add(p, typ) })
		}
	}
	connector("sources[]", all.Sources.Types(), func(t string) connectors.Config { k, _ := all.Sources.Lookup(t); return k.New() })
	connector("sinks[]", all.Sinks.Types(), func(t string) connectors.Config { k, _ := all.Sinks.Lookup(t); return k.New() })
	connector("dead_letter", all.DeadLetters.Types(), func(t string) connectors.Config { k, _ := all.DeadLetters.Lookup(t); return k.New() })
	out := make([]Field, 0, len(byPath))
	for _, f := range byPath {
		sort.Strings(f.Types)
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

var (
	unmarshaler = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	fieldsType  = reflect.TypeOf(connectors.Fields{})
	durType     = reflect.TypeOf(time.Duration(0))
)

// walk calls leaf with the path of every field under t, a struct decoded
// at prefix. A struct field is a field of its own and, when its type has
// YAML fields, their parent; a slice of structs adds "[]".
func walk(prefix string, t reflect.Type, leaf func(string)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if sf.Type == fieldsType { // connector fields: walked per kind
			continue
		}
		if strings.Contains(opts, "inline") || (sf.Anonymous && tag == "") {
			walk(prefix, sf.Type, leaf)
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		ft := sf.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			leaf(p)
			walk(p+"[]", ft.Elem(), leaf)
			continue
		}
		leaf(p)
		if ft.Kind() == reflect.Struct && ft != durType && hasYAMLFields(ft) {
			walk(p, ft, leaf)
		}
	}
}

// hasYAMLFields: t decodes from a mapping of named fields (a struct with
// its own UnmarshalYAML and no tagged fields decodes a scalar).
func hasYAMLFields(t reflect.Type) bool {
	custom := reflect.PointerTo(t).Implements(unmarshaler)
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Tag.Get("yaml") != "" || !custom {
			return true
		}
	}
	return false
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Row is one table row of a reference page: its name (the row's first
// code span) and its cells.
type Row struct {
	Name  string
	Cells []string
	Line  int
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// Rows reads the table rows of the Markdown file at path whose first cell
// starts with a code span (header and separator rows have none).
func Rows(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []Row
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := splitRow(line)
		m := codeSpan.FindStringSubmatch(cells[0])
		if m == nil {
			continue
		}
		rows = append(rows, Row{Name: m[1], Cells: cells, Line: n})
	}
	return rows, sc.Err()
}

// splitRow splits a table row into its trimmed cells; a | inside a code
// span or escaped as \| does not split.
func splitRow(line string) []string {
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	var b strings.Builder
	inCode := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '`':
			inCode = !inCode
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
			continue
		case c == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
			continue
		}
		b.WriteByte(c)
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// CodeSpans are the code spans of s ("`kafka`, `file`" → kafka, file).
func CodeSpans(s string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// Diff reports what is in code but not in doc (missing) and what is in
// doc but not in code (stale), each sorted.
func Diff(code, doc []string) (missing, stale []string) {
	in := func(xs []string) map[string]bool {
		m := map[string]bool{}
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	c, d := in(code), in(doc)
	for x := range c {
		if !d[x] {
			missing = append(missing, x)
		}
	}
	for x := range d {
		if !c[x] {
			stale = append(stale, x)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	return missing, stale
}
