package node_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/joinery/joinery/internal/cdcgen"
)

// TestNodeSourceFilter runs a random users ⋈ domains history through a
// source filter on a column that updates change (domain_name). Filtering a
// changelog per row image keeps it a changelog, so the result must equal the
// join of the final tables with the filter applied to the final rows: a
// domain renamed out of the filter leaves the result, one renamed into it
// enters.
func TestNodeSourceFilter(t *testing.T) {
	h := cdcgen.Generate(cdcgen.Config{Seed: 9, Users: 30, Domains: 90, Changes: 1500})
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "in.jsonl"), h.Lines)
	n := start(t, parse(t, dir, "name: filtered\n"+joinYAML+`
sources:
  - name: cdc
    type: file
    path: in.jsonl
    tables: {users: left, domains: right}
    filter: '_table != "domains" || int(split(domain_name, "-")[1]) < 50'
sinks: [{type: table}]
`))
	run(t, n)
	suffix := func(name any) int {
		var id, n int
		fmt.Sscanf(fmt.Sprint(name), "d%d-%d", &id, &n)
		return n
	}
	kept, dropped := 0, 0
	for id, d := range h.Domains {
		if suffix(d["domain_name"]) >= 50 {
			delete(h.Domains, id)
			dropped++
		} else {
			kept++
		}
	}
	if kept == 0 || dropped == 0 {
		t.Fatalf("the filter keeps %d domains and drops %d: the test needs both kinds", kept, dropped)
	}
	diff(t, "filtered", tableMap(n.Table()), h.LeftJoin())
	if n.Stats().Filtered.Load() == 0 {
		t.Error("no change counted as filtered")
	}
	for _, row := range n.Table() {
		if name := row.Row["domain_name"]; name != nil && suffix(name) >= 50 {
			t.Errorf("row %s passed the filter: %v", row.PK, row.Row)
		}
	}
}
