package node_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter"
)

// TestNodeContinuesFileCutByKill: a node killed in the middle of a write
// leaves its changelog file (and its dead-letter file) ending in part of a
// line; its outputs are written again after the restart, as the offsets
// were not committed. The restarted node cuts the partial line off before
// appending, and logs it: the changelog stays whole lines that replay to
// the true join (without the cut, its first line would be glued onto the
// partial one: chaos KillStreamReader failed so in CI).
func TestNodeContinuesFileCutByKill(t *testing.T) {
	redis := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 29, Users: 30, Domains: 90, Changes: 1200})
	dir := t.TempDir()
	in, out, dead := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dead.jsonl")
	half := len(h.Lines) / 2
	writeLines(t, in, h.Lines[:half])
	yml := "name: cut\n" + joinYAML + fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", redis.Addr) + `
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}, on_bad_input: dead-letter}]
sinks: [{type: file, path: out.jsonl, format: changelog}]
dead_letter: dead.jsonl
`
	first := start(t, parse(t, dir, yml))
	run(t, first)
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// What a kill in the middle of the next writes leaves: part of a line.
	partialOut := `{"id":"cdc-7f`
	partialDead := `{"source":"cdc","posi`
	appendBytes(t, out, partialOut)
	wholeDead := append(deadletter.New("parse", fmt.Errorf("earlier"), record.Position{Source: "cdc", Offset: 1}, []byte("x"), time.Now()).Marshal(), '\n')
	appendBytes(t, dead, string(wholeDead)+partialDead)

	writeLines(t, in, append(h.Lines[half:len(h.Lines):len(h.Lines)], []byte("not json")))
	logs := &testutil.SyncBuffer{}
	l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	second, err := node.Start(context.Background(), parse(t, dir, yml), node.Options{Logger: l, Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Close(context.Background()) })
	run(t, second)
	if err := second.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"file sink: cut a partial last line off the file",
		fmt.Sprintf("path=%s bytes=%d", out, len(partialOut)),
		"dead_letter: cut a partial last line off the file",
		fmt.Sprintf("path=%s bytes=%d", dead, len(partialDead)),
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}

	diff(t, "after the cut", tableMap(replayFile(t, out).Rows()), h.LeftJoin())

	b, err := os.ReadFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	for i, line := range lines {
		if _, err := deadletter.Decode(line); err != nil {
			t.Fatalf("dead.jsonl line %d: %v", i+1, err)
		}
	}
	if len(lines) != 2 {
		t.Errorf("dead.jsonl holds %d records, want the earlier one and the bad line's", len(lines))
	}
}

func appendBytes(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
