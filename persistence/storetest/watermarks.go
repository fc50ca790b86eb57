package storetest

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joinery/joinery/persistence"
)

// RunWatermarks runs the conformance cases of persistence.WatermarkStore as
// subtests of t; open returns a fresh, empty store for one subtest.
func RunWatermarks(t *testing.T, open func(t *testing.T) persistence.WatermarkStore) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s persistence.WatermarkStore)
	}{
		{"WatermarksPublishList", testWatermarksPublishList},
		{"WatermarksConcurrent", testWatermarksConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			if c, ok := s.(interface{ Close() error }); ok {
				t.Cleanup(func() { _ = c.Close() })
			}
			tc.fn(t, s)
		})
	}
}

func listWatermarks(t *testing.T, s persistence.WatermarkStore, job string) []persistence.NodeWatermark {
	t.Helper()
	got, err := s.Watermarks(ctx(t), job)
	if err != nil {
		t.Fatalf("Watermarks(%q): %v", job, err)
	}
	slices.SortFunc(got, func(a, b persistence.NodeWatermark) int { return strings.Compare(a.Node, b.Node) })
	return got
}

func testWatermarksPublishList(t *testing.T, s persistence.WatermarkStore) {
	if got := listWatermarks(t, s, "j"); len(got) != 0 {
		t.Fatalf("unknown job: %v, want none", got)
	}
	hb := time.UnixMilli(1_700_000_000_123)
	want := []persistence.NodeWatermark{
		{Node: "a", Watermark: math.MinInt64, Heartbeat: hb},
		{Node: "b{x}|y", Watermark: 42, Heartbeat: hb.Add(time.Millisecond), Idle: true},
		{Node: "c", Watermark: math.MaxInt64, Heartbeat: hb},
	}
	for _, w := range want {
		if err := s.PublishWatermark(ctx(t), "j", w); err != nil {
			t.Fatalf("PublishWatermark(%v): %v", w, err)
		}
	}
	// Another job (with braces) sees none of them.
	if err := s.PublishWatermark(ctx(t), "j}{", persistence.NodeWatermark{Node: "a", Watermark: 7, Heartbeat: hb}); err != nil {
		t.Fatal(err)
	}
	check := func(want []persistence.NodeWatermark) {
		t.Helper()
		got := listWatermarks(t, s, "j")
		if len(got) != len(want) {
			t.Fatalf("Watermarks = %v, want %v", got, want)
		}
		for i := range got {
			if got[i].Node != want[i].Node || got[i].Watermark != want[i].Watermark || got[i].Idle != want[i].Idle ||
				!got[i].Heartbeat.Equal(want[i].Heartbeat) {
				t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
			}
		}
	}
	check(want)
	// Publishing replaces the node's entry.
	want[0].Watermark, want[0].Heartbeat = 1000, hb.Add(time.Second)
	if err := s.PublishWatermark(ctx(t), "j", want[0]); err != nil {
		t.Fatal(err)
	}
	check(want)
	if err := s.DeleteWatermark(ctx(t), "j", "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteWatermark(ctx(t), "j", "missing"); err != nil {
		t.Fatalf("deleting a missing entry: %v", err)
	}
	check(want[:2])
	if got := listWatermarks(t, s, "j}{"); len(got) != 1 || got[0].Watermark != 7 {
		t.Errorf("other job: %v, want one entry at 7", got)
	}
	if c, ok := s.(interface{ Close() error }); ok {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Watermarks(ctx(t), "j"); !errors.Is(err, persistence.ErrClosed) {
			t.Errorf("Watermarks after Close: %v, want ErrClosed", err)
		}
	}
}

func testWatermarksConcurrent(t *testing.T, s persistence.WatermarkStore) {
	var wg sync.WaitGroup
	for n := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				w := persistence.NodeWatermark{Node: string(rune('a' + n)), Watermark: int64(i), Heartbeat: time.UnixMilli(int64(i))}
				if err := s.PublishWatermark(ctx(t), "j", w); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Watermarks(ctx(t), "j"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := listWatermarks(t, s, "j")
	if len(got) != 4 {
		t.Fatalf("Watermarks = %v, want 4 entries", got)
	}
	for _, w := range got {
		if w.Watermark != 49 {
			t.Errorf("node %s at %d, want its last write 49", w.Node, w.Watermark)
		}
	}
}
