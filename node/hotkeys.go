package node

import (
	"slices"
	"sync"
	"time"

	"github.com/joinery/joinery/record"
)

// hotKeys keeps the busiest keys this node routes, with bounded memory: a
// space-saving top-k (Metwally et al.) over fixed windows. At most capacity
// keys are counted; a new key evicts the smallest count and inherits it (an
// overestimate that is exact for truly heavy keys). Rates are from the last
// complete window, so a reading never mixes a window that just began.
type hotKeys struct {
	mu       sync.Mutex
	capacity int
	window   time.Duration
	start    time.Time
	counts   map[record.Key]int64
	last     []hotCount // previous window, sorted by count descending
	lastSpan time.Duration
}

type hotCount struct {
	key   record.Key
	count int64
}

func newHotKeys(capacity int, window time.Duration, now time.Time) *hotKeys {
	return &hotKeys{capacity: capacity, window: window, start: now, counts: make(map[record.Key]int64, capacity)}
}

// add counts n events of key at time now.
func (h *hotKeys) add(key record.Key, n int64, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rollLocked(now)
	if _, ok := h.counts[key]; !ok && len(h.counts) >= h.capacity {
		var minKey record.Key
		minCount := int64(-1)
		for k, c := range h.counts {
			if minCount < 0 || c < minCount {
				minKey, minCount = k, c
			}
		}
		delete(h.counts, minKey)
		h.counts[key] = minCount
	}
	h.counts[key] += n
}

func (h *hotKeys) rollLocked(now time.Time) {
	if now.Sub(h.start) < h.window {
		return
	}
	h.last = h.last[:0]
	for k, c := range h.counts {
		h.last = append(h.last, hotCount{k, c})
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
}

// top returns the n busiest keys of the last complete window with their
// events per second.
func (h *hotKeys) top(n int, now time.Time) ([]record.Key, []float64) {
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
