// Package transcript runs transcript tests (etcd-io/raft's interaction
// tests, cockroachdb/datadriven): a file of blocks, each a command, a line
// "----" and the expected answer, blocks separated by blank lines, lines
// starting with # comments. The test's harness answers each command; with
// rewrite the expected answers are regenerated in place (inspect the diff
// before committing).
//
// It owns the file format and the rewrite, nothing of what a command
// means. It imports only the standard library and is for tests only.
package transcript

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Run runs every file matching glob as a subtest named by the file's base
// name: newHarness gives the file a fresh harness, which answers each
// command in turn.
func Run(t *testing.T, glob string, rewrite bool, newHarness func() func(t *testing.T, cmd string) string) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts match %s: %v", glob, err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := Parse(string(b))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			run := newHarness()
			var out strings.Builder
			changed := false
			for i, bl := range blocks {
				if i > 0 {
					out.WriteString("\n")
				}
				out.WriteString(bl.Comments)
				got := run(t, bl.Cmd)
				if got != bl.Want {
					if !rewrite {
						t.Errorf("%s:%d: %s\n--- want\n%s--- got\n%s", path, bl.Line, bl.Cmd, bl.Want, got)
					}
					changed = true
				}
				fmt.Fprintf(&out, "%s\n----\n%s", bl.Cmd, got)
			}
			if rewrite && changed {
				if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Block is one command of a transcript and its expected answer.
type Block struct {
	Comments string // the # lines before the command, each with its newline
	Cmd      string
	Want     string // each line with its newline
	Line     int    // the command's line, from 1
}

// Parse splits a transcript into its blocks.
func Parse(s string) ([]Block, error) {
	var bs []Block
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); {
		var b Block
		for i < len(lines) && (strings.HasPrefix(lines[i], "#") || strings.TrimSpace(lines[i]) == "") {
			if strings.HasPrefix(lines[i], "#") {
				b.Comments += lines[i] + "\n"
			}
			i++
		}
		if i >= len(lines) {
			break
		}
		b.Cmd, b.Line = lines[i], i+1
		i++
		if i >= len(lines) || lines[i] != "----" {
			return nil, fmt.Errorf("line %d: want ---- after the command", i+1)
		}
		i++
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			b.Want += lines[i] + "\n"
			i++
		}
		bs = append(bs, b)
	}
	return bs, nil
}
