package persistence_test

import (
	"testing"

	"github.com/joinery/joinery/persistence"
)

// TestMergeSnapshotsOwned: a merge is Owned when every snapshot whose
// values it shares is: b alone when b replaces a, a and b for a merged
// delta.
func TestMergeSnapshotsOwned(t *testing.T) {
	whole := func(owned bool) persistence.Snapshot {
		return persistence.Snapshot{State: []byte("w"), Parts: []persistence.Part{{Name: "a", Value: []byte("1")}}, Owned: owned}
	}
	delta := func(owned bool) persistence.Snapshot {
		return persistence.Snapshot{State: []byte("d"), Delta: true, Parts: []persistence.Part{{Name: "b", Value: []byte("2")}}, Owned: owned}
	}
	for _, tc := range []struct {
		name string
		a, b persistence.Snapshot
		want bool
	}{
		{"whole over unowned", whole(false), whole(true), true},
		{"unowned whole over owned", whole(true), whole(false), false},
		{"delete over unowned", whole(false), persistence.Snapshot{Owned: true}, true},
		{"delta over owned", whole(true), delta(true), true},
		{"delta over unowned", whole(false), delta(true), false},
		{"unowned delta over owned", delta(true), delta(false), false},
		{"delta over delta", delta(true), delta(true), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := persistence.MergeSnapshots(tc.a, tc.b); got.Owned != tc.want {
				t.Fatalf("MergeSnapshots(a, b).Owned = %v, want %v", got.Owned, tc.want)
			}
		})
	}
}
