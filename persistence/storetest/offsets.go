package storetest

import (
	"maps"
	"testing"

	"github.com/joinery/joinery/persistence"
)

func testCommitOffsets(t *testing.T, s persistence.Store) {
	if got := committed(t, s, "job"); len(got) != 0 {
		t.Fatalf("CommittedOffsets of a new job = %v, want empty", got)
	}
	commit(t, s, "job", map[string]int64{"users/0": 10, "users/1": 20})
	commit(t, s, "job", map[string]int64{"domains/0": 7})
	commit(t, s, "job", nil)
	commit(t, s, "job", map[string]int64{})
	want := map[string]int64{"users/0": 10, "users/1": 20, "domains/0": 7}
	if got := committed(t, s, "job"); !maps.Equal(got, want) {
		t.Fatalf("CommittedOffsets = %v, want %v", got, want)
	}
	if got := committed(t, s, "other"); len(got) != 0 {
		t.Fatalf("CommittedOffsets(other) = %v, want empty", got)
	}
}

func testCommitOffsetsNeverGoBack(t *testing.T, s persistence.Store) {
	commit(t, s, "job", map[string]int64{"p/0": 10, "p/1": 10})
	commit(t, s, "job", map[string]int64{"p/0": 5, "p/1": 11})
	commit(t, s, "job", map[string]int64{"p/0": 10})
	want := map[string]int64{"p/0": 10, "p/1": 11}
	if got := committed(t, s, "job"); !maps.Equal(got, want) {
		t.Fatalf("after 10 then 5: CommittedOffsets = %v, want %v", got, want)
	}
	// Numeric, not lexical, order: 9 < 10 < 100.
	commit(t, s, "job", map[string]int64{"p/2": 9})
	commit(t, s, "job", map[string]int64{"p/2": 100})
	commit(t, s, "job", map[string]int64{"p/2": 99})
	if got := committed(t, s, "job")["p/2"]; got != 100 {
		t.Fatalf("p/2 = %d, want 100", got)
	}
}

func testCommitOffsetsExtremes(t *testing.T, s persistence.Store) {
	const big = int64(1)<<62 + 1 // not representable in a float64
	commit(t, s, "job", map[string]int64{"neg": -5, "zero": 0, "big": big, "max": 1<<63 - 1})
	commit(t, s, "job", map[string]int64{"neg": -7, "zero": -1, "big": big - 1})
	want := map[string]int64{"neg": -5, "zero": 0, "big": big, "max": 1<<63 - 1}
	if got := committed(t, s, "job"); !maps.Equal(got, want) {
		t.Fatalf("CommittedOffsets = %v, want %v", got, want)
	}
	commit(t, s, "job", map[string]int64{"neg": -1, "big": big + 1})
	want["neg"], want["big"] = -1, big+1
	if got := committed(t, s, "job"); !maps.Equal(got, want) {
		t.Fatalf("CommittedOffsets = %v, want %v", got, want)
	}
}
