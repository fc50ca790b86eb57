package node

import (
	"fmt"

	"github.com/joinery/joinery/joins"
)

// Test helpers shared by this package's tests and node_test's (exported
// from a _test file, so only tests see them).

// PairsOf collects the "lv|rv" pairs of event-time join tables (rows
// projected to lv and rv; a padded side prints as <nil>).
func PairsOf(tables ...[]joins.TableRow) map[string]bool {
	got := map[string]bool{}
	for _, rows := range tables {
		for _, row := range rows {
			got[fmt.Sprintf("%v|%v", row.Row["lv"], row.Row["rv"])] = true
		}
	}
	return got
}

// DiffSets lists what want has and got lacks (missing) and the reverse
// (extra).
func DiffSets(got, want map[string]bool) (missing, extra []string) {
	for p := range want {
		if !got[p] {
			missing = append(missing, p)
		}
	}
	for p := range got {
		if !want[p] {
			extra = append(extra, p)
		}
	}
	return missing, extra
}
