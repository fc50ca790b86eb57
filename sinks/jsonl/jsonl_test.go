package jsonl

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/record"
)

var batch = []record.Output{
	{ID: "a", Kind: record.Insert, PK: "[1]", Row: record.Row{"x": "1"}},
	{ID: "b", Kind: record.UpdateBefore, PK: "[1]", Row: record.Row{"x": "1"}},
	{ID: "c", Kind: record.UpdateAfter, PK: "[1]", Row: record.Row{"x": "2"}},
	{ID: "d", Kind: record.Delete, PK: "[1]", Row: record.Row{"x": "2"}},
}

func TestJSONLWriter(t *testing.T) {
	for _, tc := range []struct {
		f    changelog.Format
		want string
	}{
		{changelog.Changelog, `{"id":"a","op":"+I","pk":[1],"row":{"x":"1"}}
{"id":"b","op":"-U","pk":[1],"row":{"x":"1"}}
{"id":"c","op":"+U","pk":[1],"row":{"x":"2"}}
{"id":"d","op":"-D","pk":[1],"row":{"x":"2"}}
`},
		{changelog.Upsert, `{"id":"a","key":[1],"value":{"x":"1"}}
{"id":"c","key":[1],"value":{"x":"2"}}
{"id":"d","key":[1],"value":null}
`},
	} {
		t.Run(tc.f.String(), func(t *testing.T) {
			var buf bytes.Buffer
			s := New(&buf, tc.f)
			if err := s.Write(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			// Flushed before Write returns, without Close.
			if buf.String() != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", buf.String(), tc.want)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if err := s.Write(context.Background(), batch); !errors.Is(err, ErrClosed) {
				t.Fatalf("Write after Close = %v", err)
			}
		})
	}
}

func TestJSONLFileAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	for i := 0; i < 2; i++ {
		s, err := Create(path, changelog.Changelog)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(context.Background(), batch[:1]); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("file has %d lines, want 2:\n%s", len(lines), b)
	}
	for _, l := range lines {
		o, err := changelog.DecodeChangelog([]byte(l))
		if err != nil || o.ID != "a" {
			t.Fatalf("line %q: %v %v", l, o, err)
		}
	}
}

// TestJSONLFileCutsPartialLine: a node killed in the middle of a write left
// part of a line at the end of its file; the restarted node's sink cuts it
// off before appending, so the file stays whole lines (the cut outputs are
// written again: their offsets were not committed).
func TestJSONLFileCutsPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s, err := Create(path, changelog.Changelog)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), batch[:1]); err != nil {
		t.Fatal(err)
	}
	s.Close()
	partial := `{"id":"b","op":"-U","pk":[1],"ro`
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(partial)
	f.Close()
	if s, err = Create(path, changelog.Changelog); err != nil {
		t.Fatal(err)
	}
	if s.Cut() != int64(len(partial)) {
		t.Errorf("Cut() = %d, want %d", s.Cut(), len(partial))
	}
	if err := s.Write(context.Background(), batch[1:]); err != nil {
		t.Fatal(err)
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		o, err := changelog.DecodeChangelog([]byte(l))
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		ids = append(ids, o.ID)
	}
	if got := strings.Join(ids, ","); got != "a,b,c,d" {
		t.Errorf("ids %s, want a,b,c,d", got)
	}
}

func TestJSONLBadOutputWritesNothing(t *testing.T) {
	var buf bytes.Buffer
	s := New(&buf, changelog.Changelog)
	bad := append([]record.Output{batch[0]}, record.Output{ID: "z", PK: "[oops"})
	if err := s.Write(context.Background(), bad); err == nil {
		t.Fatal("Write succeeded")
	}
	if buf.Len() != 0 {
		t.Fatalf("wrote %q", buf.String())
	}
	if _, err := Create(filepath.Join(t.TempDir(), "no", "such", "dir"), changelog.Changelog); err == nil {
		t.Fatal("Create in missing dir succeeded")
	}
}

// TestJSONLReusedBuffer: the sink's lines buffer, reused from one Write to
// the next, holds only the current batch's lines, after a longer batch and
// after a batch that failed half-way.
func TestJSONLReusedBuffer(t *testing.T) {
	var buf bytes.Buffer
	s := New(&buf, changelog.Changelog)
	long := make([]record.Output, 0, 40)
	for range 10 {
		long = append(long, batch...)
	}
	bad := append([]record.Output{batch[2]}, record.Output{ID: "z", PK: "[oops"})
	var want strings.Builder
	for _, tc := range []struct {
		name string
		outs []record.Output
		ok   bool
	}{
		{"long", long, true},
		{"short", batch[:1], true},
		{"failed half-way", bad, false},
		{"after the failure", batch[3:], true},
	} {
		var one bytes.Buffer
		if tc.ok {
			ref := New(&one, changelog.Changelog)
			if err := ref.Write(context.Background(), tc.outs); err != nil {
				t.Fatal(err)
			}
		}
		want.Write(one.Bytes())
		if err := s.Write(context.Background(), tc.outs); (err == nil) != tc.ok {
			t.Fatalf("%s: Write = %v, want ok %v", tc.name, err, tc.ok)
		}
		if buf.String() != want.String() {
			t.Fatalf("after %s: got\n%s\nwant\n%s", tc.name, buf.String(), want.String())
		}
	}
}
