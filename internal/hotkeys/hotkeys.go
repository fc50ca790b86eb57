// Package hotkeys finds the busiest join keys a node routes, in bounded
// memory: a space-saving top-k over fixed windows (Tracker). It knows
// nothing of actors or the node; node/ feeds it and the admin API reads it.
package hotkeys

import (
	"container/heap"
	"slices"
	"sync"
	"time"

	"github.com/joinery/joinery/record"
)

// Tracker keeps the busiest keys this node routes, with bounded memory: a
// space-saving top-k (Metwally et al.) over fixed windows. At most capacity
// keys are counted; a new key evicts the smallest count and inherits it (an
// overestimate that is exact for truly heavy keys). Rates are from the last
// complete window, so a reading never mixes a window that just began.
type Tracker struct {
	mu       sync.Mutex
	capacity int
	window   time.Duration
	start    time.Time
	counts   map[record.Key]*hotEntry
	heap     hotHeap    // the same entries, smallest count first: eviction in O(log k)
	last     []hotCount // previous window, sorted by count descending
	lastSpan time.Duration
}

type hotCount struct {
	key   record.Key
	count int64
}

type hotEntry struct {
	hotCount
	idx int // position in the heap
}

// hotHeap is a min-heap of entries by count (container/heap).
type hotHeap []*hotEntry

func (h hotHeap) Len() int           { return len(h) }
func (h hotHeap) Less(i, j int) bool { return h[i].count < h[j].count }
func (h hotHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *hotHeap) Push(x any) {
	e := x.(*hotEntry)
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *hotHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// New returns a tracker of at most capacity keys over windows of window,
// the first starting at now.
func New(capacity int, window time.Duration, now time.Time) *Tracker {
	return &Tracker{capacity: capacity, window: window, start: now, counts: make(map[record.Key]*hotEntry, capacity)}
}

// Add counts n events of key. Safe for concurrent use.
func (h *Tracker) Add(key record.Key, n int64, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rollLocked(now)
	h.addLocked(key, n)
}

// AddBatch counts count(i) events of each keys[i], as Add of each in turn,
// under one lock (a reader's batch). Safe for concurrent use.
func (h *Tracker) AddBatch(keys []record.Key, count func(i int) int64, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rollLocked(now)
	for i, k := range keys {
		h.addLocked(k, count(i))
	}
}

func (h *Tracker) addLocked(key record.Key, n int64) {
	if e, ok := h.counts[key]; ok {
		e.count += n
		heap.Fix(&h.heap, e.idx)
		return
	}
	if len(h.counts) < h.capacity {
		e := &hotEntry{hotCount: hotCount{key, n}}
		h.counts[key] = e
		heap.Push(&h.heap, e)
		return
	}
	// Full: the smallest entry makes room and the new key inherits its count.
	e := h.heap[0]
	delete(h.counts, e.key)
	e.key = key
	e.count += n
	h.counts[key] = e
	heap.Fix(&h.heap, 0)
}

func (h *Tracker) rollLocked(now time.Time) {
	if now.Sub(h.start) < h.window {
		return
	}
	h.last = h.last[:0]
	for _, e := range h.heap {
		h.last = append(h.last, e.hotCount)
	}
	slices.SortFunc(h.last, func(a, b hotCount) int {
		if a.count != b.count {
			if a.count > b.count {
				return -1
			}
			return 1
		}
		if a.key < b.key {
			return -1
		}
		if a.key > b.key {
			return 1
		}
		return 0
	})
	h.lastSpan = now.Sub(h.start)
	h.start = now
	clear(h.counts)
	clear(h.heap)
	h.heap = h.heap[:0]
}

// Top returns the n busiest keys of the last complete window with their
// events per second.
func (h *Tracker) Top(n int, now time.Time) ([]record.Key, []float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rollLocked(now)
	if n > len(h.last) {
		n = len(h.last)
	}
	keys := make([]record.Key, n)
	rates := make([]float64, n)
	for i := range n {
		keys[i] = h.last[i].key
		rates[i] = float64(h.last[i].count) / h.lastSpan.Seconds()
	}
	return keys, rates
}
