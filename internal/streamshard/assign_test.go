package streamshard

import (
	"fmt"
	"slices"
	"testing"
)

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("joinery-%d", i)
	}
	return out
}

func loads(owner []string) map[string]int {
	l := map[string]int{}
	for _, o := range owner {
		l[o]++
	}
	return l
}

// The shard leases (sources/redisstream) and the key groups of sources
// partitioned by the join key (node's keyPlacement) both follow Assign.

// TestAssignFairShare checks that every shard has a member of the
// list, that every member reads floor or ceil of shards/members, and that
// the assignment does not depend on the list's order or duplicates.
func TestAssignFairShare(t *testing.T) {
	for _, tc := range []struct{ shards, members int }{
		{1, 1}, {1, 3}, {3, 3}, {4, 3}, {16, 3}, {16, 5}, {64, 7}, {7, 16}, {1000, 9},
	} {
		t.Run(fmt.Sprintf("%d-over-%d", tc.shards, tc.members), func(t *testing.T) {
			ms := names(tc.members)
			owner := Assign(tc.shards, ms)
			if len(owner) != tc.shards {
				t.Fatalf("%d owners, want %d", len(owner), tc.shards)
			}
			for i, o := range owner {
				if !slices.Contains(ms, o) {
					t.Errorf("shard %d owned by %q, not a member", i, o)
				}
			}
			lo, hi := tc.shards/tc.members, FairShare(tc.shards, tc.members)
			l := loads(owner)
			for _, m := range ms {
				if l[m] < lo || l[m] > hi {
					t.Errorf("%s reads %d shards, want %d..%d", m, l[m], lo, hi)
				}
			}
			shuffled := append(slices.Clone(ms), ms[0])
			slices.Reverse(shuffled)
			if got := Assign(tc.shards, shuffled); !slices.Equal(got, owner) {
				t.Errorf("assignment depends on member order: %v vs %v", got, owner)
			}
		})
	}
	if got := Assign(4, nil); got != nil {
		t.Errorf("no members: %v, want nil", got)
	}
}

// TestAssignRebalance checks what moves when a member joins or
// leaves: the newcomer gets its share, the leaver's shards all go to the
// others, and few other shards move (rendezvous keeps most in place).
func TestAssignRebalance(t *testing.T) {
	for _, tc := range []struct{ shards, before, after int }{
		{16, 3, 4}, {16, 4, 3}, {64, 5, 6}, {64, 6, 5}, {16, 1, 2}, {16, 2, 1}, {256, 8, 9}, {256, 9, 8},
	} {
		t.Run(fmt.Sprintf("%d-shards-%d-to-%d", tc.shards, tc.before, tc.after), func(t *testing.T) {
			all := names(max(tc.before, tc.after))
			was := Assign(tc.shards, all[:tc.before])
			now := Assign(tc.shards, all[:tc.after])
			moved, minMoves := 0, 0
			for i := range was {
				if was[i] != now[i] {
					moved++
				}
				if tc.after < tc.before && was[i] == all[tc.before-1] && now[i] == was[i] {
					t.Errorf("shard %d still owned by %s, which left", i, was[i])
				}
			}
			if tc.after > tc.before {
				newcomer := all[tc.after-1]
				minMoves = loads(now)[newcomer]
				if minMoves < tc.shards/tc.after {
					t.Errorf("%s joined and reads %d shards, want at least %d", newcomer, minMoves, tc.shards/tc.after)
				}
			} else {
				minMoves = loads(was)[all[tc.before-1]]
			}
			// Bounded load costs some moves beyond the minimum; they must
			// stay well under a reshuffle (which moves most shards).
			if limit := minMoves + tc.shards/3; moved > limit {
				t.Errorf("%d shards moved, want at most %d (minimum %d)", moved, limit, minMoves)
			}
			t.Logf("%d shards moved (minimum %d)", moved, minMoves)
		})
	}
}
