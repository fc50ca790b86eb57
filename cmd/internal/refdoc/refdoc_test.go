package refdoc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/cmd/internal/refdoc"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

const (
	root    = "../../.."
	refDir  = root + "/docs/reference/"
	jobPage = refDir + "job.md"
	conPage = refDir + "connectors.md"
)

func rows(t *testing.T, path string) []refdoc.Row {
	t.Helper()
	rs, err := refdoc.Rows(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatalf("%s: no reference rows", path)
	}
	return rs
}

func names(rs []refdoc.Row) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// report fails t for every name the code has and the page lacks, and
// every name the page has and the code lacks.
func report(t *testing.T, what, page string, code, doc []string) {
	t.Helper()
	missing, stale := refdoc.Diff(code, doc)
	for _, m := range missing {
		t.Errorf("%s %q is not in %s", what, m, page)
	}
	for _, s := range stale {
		t.Errorf("%s: %q is documented but not in the code", page, s)
	}
}

func dups(t *testing.T, page string, rs []refdoc.Row) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range rs {
		if l, ok := seen[r.Name]; ok {
			t.Errorf("%s:%d: %q is documented twice (line %d too)", page, r.Line, r.Name, l)
		}
		seen[r.Name] = r.Line
	}
}

// TestJobFields: every field of the job file (the job package's structs
// and each connector kind's configuration, by YAML tag) has a row in
// docs/reference/job.md (job fields) or docs/reference/connectors.md
// (connector fields, with the types that have them), and every row names
// such a field.
func TestJobFields(t *testing.T) {
	var code, codeConn []string
	types := map[string][]string{}
	for _, f := range refdoc.JobFields() {
		if len(f.Types) == 0 {
			code = append(code, f.Path)
			continue
		}
		codeConn = append(codeConn, f.Path)
		types[f.Path] = f.Types
	}
	jr, cr := rows(t, jobPage), rows(t, conPage)
	dups(t, jobPage, jr)
	dups(t, conPage, cr)
	report(t, "job field", jobPage, code, names(jr))
	report(t, "connector field", conPage, codeConn, names(cr))
	for _, r := range cr {
		want, ok := types[r.Name]
		if !ok || len(r.Cells) < 2 {
			continue
		}
		got := refdoc.CodeSpans(r.Cells[1])
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s:%d: %s: types %v, the code has it on %v", conPage, r.Line, r.Name, got, want)
		}
	}
}

var descName = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

// metrics are the node's metric names and their labels: the collectors
// admin.NewMetrics registers, and any other collector the tree declares in
// the joinery namespace (a literal Namespace: "joinery", Name: "…").
func metrics(t *testing.T) map[string][]string {
	out := map[string][]string{}
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		admin.NewMetrics().Registry().Describe(ch)
		close(ch)
	}()
	for d := range ch {
		m := descName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		slices.Sort(labels)
		out[m[1]] = labels
	}
	lit := regexp.MustCompile(`Namespace:\s*"joinery",\s*Name:\s*"([a-z_]+)"[\s\S]*?\}\s*,\s*\[\]string\{([^}]*)\}`)
	for _, src := range goFiles(t, root) {
		for _, m := range lit.FindAllStringSubmatch(src, -1) {
			var labels []string
			for _, l := range strings.Split(m[2], ",") {
				if l = strings.Trim(strings.TrimSpace(l), `"`); l != "" {
					labels = append(labels, l)
				}
			}
			slices.Sort(labels)
			out["joinery_"+m[1]] = labels
		}
	}
	return out
}

// goFiles reads the tree's Go files that are not tests.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetrics: every joinery_* metric has a row in docs/reference/metrics.md
// with its labels, and every row names such a metric.
func TestMetrics(t *testing.T) {
	const page = refDir + "metrics.md"
	code := metrics(t)
	if len(code) < 10 {
		t.Fatalf("found only %d metrics in the code", len(code))
	}
	rs := rows(t, page)
	dups(t, page, rs)
	var names []string
	for n := range code {
		names = append(names, n)
	}
	var doc []string
	for _, r := range rs {
		doc = append(doc, r.Name)
		want, ok := code[r.Name]
		if !ok || len(r.Cells) < 3 {
			continue
		}
		got := refdoc.CodeSpans(r.Cells[2])
		slices.Sort(got)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s:%d: %s: labels %v, the code has %v", page, r.Line, r.Name, got, want)
		}
	}
	report(t, "metric", page, names, doc)
}

// lateWords are the words an event-time join gives a late input (the
// joins package's Late… string constants), which follow reason.LatePrefix.
func lateWords(t *testing.T) []string {
	fs := token.NewFileSet()
	pkgs, err := parser.ParseDir(fs, root+"/joins", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if !strings.HasPrefix(n.Name, "Late") || i >= len(vs.Values) {
							continue
						}
						if bl, ok := vs.Values[i].(*ast.BasicLit); ok && bl.Kind == token.STRING {
							w, _ := strconv.Unquote(bl.Value)
							out = append(out, w)
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Late… words in joins")
	}
	return out
}

// TestRejectReasons: every reason word (reason.All, and reason.LatePrefix
// with each of the joins' late words) has a row in
// docs/reference/reject-reasons.md, and every row is such a word.
func TestRejectReasons(t *testing.T) {
	const page = refDir + "reject-reasons.md"
	var code []string
	for _, r := range reason.All {
		code = append(code, string(r))
	}
	for _, w := range lateWords(t) {
		code = append(code, string(reason.Late(w)))
	}
	rs := rows(t, page)
	dups(t, page, rs)
	report(t, "reject reason", page, code, names(rs))
}
