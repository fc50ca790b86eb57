package linefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenAppend(t *testing.T) {
	long := strings.Repeat("x", 150<<10) // longer than one backwards read
	for _, tc := range []struct {
		name, before string
		exists       bool
		cut          int64
		after        string // the file after OpenAppend and a write of "new\n"
	}{
		{name: "missing", after: "new\n"},
		{name: "empty", exists: true, after: "new\n"},
		{name: "whole lines", exists: true, before: "a\nb\n", after: "a\nb\nnew\n"},
		{name: "partial last line", exists: true, before: "a\nb\n{\"id\":", cut: 6, after: "a\nb\nnew\n"},
		{name: "only a partial line", exists: true, before: "{\"id\"", cut: 5, after: "new\n"},
		{name: "long partial line", exists: true, before: "a\n" + long, cut: int64(len(long)), after: "a\nnew\n"},
		{name: "long whole line", exists: true, before: long + "\n" + "b", cut: 1, after: long + "\nnew\n"},
		{name: "long partial line alone", exists: true, before: long, cut: int64(len(long)), after: "new\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			if tc.exists {
				if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f, cut, err := OpenAppend(path)
			if err != nil {
				t.Fatal(err)
			}
			if cut != tc.cut {
				t.Errorf("cut %d bytes, want %d", cut, tc.cut)
			}
			if _, err := f.WriteString("new\n"); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.after {
				t.Errorf("file %.40q..., want %.40q...", b, tc.after)
			}
		})
	}
}

func TestOpenAppendNotRegular(t *testing.T) {
	f, cut, err := OpenAppend(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cut != 0 {
		t.Errorf("cut %d bytes of %s", cut, os.DevNull)
	}
}

func TestOpenAppendError(t *testing.T) {
	if _, _, err := OpenAppend(filepath.Join(t.TempDir(), "no", "such", "dir", "f")); err == nil {
		t.Fatal("opened a file in a missing directory")
	}
}

func TestComplete(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""}, {"a\n", "a\n"}, {"a\nb", "a\n"}, {"ab", ""}, {"a\nb\n", "a\nb\n"},
	} {
		got, dropped := Complete([]byte(tc.in))
		if string(got) != tc.want || dropped != len(tc.in)-len(tc.want) {
			t.Errorf("Complete(%q) = %q, %d; want %q, %d", tc.in, got, dropped, tc.want, len(tc.in)-len(tc.want))
		}
	}
}
