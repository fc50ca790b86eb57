package slab

import "testing"

func TestSlabItemsAreSeparate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hint  int
		items int
	}{
		{"no hint", 0, 3 * maxChunk},
		{"hint below the items", 5, 40},
		{"hint above the items", 100, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Slab[int]
			s.Hint(tc.hint)
			ones := make([][]int, tc.items)
			ptrs := make([]*int, tc.items)
			for i := range ones {
				ones[i] = s.One(i)
				ptrs[i] = s.New()
				if len(ones[i]) != 1 || cap(ones[i]) != 1 {
					t.Fatalf("One: len %d cap %d, want 1 and 1", len(ones[i]), cap(ones[i]))
				}
				if *ptrs[i] != 0 {
					t.Fatalf("New: %d, want a zero value", *ptrs[i])
				}
				*ptrs[i] = -i
			}
			// Appending to an item copies it: its neighbours keep their values.
			for i := range ones {
				grown := append(ones[i], 1000+i)
				grown[0] = 2000 + i
			}
			for i := range ones {
				if ones[i][0] != i || *ptrs[i] != -i {
					t.Fatalf("item %d: %d and %d, want %d and %d", i, ones[i][0], *ptrs[i], i, -i)
				}
			}
		})
	}
}

func TestSlabAppend(t *testing.T) {
	var s Slab[string]
	a := s.Append(nil, "x")
	b := s.Append(nil, "y")
	a = s.Append(a, "z")
	if len(a) != 2 || a[0] != "x" || a[1] != "z" || len(b) != 1 || b[0] != "y" {
		t.Fatalf("Append: %q and %q, want [x z] and [y]", a, b)
	}
}

func TestSlabChunks(t *testing.T) {
	var s Slab[int]
	s.Hint(64)
	allocs := testing.AllocsPerRun(10, func() {
		s.Hint(64)
		for range 64 {
			s.New()
		}
	})
	if allocs > 1 {
		t.Fatalf("64 items after Hint(64): %v allocations, want 1", allocs)
	}
}

// TestSlabChunkSizes: a hinted chunk holds the hint; past it, chunks start
// at minChunk and double.
func TestSlabChunkSizes(t *testing.T) {
	var s Slab[int]
	s.Hint(100)
	s.New()
	if got := len(s.free) + 1; got != 100 {
		t.Fatalf("hinted chunk: %d items, want 100", got)
	}
	for range 99 {
		s.New()
	}
	for _, want := range []int{minChunk, 2 * minChunk, 4 * minChunk} {
		s.New()
		if got := len(s.free) + 1; got != want {
			t.Fatalf("unhinted chunk: %d items, want %d", got, want)
		}
		for range want - 1 {
			s.New()
		}
	}
}
