package main

import (
	"io"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/joinery/joinery/cmd/internal/refdoc"
)

// TestCLIReference: every joinctl command and flag has a row in
// docs/reference/cli.md ("joinctl key inspect", "joinctl key inspect
// --offline", "joinctl --server" for a global flag), and every joinctl row
// there names one. Cobra's own help and completion commands are left out.
func TestCLIReference(t *testing.T) {
	const page = "../../docs/reference/cli.md"
	root := newRoot(io.Discard, io.Discard, func(string) string { return "" })
	var code []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		fs := c.LocalNonPersistentFlags()
		if c == root {
			fs = c.PersistentFlags()
		} else {
			code = append(code, c.CommandPath())
		}
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" {
				code = append(code, c.CommandPath()+" --"+f.Name)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if len(code) < 10 {
		t.Fatalf("found only %d commands and flags", len(code))
	}
	rows, err := refdoc.Rows(page)
	if err != nil {
		t.Fatal(err)
	}
	var doc []string
	for _, r := range rows {
		if r.Name == "joinctl" || len(r.Name) > 8 && r.Name[:8] == "joinctl " {
			doc = append(doc, r.Name)
		}
	}
	missing, stale := refdoc.Diff(code, doc)
	for _, m := range missing {
		t.Errorf("%q is not in %s", m, page)
	}
	for _, s := range stale {
		t.Errorf("%s: %q is documented but joinctl has no such command or flag", page, s)
	}
}
