package reportfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	ok := func(w io.Writer) error { _, err := io.WriteString(w, "{}\n"); return err }
	if err := Write("", "b", &log, ok); err != nil || log.Len() > 0 {
		t.Fatalf("no path: %v, %q", err, log.String())
	}
	p := filepath.Join(dir, "r.json")
	if err := Write(p, "b", &log, ok); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "{}\n" || !strings.Contains(log.String(), "b: report written to "+p) {
		t.Fatalf("file %q, log %q", b, log.String())
	}
	bad := errors.New("boom")
	if err := Write(p, "b", &log, func(io.Writer) error { return bad }); !errors.Is(err, bad) || !strings.Contains(err.Error(), p) {
		t.Fatalf("a failed write: %v", err)
	}
	if err := Write(filepath.Join(dir, "missing", "r.json"), "b", &log, ok); err == nil {
		t.Fatal("a file in a missing directory was written")
	}
}
