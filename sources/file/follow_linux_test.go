package file

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A following source reads a line appended to its idle file when it is
// written, not at the next poll: with the poll at an hour, every append
// must still be read within the test's deadline.
func TestFileSourceFollowWakesOnWrite(t *testing.T) {
	old := followPoll
	followPoll = time.Hour
	t.Cleanup(func() { followPoll = old })
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Name: "f", Path: path, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.waker == nil {
		t.Fatal("no inotify waker on Linux")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if msgs, err := s.Read(ctx, 10); err != nil || len(msgs) != 1 {
		t.Fatalf("Read = %v, %v", lines(msgs), err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, l := range []string{"b\n", "c\n", "d\n"} {
		time.Sleep(20 * time.Millisecond) // the reader is waiting at the end of the file
		if _, err := f.WriteString(l); err != nil {
			t.Fatal(err)
		}
		msgs, err := s.Read(ctx, 10)
		if err != nil {
			t.Fatalf("append %d: Read: %v (waited for the poll?)", i, err)
		}
		if got := lines(msgs); len(got) != 1 || got[0] != (line{int64(i + 2), l[:1]}) {
			t.Fatalf("append %d: got %v", i, got)
		}
	}
	// Close ends the reader's wait at once.
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the wait")
	}
}
