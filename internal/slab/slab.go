// Package slab hands out values and one-element slices carved from shared
// chunks, so that a hot path that makes many small short-lived items (one
// per event or per key of a batch) allocates a chunk now and then, not
// each item (docs/performance/2026-12-05-node-profile.md, "Allocations per event on the node's hot
// path").
//
// A Slab never reuses memory: each item is carved once from a fresh chunk,
// and a chunk lives (garbage collector) while any item carved from it is
// referenced. So an item may be handed to another goroutine or kept as
// long as its holder likes, but one long-kept item pins its whole chunk:
// use a Slab only for items that die together (a batch's requests), never
// for what a key keeps in its state. A Slab is not safe for concurrent
// use; the zero Slab is ready.
package slab

// Slab carves items of type T from chunks.
type Slab[T any] struct {
	free []T // the current chunk's items not handed out
	hint int // the next chunk's length, when hinted
	grow int // the next unhinted chunk's length (0: minChunk)
}

// minChunk and maxChunk bound the length of a chunk no hint sized: the
// first is minChunk, each next twice the last, up to maxChunk.
const (
	minChunk = 8
	maxChunk = 1024
)

// Hint sizes the next chunk for n more items (a batch's records). Past
// them, chunks start small again: a hint that fell short by a few items
// costs a small chunk, not another of its size.
func (s *Slab[T]) Hint(n int) {
	if n > len(s.free) {
		s.hint = n - len(s.free)
	}
}

// take hands out the next item as a slice of length and capacity 1.
func (s *Slab[T]) take() []T {
	if len(s.free) == 0 {
		n := s.hint
		s.hint = 0
		if n == 0 {
			n = max(s.grow, minChunk)
			s.grow = min(2*n, maxChunk)
		}
		s.free = make([]T, n)
	}
	one := s.free[:1:1]
	s.free = s.free[1:]
	return one
}

// New returns a pointer to a new zero T.
func (s *Slab[T]) New() *T { return &s.take()[0] }

// One returns a slice of length and capacity 1 holding v: an append to it
// copies it to a new array, so the chunk's other items are never touched.
func (s *Slab[T]) One(v T) []T {
	one := s.take()
	one[0] = v
	return one
}

// Append is append(dst, v), taking the first element's array from the
// slab when dst has none.
func (s *Slab[T]) Append(dst []T, v T) []T {
	if cap(dst) == 0 {
		return s.One(v)
	}
	return append(dst, v)
}
