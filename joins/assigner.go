package joins

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Window is the event-time window [Start, End). Its elements' largest
// possible time, MaxTimestamp, End-1, is the time of its results (seed
// flink-joining: window [5,10) → 9) and the watermark that fires it.
type Window struct {
	Start int64 `json:"s"`
	End   int64 `json:"e"`
}

// MaxTimestamp is End-1.
func (w Window) MaxTimestamp() int64 { return w.End - 1 }

func (w Window) String() string {
	return "[" + strconv.FormatInt(w.Start, 10) + "," + strconv.FormatInt(w.End, 10) + ")"
}

// intersects is Flink's TimeWindow.intersects: the windows overlap or touch.
func (w Window) intersects(o Window) bool { return w.Start <= o.End && w.End >= o.Start }

// cover is the smallest window holding both.
func (w Window) cover(o Window) Window {
	return Window{Start: min(w.Start, o.Start), End: max(w.End, o.End)}
}

// AssignerKind names a window assigner.
type AssignerKind uint8

const (
	// TumblingWindows: fixed, non-overlapping windows of Size.
	TumblingWindows AssignerKind = iota + 1
	// SlidingWindows: windows of Size starting every Slide.
	SlidingWindows
	// SessionWindows: per key, elements closer than Gap share a window.
	SessionWindows
)

func (k AssignerKind) String() string {
	switch k {
	case TumblingWindows:
		return "tumbling"
	case SlidingWindows:
		return "sliding"
	case SessionWindows:
		return "session"
	}
	return fmt.Sprintf("AssignerKind(%d)", uint8(k))
}

// Assigner assigns event times to windows, as Flink's event-time window
// assigners do. Build one with Tumbling, Sliding or Session. It is a plain
// value; times and lengths are in ms.
type Assigner struct {
	Kind   AssignerKind
	Size   int64 // tumbling and sliding
	Slide  int64 // sliding
	Offset int64 // tumbling and sliding: shifts window starts
	Gap    int64 // session
}

// Tumbling assigns each time to the one window [start, start+size) with
// start = WindowStart(ts, offset, size) (TumblingEventTimeWindows.of(size,
// offset)). Valid when size > 0 and |offset| < size.
func Tumbling(size, offset int64) Assigner {
	return Assigner{Kind: TumblingWindows, Size: size, Offset: offset}
}

// Sliding assigns each time to the ceil(size/slide) windows of size whose
// starts are offset plus a multiple of slide and that contain it
// (SlidingEventTimeWindows.of(size, slide, offset)). Valid when size > 0,
// slide > 0 and |offset| < slide.
func Sliding(size, slide, offset int64) Assigner {
	return Assigner{Kind: SlidingWindows, Size: size, Slide: slide, Offset: offset}
}

// Session assigns each time ts the window [ts, ts+gap); windows of a key
// (both sides together) that overlap or touch merge (Flink's
// EventTimeSessionWindows.withGap and TimeWindow.intersects). So elements at
// a and b >= a share a session when b-a <= gap: with gap 1 ms, sessions are
// separated by at least one empty millisecond, as in the seed. Valid when
// gap > 0.
func Session(gap int64) Assigner { return Assigner{Kind: SessionWindows, Gap: gap} }

// WindowStart is Flink's TimeWindow.getWindowStartWithOffset:
// ts - ((ts - offset) % size + size) % size, computed without overflowing
// near the ends of the int64 range (a start below math.MinInt64 is
// math.MinInt64). size must be positive.
func WindowStart(ts, offset, size int64) int64 {
	mod := func(x int64) int64 { // x mod size, in [0, size)
		if r := x % size; r < 0 {
			return r + size
		}
		return x % size
	}
	r := mod(ts) - mod(offset)
	if r < 0 {
		r += size
	}
	return subSat(ts, r)
}

// Validate reports every problem of the assigner, joined, each naming its
// field.
func (a Assigner) Validate() error {
	var c collector
	a.validate(&c, "")
	return c.err()
}

func (a Assigner) validate(c *collector, prefix string) {
	abs := func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	}
	switch a.Kind {
	case TumblingWindows:
		if a.Size <= 0 {
			c.bad(prefix+"size", "must be positive, got %d", a.Size)
		} else if a.Offset == math.MinInt64 || abs(a.Offset) >= a.Size {
			c.bad(prefix+"offset", "must be within (-size, size), got %d", a.Offset)
		}
	case SlidingWindows:
		if a.Size <= 0 {
			c.bad(prefix+"size", "must be positive, got %d", a.Size)
		}
		if a.Slide <= 0 {
			c.bad(prefix+"slide", "must be positive, got %d", a.Slide)
		} else if a.Offset == math.MinInt64 || abs(a.Offset) >= a.Slide {
			c.bad(prefix+"offset", "must be within (-slide, slide), got %d", a.Offset)
		}
	case SessionWindows:
		if a.Gap <= 0 {
			c.bad(prefix+"gap", "must be positive, got %d", a.Gap)
		}
	default:
		c.bad(prefix+"kind", "unknown window assigner %d (want tumbling, sliding or session)", a.Kind)
	}
}

// merging reports whether windows merge (sessions).
func (a Assigner) merging() bool { return a.Kind == SessionWindows }

// Assign appends the windows of time ts to dst, by ascending start, and
// returns the extended slice. a must be valid.
func (a Assigner) Assign(ts int64, dst []Window) []Window {
	switch a.Kind {
	case TumblingWindows:
		s := WindowStart(ts, a.Offset, a.Size)
		dst = append(dst, Window{Start: s, End: addSat(s, a.Size)})
	case SlidingWindows:
		// Flink walks down from the last start while start > ts - size; a
		// slide larger than size leaves some times in no window.
		n := len(dst)
		lowest := subSat(ts, a.Size)
		for s := WindowStart(ts, a.Offset, a.Slide); s > lowest; s -= a.Slide {
			dst = append(dst, Window{Start: s, End: addSat(s, a.Size)})
			if s-a.Slide > s {
				break // wrapped around
			}
		}
		slices.Reverse(dst[n:])
	case SessionWindows:
		dst = append(dst, Window{Start: ts, End: addSat(ts, a.Gap)})
	}
	return dst
}
