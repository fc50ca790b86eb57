package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeReplayEvents runs `replay --job --input` as the binary does on
// examples/replay cases and checks stdout against expected.jsonl, the late
// lines (--late file, or stderr) and the summary line.
func TestNodeReplayEvents(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "replay", "window-lateness")
	want, err := os.ReadFile(filepath.Join(dir, "expected.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	wantLate, err := os.ReadFile(filepath.Join(dir, "expected-late.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	late := filepath.Join(t.TempDir(), "late.jsonl")
	var out, errOut strings.Builder
	code := run([]string{"replay", "--job", filepath.Join(dir, "job.yaml"), "--input", filepath.Join(dir, "input.jsonl"), "--late", late}, &out, &errOut)
	if code != 0 || out.String() != string(want) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if got, _ := os.ReadFile(late); string(got) != string(wantLate) {
		t.Fatalf("--late file:\n%s\nwant:\n%s", got, wantLate)
	}
	if !strings.HasPrefix(errOut.String(), `{"summary":{"lines":9,"inputs":7,"watermarks":2,"outputs":4,"late":1,`) {
		t.Fatalf("stderr: %s", errOut.String())
	}

	// Without --late the late lines go to stderr, before the summary; hold
	// keeps window [6,11) from firing.
	out.Reset()
	errOut.Reset()
	code = run([]string{"replay", "--job", filepath.Join(dir, "job.yaml"), "--input", filepath.Join(dir, "input.jsonl"), "--end-of-input", "hold", "--ops", "always"}, &out, &errOut)
	if code != 0 || strings.Count(out.String(), "\n") != 3 || !strings.Contains(out.String(), `"ts":5,"op":"+I"}`) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if !strings.HasPrefix(errOut.String(), string(wantLate)+`{"summary":`) {
		t.Fatalf("stderr: %s", errOut.String())
	}

	// --late - puts the late line on stdout, in order: after the window
	// [1,6) firings it missed, before the end-of-input firing.
	out.Reset()
	errOut.Reset()
	code = run([]string{"replay", "--job", filepath.Join(dir, "job.yaml"), "--input", filepath.Join(dir, "input.jsonl"), "--late", "-"}, &out, &errOut)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if code != 0 || len(lines) != 5 || lines[3]+"\n" != string(wantLate) {
		t.Fatalf("exit %d\nstdout:\n%s", code, out.String())
	}
}

// TestNodeReplayErrors: usage and job errors exit 2, input errors exit 1
// naming the line.
func TestNodeReplayErrors(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	job := write("job.yaml", "join: {type: interval, lower: -2ms, upper: 1ms}\n")
	bad := write("bad.yaml", "join: {type: interval, lower: 5ms, upper: 2ms}\n")
	in := write("in.jsonl", `{"side":"left","key":1,"ts":1,"value":1}`+"\n"+`{"side":"blue","key":1,"ts":1}`+"\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no job", []string{"replay"}, 2, "--job (or --spec) is required"},
		{"both modes", []string{"replay", "--job", job, "--spec", job}, 2, "not both"},
		{"input with spec", []string{"replay", "--spec", job, "--input", in}, 2, "go with --job"},
		{"missing job", []string{"replay", "--job", filepath.Join(tmp, "none.yaml")}, 2, "--job:"},
		{"lower > upper", []string{"replay", "--job", bad, "--input", in}, 2, "join.lower: must be <= upper (5 > 2)"},
		{"bad end", []string{"replay", "--job", job, "--input", in, "--end-of-input", "x"}, 2, "--end-of-input"},
		{"bad ops", []string{"replay", "--job", job, "--input", in, "--ops", "x"}, 2, "--ops"},
		{"unknown side", []string{"replay", "--job", job, "--input", in}, 1, `input line 2: side: unknown side "blue"`},
		{"extra arg", []string{"replay", "--job", job, "x"}, 2, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tc.code, errOut.String(), tc.want)
			}
		})
	}
}
