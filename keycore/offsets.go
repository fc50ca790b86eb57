package keycore

import (
	"strconv"
	"strings"

	"github.com/joinery/joinery/record"
)

// offsets are a key's applied offsets (record.Offsets: a slice sorted by
// partition, ≈ 32 B of heap for one partition where a map takes ≈ 250 B:
// docs/performance/2026-12-05-bench.md, "Bytes per live key").
type offsets = record.Offsets

// partitionID is pos.PartitionID(), the one these offsets hold when they
// have pos's partition (no new string per event).
func partitionID(o offsets, pos record.Position) string {
	for _, p := range o {
		if isPartitionID(p.Partition, pos) {
			return p.Partition
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
