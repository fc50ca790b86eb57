package keycore

import (
	"sort"
	"strconv"
	"strings"

	"github.com/joinery/joinery/record"
)

// offsets are a key's applied offsets, partition id -> highest applied
// offset, as a slice sorted by partition: a key hears from one partition
// or a few, and a map of one entry takes ≈ 250 B of heap where this takes
// 32 (docs/benchmarks.md, "Bytes per live key").
type offsets []partOffset

type partOffset struct {
	part string
	off  int64
}

func (o offsets) find(part string) (int, bool) {
	i := sort.Search(len(o), func(i int) bool { return o[i].part >= part })
	return i, i < len(o) && o[i].part == part
}

// get is part's applied offset, if any.
func (o offsets) get(part string) (int64, bool) {
	if i, ok := o.find(part); ok {
		return o[i].off, true
	}
	return 0, false
}

// set records part's applied offset.
func (o *offsets) set(part string, off int64) {
	i, ok := o.find(part)
	if ok {
		(*o)[i].off = off
		return
	}
	*o = append(*o, partOffset{})
	copy((*o)[i+1:], (*o)[i:])
	(*o)[i] = partOffset{part, off}
}

// partitionID is pos.PartitionID(), the one these offsets hold when they
// have pos's partition (no new string per event).
func (o offsets) partitionID(pos record.Position) string {
	for _, p := range o {
		if isPartitionID(p.part, pos) {
			return p.part
		}
	}
	return pos.PartitionID()
}

// isPartitionID reports whether id is pos.PartitionID(), without making it.
func isPartitionID(id string, pos record.Position) bool {
	rest, ok := strings.CutPrefix(id, pos.Source)
	if !ok || len(rest) == 0 || rest[0] != '/' {
		return false
	}
	var buf [12]byte
	return rest[1:] == string(strconv.AppendInt(buf[:0], int64(pos.Partition), 10))
}

// asMap is the offsets as a new map (empty, not nil, when there are none).
func (o offsets) asMap() map[string]int64 {
	if len(o) == 0 {
		return map[string]int64{}
	}
	m := make(map[string]int64, len(o))
	for _, p := range o {
		m[p.part] = p.off
	}
	return m
}

// offsetsOf copies m.
func offsetsOf(m map[string]int64) offsets {
	if len(m) == 0 {
		return nil
	}
	o := make(offsets, 0, len(m))
	for part, off := range m {
		o = append(o, partOffset{part, off})
	}
	sort.Slice(o, func(i, j int) bool { return o[i].part < o[j].part })
	return o
}
