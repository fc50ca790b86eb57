package file

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// readAll reads until io.EOF with the given batch size.
func readAll(t *testing.T, s *Source, max int) []sources.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []sources.Message
	for {
		msgs, err := s.Read(ctx, max)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if len(msgs) == 0 || len(msgs) > max {
			t.Fatalf("Read returned %d messages, max %d", len(msgs), max)
		}
		out = append(out, msgs...)
	}
}

type line struct {
	off int64
	val string
}

func lines(msgs []sources.Message) []line {
	var out []line
	for _, m := range msgs {
		out = append(out, line{m.Pos.Offset, string(m.Value)})
	}
	return out
}

func TestFileSourceLines(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in         string
		startAfter int64
		maxLine    int
		want       []line
	}{
		{name: "empty", in: "", want: nil},
		{name: "one unterminated", in: `{"a":1}`, want: []line{{1, `{"a":1}`}}},
		{name: "terminated", in: "a\nb\n", want: []line{{1, "a"}, {2, "b"}}},
		{name: "blank lines keep offsets dense", in: "a\n\n\nb\n", want: []line{{1, "a"}, {2, ""}, {3, ""}, {4, "b"}}},
		{name: "crlf", in: "a\r\nb\r\n", want: []line{{1, "a"}, {2, "b"}}},
		{name: "start after", in: "a\nb\nc\nd", startAfter: 2, want: []line{{3, "c"}, {4, "d"}}},
		{name: "start after the end", in: "a\nb\n", startAfter: 5, want: nil},
		{name: "long line cut", in: "abcdefgh\nxy\nabcd\n", maxLine: 4, want: []line{{1, "abcd"}, {2, "xy"}, {3, "abcd"}}},
		{name: "long last line cut", in: "x\nabcdefgh", maxLine: 4, want: []line{{1, "x"}, {2, "abcd"}}},
	} {
		for _, max := range []int{1, 2, 100} {
			s, err := New(Config{Name: "users", Reader: strings.NewReader(tc.in), StartAfter: tc.startAfter, MaxLineBytes: tc.maxLine})
			if err != nil {
				t.Fatal(err)
			}
			msgs := readAll(t, s, max)
			got := lines(msgs)
			if len(got) != len(tc.want) {
				t.Fatalf("%s max=%d: got %v, want %v", tc.name, max, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("%s max=%d: got %v, want %v", tc.name, max, got, tc.want)
				}
				if p := msgs[i].Pos; p.Source != "users" || p.Partition != 0 {
					t.Fatalf("%s: position %v", tc.name, p)
				}
			}
			// EOF is sticky.
			if _, err := s.Read(context.Background(), 1); err != io.EOF {
				t.Fatalf("%s: Read after EOF = %v", tc.name, err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestFileSourceHugeLine(t *testing.T) {
	big := strings.Repeat("x", 300<<10) // longer than the bufio buffer
	s, err := New(Config{Name: "n", Reader: strings.NewReader(big + "\n" + big + "\nz\n"), MaxLineBytes: 200 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := readAll(t, s, 10)
	if len(got) != 3 || len(got[0].Value) != 200<<10 || len(got[1].Value) != 200<<10 || string(got[2].Value) != "z" || got[2].Pos.Offset != 3 {
		t.Fatalf("got %d messages", len(got))
	}
}

func TestFileSourcePathAndCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte("1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Name: "f", Path: path, StartAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := lines(readAll(t, s, 10)); len(got) != 2 || got[0] != (line{2, "2"}) {
		t.Fatalf("got %v", got)
	}
	if s.Committed() != 1 {
		t.Fatalf("Committed = %d, want StartAfter 1", s.Committed())
	}
	ctx := context.Background()
	if err := s.Commit(ctx, []record.Position{{Source: "f", Offset: 3}, {Source: "other", Offset: 99}, {Source: "f", Offset: 2}}); err != nil {
		t.Fatal(err)
	}
	if s.Committed() != 3 {
		t.Fatalf("Committed = %d, want 3", s.Committed())
	}
	if err := s.Commit(ctx, []record.Position{{Source: "f", Partition: 1, Offset: 5}}); err == nil {
		t.Fatal("Commit of partition 1 succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := New(Config{Name: "f", Path: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("New of a missing file succeeded")
	}
}

func TestFileSourceConfigValidate(t *testing.T) {
	err := Config{StartAfter: -1, MaxLineBytes: -1}.Validate()
	for _, field := range []string{"Name", "Path", "StartAfter", "MaxLineBytes"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate error %v does not name %s", err, field)
		}
	}
}

// TestFileSourceBlockingReader checks that Read honours ctx and Close while
// the input (a pipe, like stdin) has no data.
func TestFileSourceBlockingReader(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	s, err := New(Config{Name: "stdin", Reader: pr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Read(ctx, 10); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read = %v, want deadline exceeded", err)
	}
	go func() { _, _ = pw.Write([]byte("a\nb")) }()
	msgs, err := s.Read(context.Background(), 10)
	if err != nil || len(msgs) != 1 || string(msgs[0].Value) != "a" {
		t.Fatalf("Read = %v, %v", lines(msgs), err)
	}
	s.Close()
	if _, err := s.Read(context.Background(), 10); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close = %v", err)
	}
	pw.Close() // lets the reader goroutine exit
}

func TestFileSourceFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte("a\nb"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Name: "f", Path: path, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msgs, err := s.Read(ctx, 10)
	if err != nil || len(lines(msgs)) != 1 || lines(msgs)[0] != (line{1, "a"}) {
		t.Fatalf("Read = %v, %v", lines(msgs), err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("c\nd\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var got []line
	for len(got) < 2 {
		msgs, err := s.Read(ctx, 10)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		got = append(got, lines(msgs)...)
	}
	if len(got) != 2 || got[0] != (line{2, "bc"}) || got[1] != (line{3, "d"}) {
		t.Fatalf("got %v", got)
	}
}
