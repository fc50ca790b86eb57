package testutil

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// RenderOffsets renders partition offsets for a golden transcript:
// "{a=1 b=2}", keys in order.
func RenderOffsets(m map[string]int64) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}
