package embedded

import (
	"container/heap"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// timerIndex is one job's timer index: the keys with a pending event-time
// timer, in a binary min-heap ordered by (at, key) with each item's
// position tracked, so set and remove cost O(log n) and due lists the
// first m entries in order in O(m log m) without changing the heap. It is
// not safe for concurrent use; Store guards it with mu.
type timerIndex struct {
	h     timerHeap
	byKey map[record.Key]*timerItem
}

type timerItem struct {
	key record.Key
	at  int64
	pos int // index in h
}

func newTimerIndex() *timerIndex {
	return &timerIndex{byKey: make(map[record.Key]*timerItem)}
}

// set indexes key at at, replacing its previous entry.
func (x *timerIndex) set(key record.Key, at int64) {
	if it, ok := x.byKey[key]; ok {
		if it.at != at {
			it.at = at
			heap.Fix(&x.h, it.pos)
		}
		return
	}
	it := &timerItem{key: key, at: at}
	x.byKey[key] = it
	heap.Push(&x.h, it)
}

// remove takes key out of the index; a key not in it is fine.
func (x *timerIndex) remove(key record.Key) {
	if it, ok := x.byKey[key]; ok {
		heap.Remove(&x.h, it.pos)
		delete(x.byKey, key)
	}
}

// get returns key's entry.
func (x *timerIndex) get(key record.Key) (at int64, ok bool) {
	it, ok := x.byKey[key]
	if !ok {
		return 0, false
	}
	return it.at, true
}

func (x *timerIndex) len() int { return len(x.h) }

// due returns up to limit entries with at <= upTo, ascending by (at, key).
// It walks the heap best first: a frontier of heap positions, itself a
// small heap, starts at the root; popping its least item emits it and adds
// the item's children that are due. Heap order makes every child come
// after its parent, so the emitted sequence is sorted.
func (x *timerIndex) due(upTo int64, limit int) []persistence.TimerDue {
	out := []persistence.TimerDue{}
	if limit <= 0 || len(x.h) == 0 || x.h[0].at > upTo {
		return out
	}
	f := &frontier{h: x.h, pos: []int{0}}
	for len(f.pos) > 0 && len(out) < limit {
		i := heap.Pop(f).(int)
		out = append(out, persistence.TimerDue{Key: x.h[i].key, At: x.h[i].at})
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(x.h) && x.h[c].at <= upTo {
				heap.Push(f, c)
			}
		}
	}
	return out
}

func timerLess(a, b *timerItem) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.key < b.key
}

// timerHeap implements heap.Interface over the index's items.
type timerHeap []*timerItem

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return timerLess(h[i], h[j]) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *timerHeap) Push(x any) {
	it := x.(*timerItem)
	it.pos = len(*h)
	*h = append(*h, it)
}
func (h *timerHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

// frontier implements heap.Interface over positions in h, ordered by the
// items there.
type frontier struct {
	h   timerHeap
	pos []int
}

func (f *frontier) Len() int           { return len(f.pos) }
func (f *frontier) Less(i, j int) bool { return timerLess(f.h[f.pos[i]], f.h[f.pos[j]]) }
func (f *frontier) Swap(i, j int)      { f.pos[i], f.pos[j] = f.pos[j], f.pos[i] }
func (f *frontier) Push(x any)         { f.pos = append(f.pos, x.(int)) }
func (f *frontier) Pop() any {
	p := f.pos[len(f.pos)-1]
	f.pos = f.pos[:len(f.pos)-1]
	return p
}
