package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/joinery/joinery/cmd/internal/refdoc"
)

// TestCLIReference: every joinery command (its usage lines) and each
// command's flags (what its -h prints) have a row in
// docs/reference/cli.md ("joinery run", "joinery run --config"), and every
// joinery row there names one.
func TestCLIReference(t *testing.T) {
	const page = "../../docs/reference/cli.md"
	var usage bytes.Buffer
	if run(nil, io.Discard, &usage) != 2 {
		t.Fatal("joinery without a command: want exit 2")
	}
	cmdLine := regexp.MustCompile(`(?m)^  joinery ([a-z]+) `)
	flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	seen := map[string]bool{}
	var code []string
	for _, m := range cmdLine.FindAllStringSubmatch(usage.String(), -1) {
		cmd := m[1]
		if seen[cmd] {
			continue
		}
		seen[cmd] = true
		code = append(code, "joinery "+cmd)
		var help bytes.Buffer
		run([]string{cmd, "-h"}, io.Discard, &help)
		flags := flagLine.FindAllStringSubmatch(help.String(), -1)
		if len(flags) == 0 {
			t.Fatalf("joinery %s -h lists no flags:\n%s", cmd, help.String())
		}
		for _, f := range flags {
			code = append(code, "joinery "+cmd+" --"+f[1])
		}
	}
	if len(seen) < 3 {
		t.Fatalf("usage names %d commands:\n%s", len(seen), usage.String())
	}
	rows, err := refdoc.Rows(page)
	if err != nil {
		t.Fatal(err)
	}
	var doc []string
	for _, r := range rows {
		if strings.HasPrefix(r.Name, "joinery ") {
			doc = append(doc, r.Name)
		}
	}
	missing, stale := refdoc.Diff(code, doc)
	for _, m := range missing {
		t.Errorf("%q is not in %s", m, page)
	}
	for _, s := range stale {
		t.Errorf("%s: %q is documented but joinery has no such command or flag", page, s)
	}
}
