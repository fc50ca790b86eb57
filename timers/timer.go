package timers

import (
	"cmp"
	"container/heap"
	"slices"
	"strings"

	"github.com/joinery/joinery/record"
)

// Timer is an event-time timer: fire for Key once the watermark reaches Ts.
type Timer struct {
	Key record.Key
	Ts  int64
}

// compareTimers orders timers by timestamp, then key.
func compareTimers(a, b Timer) int {
	if c := cmp.Compare(a.Ts, b.Ts); c != 0 {
		return c
	}
	return strings.Compare(string(a.Key), string(b.Key))
}

// TimerService is the event-time timer index: at most one timer per (key,
// timestamp), fired in (timestamp, key) order. Register, Delete and each
// fired timer cost O(log n). It is not safe for concurrent use. The zero
// value is an empty service ready to use.
//
// A timer registered at or below a watermark already passed to Advance fires
// on the next Advance, as Flink does.
type TimerService struct {
	h     timerHeap
	byKey map[record.Key]map[int64]struct{}
}

// NewTimerService returns an empty service.
func NewTimerService() *TimerService { return &TimerService{} }

func (s *TimerService) init() {
	if s.h.index == nil {
		s.h.index = make(map[Timer]int)
		s.byKey = make(map[record.Key]map[int64]struct{})
	}
}

// Register adds a timer for key at ts. It reports false, and changes
// nothing, when that timer is already registered.
func (s *TimerService) Register(key record.Key, ts int64) bool {
	s.init()
	t := Timer{Key: key, Ts: ts}
	if _, ok := s.h.index[t]; ok {
		return false
	}
	heap.Push(&s.h, t)
	set := s.byKey[key]
	if set == nil {
		set = make(map[int64]struct{})
		s.byKey[key] = set
	}
	set[ts] = struct{}{}
	return true
}

// Delete removes the timer for key at ts. It reports whether there was one.
func (s *TimerService) Delete(key record.Key, ts int64) bool {
	t := Timer{Key: key, Ts: ts}
	i, ok := s.h.index[t]
	if !ok {
		return false
	}
	heap.Remove(&s.h, i)
	s.forget(t)
	return true
}

func (s *TimerService) forget(t Timer) {
	set := s.byKey[t.Key]
	delete(set, t.Ts)
	if len(set) == 0 {
		delete(s.byKey, t.Key)
	}
}

// Advance removes and returns every timer with Ts <= watermark, in
// (timestamp, key) order. It returns nil when none is due.
func (s *TimerService) Advance(watermark int64) []Timer {
	var due []Timer
	for len(s.h.items) > 0 && s.h.items[0].Ts <= watermark {
		t := heap.Pop(&s.h).(Timer)
		s.forget(t)
		due = append(due, t)
	}
	return due
}

// Next returns the earliest timer without removing it; false when empty.
func (s *TimerService) Next() (Timer, bool) {
	if len(s.h.items) == 0 {
		return Timer{}, false
	}
	return s.h.items[0], true
}

// Pending returns the timestamps of key's timers in increasing order, nil
// when it has none.
func (s *TimerService) Pending(key record.Key) []int64 {
	set := s.byKey[key]
	if len(set) == 0 {
		return nil
	}
	out := make([]int64, 0, len(set))
	for ts := range set {
		out = append(out, ts)
	}
	slices.Sort(out)
	return out
}

// Len returns the number of registered timers.
func (s *TimerService) Len() int { return len(s.h.items) }

// Timers returns every registered timer in (timestamp, key) order.
func (s *TimerService) Timers() []Timer {
	out := slices.Clone(s.h.items)
	slices.SortFunc(out, compareTimers)
	return out
}

// Reset removes every timer.
func (s *TimerService) Reset() { *s = TimerService{} }

// timerHeap is a min-heap of timers in (Ts, Key) order that tracks each
// timer's position so Delete is O(log n).
type timerHeap struct {
	items []Timer
	index map[Timer]int
}

func (h *timerHeap) Len() int           { return len(h.items) }
func (h *timerHeap) Less(i, j int) bool { return compareTimers(h.items[i], h.items[j]) < 0 }

func (h *timerHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.items[i]] = i
	h.index[h.items[j]] = j
}

func (h *timerHeap) Push(x any) {
	t := x.(Timer)
	h.index[t] = len(h.items)
	h.items = append(h.items, t)
}

func (h *timerHeap) Pop() any {
	n := len(h.items) - 1
	t := h.items[n]
	h.items[n] = Timer{}
	h.items = h.items[:n]
	delete(h.index, t)
	return t
}
