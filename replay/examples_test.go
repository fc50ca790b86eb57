package replay_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/joinery/joinery/replay"
)

var rewrite = flag.Bool("rewrite", false, "rewrite examples/replay/*/expected.jsonl and expected-late.jsonl")

// TestReplayExamples runs every examples/replay/<case>/ through the events
// mode (job.yaml + input.jsonl, as joinery replay --job --input runs them)
// and compares the outputs with expected.jsonl and the late and dropped
// inputs with expected-late.jsonl (absent: none). With -rewrite the expected
// files are regenerated (go test ./replay/ -run TestReplayExamples
// -rewrite); inspect the diff before committing.
func TestReplayExamples(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "examples", "replay", "*", "job.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, jobPath := range dirs {
		dir := filepath.Dir(jobPath)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			jb, in := loadExample(t, dir)
			var out, late bytes.Buffer
			if _, err := replay.RunEvents(jb, bytes.NewReader(in), &out, replay.Options{Late: &late}); err != nil {
				t.Fatal(err)
			}
			// The same input again gives the same bytes, and so does a run
			// that snapshots and restores every key after every line.
			var again bytes.Buffer
			if _, err := replay.RunEvents(jb, bytes.NewReader(withSnapshots(in)), &again, replay.Options{}); err != nil {
				t.Fatal(err)
			}
			if again.String() != out.String() {
				t.Errorf("with snapshots after every line the output differs:\n--- plain\n%s--- snapshots\n%s", out.String(), again.String())
			}
			golden(t, filepath.Join(dir, "expected.jsonl"), out.Bytes(), true)
			golden(t, filepath.Join(dir, "expected-late.jsonl"), late.Bytes(), late.Len() > 0)
		})
	}
}

// loadExample reads examples/replay/<case>/ (dir): its job.yaml, parsed,
// and its input.jsonl.
func loadExample(t *testing.T, dir string) (*replay.Job, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	jb, err := replay.ParseJob(b)
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile(filepath.Join(dir, "input.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return jb, in
}

// withSnapshots puts a snapshot line after every line, keeping line
// numbers out of the outputs (events outputs carry none).
func withSnapshots(in []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.Split(bytes.TrimSuffix(in, []byte("\n")), []byte("\n")) {
		b.Write(l)
		b.WriteString("\n{\"snapshot\":true}\n")
	}
	return b.Bytes()
}

// golden compares got with the file at path (a missing file is empty); with
// -rewrite it writes got there, removing the file when got is empty and
// keep is false.
func golden(t *testing.T, path string, got []byte, keep bool) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if bytes.Equal(want, got) {
		return
	}
	if *rewrite {
		if len(got) == 0 && !keep {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
		return
	}
	t.Errorf("%s differs (go test ./replay/ -run TestReplayExamples -rewrite)\n--- want\n%s--- got\n%s", path, want, got)
}
