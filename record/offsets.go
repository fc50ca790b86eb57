package record

import (
	"fmt"
	"slices"
	"strings"
)

// PartitionOffset is one source partition's offset: Partition is a
// Position.PartitionID().
type PartitionOffset struct {
	Partition string
	Offset    int64
}

// Offsets are offsets per source partition (a key's applied offsets, a
// stored snapshot's): PartitionOffsets in ascending byte order of their
// partition ids, each id at most once. Nil has none. A slice rather than a
// map: a key hears from one partition or a few, and a map of them cost
// each write one more allocation of ≈ 200 B in the key core, and one in the
// embedded store's Save (docs/performance/2026-12-05-latency.md, "Snapshot offsets as a sorted
// slice").
type Offsets []PartitionOffset

func (o Offsets) find(part string) (int, bool) {
	return slices.BinarySearchFunc(o, part, func(p PartitionOffset, part string) int {
		return strings.Compare(p.Partition, part)
	})
}

// Get is part's offset, if o has one.
func (o Offsets) Get(part string) (int64, bool) {
	if i, ok := o.find(part); ok {
		return o[i].Offset, true
	}
	return 0, false
}

// Set makes part's offset off, in place (o's backing array changes).
func (o *Offsets) Set(part string, off int64) {
	i, ok := o.find(part)
	if ok {
		(*o)[i].Offset = off
		return
	}
	*o = slices.Insert(*o, i, PartitionOffset{part, off})
}

// Map is o as a new map (empty, not nil, when o has none).
func (o Offsets) Map() map[string]int64 {
	m := make(map[string]int64, len(o))
	for _, p := range o {
		m[p.Partition] = p.Offset
	}
	return m
}

// OffsetsOf is m as Offsets (nil when m is empty).
func OffsetsOf(m map[string]int64) Offsets {
	if len(m) == 0 {
		return nil
	}
	o := make(Offsets, 0, len(m))
	for part, off := range m {
		o = append(o, PartitionOffset{part, off})
	}
	slices.SortFunc(o, comparePartitions)
	return o
}

// Check reports whether o is in order with each partition id once.
func (o Offsets) Check() error {
	for i := 1; i < len(o); i++ {
		if o[i-1].Partition >= o[i].Partition {
			return fmt.Errorf("offsets: partition %q after %q (not in ascending order, or twice)", o[i].Partition, o[i-1].Partition)
		}
	}
	return nil
}

// SortOffsets puts o in order in place, for a decoder of offsets written
// in another order; it fails when a partition id is there twice.
func SortOffsets(o Offsets) error {
	if o.Check() == nil {
		return nil
	}
	slices.SortFunc(o, comparePartitions)
	return o.Check()
}

func comparePartitions(a, b PartitionOffset) int { return strings.Compare(a.Partition, b.Partition) }
