package file

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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

// BenchmarkFollowTrickle appends one line every 10 ms to a followed file
// and reports how long each took to come out of Read (p50, p99, max in ms):
// a figure, not a check. JOINERY_FOLLOW_POLL=1 measures the poll alone
// (no inotify), as before the waker.
func BenchmarkFollowTrickle(b *testing.B) {
	path := filepath.Join(b.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Name: "f", Path: path, Follow: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if os.Getenv("JOINERY_FOLLOW_POLL") != "" && s.waker != nil {
		s.waker.Close() // its waits return at once: make it poll
		s.waker = nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	var lat []float64
	for b.Loop() {
		time.Sleep(10 * time.Millisecond)
		t0 := time.Now()
		if _, err := f.WriteString("x\n"); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Read(ctx, 10); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[min(len(lat)-1, len(lat)*99/100)], "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
}

// TestWakerWaitAfterClose: a wait that starts after Close returns at once.
// Close can come between the reader's check for a stop and its wait; the
// wait used to sleep the whole poll when it could no longer set the
// deadline, so Close, which waits for the reader, hung (seen under load in
// TestFileSourceFollowWakesOnWrite, whose poll is an hour).
func TestWakerWaitAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w := newWaker(path)
	if w == nil {
		t.Fatal("no inotify waker on Linux")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { w.wait(time.Hour); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("wait after Close did not return")
	}
}
