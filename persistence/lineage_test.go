package persistence_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/joinery/joinery/persistence"
)

func TestLineageBehind(t *testing.T) {
	seen := persistence.Lineage{Incarnation: "a", Floor: 1 << 40, Seq: 5}
	for _, c := range []struct {
		seen, found persistence.Lineage
		want        bool
	}{
		{seen, seen, false},
		{seen, persistence.Lineage{Incarnation: "a", Floor: 1 << 40, Seq: 9}, false}, // others committed
		{seen, persistence.Lineage{Incarnation: "a", Floor: 1 << 40, Seq: 4}, true},  // commits lost
		{seen, persistence.Lineage{Incarnation: "b", Floor: 1 << 41, Seq: 50}, true}, // replaced
		{persistence.Lineage{}, persistence.Lineage{Incarnation: "b"}, false},        // nothing seen yet
	} {
		if got := c.seen.Behind(c.found); got != c.want {
			t.Errorf("%+v.Behind(%+v) = %t, want %t", c.seen, c.found, got, c.want)
		}
	}
}

func TestLineageFloorAt(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := persistence.FloorAt(now, 0)
	if f != 1_800_000_000<<persistence.FloorShift {
		t.Fatalf("FloorAt(now, 0) = %d", f)
	}
	// A re-founding in the same second, or after the clock stepped back,
	// still moves the floor up by a second's worth of epochs.
	for _, at := range []time.Time{now, now.Add(-time.Hour)} {
		if g := persistence.FloorAt(at, f+12345); g <= f+12345 || g%(1<<persistence.FloorShift) != 0 {
			t.Errorf("FloorAt(%v, %d) = %d, want a higher whole second", at, f+12345, g)
		}
	}
	if g := persistence.FloorAt(now.Add(time.Hour), f); g != (1_800_000_000+3600)<<persistence.FloorShift {
		t.Errorf("FloorAt(later, f) = %d", g)
	}
	if a, b := persistence.NewIncarnationID(), persistence.NewIncarnationID(); a == b || len(a) != 32 {
		t.Errorf("NewIncarnationID = %q, %q", a, b)
	}
}

func TestRollbackError(t *testing.T) {
	re := &persistence.RollbackError{Job: "j", Seen: persistence.Lineage{Incarnation: "a", Seq: 5}, Found: persistence.Lineage{Incarnation: "a", Seq: 2}}
	err := fmt.Errorf("commit: %w", re)
	var got *persistence.RollbackError
	if !errors.Is(err, persistence.ErrRollback) || !errors.As(err, &got) || got != re {
		t.Fatalf("errors.Is/As through wrapping failed for %v", err)
	}
	if errors.Is(errors.New("x"), persistence.ErrRollback) {
		t.Fatal("a plain error matched ErrRollback")
	}
}

// FuzzParseLineage: ParseLineage never panics, and what it accepts
// re-encodes to an equal lineage.
func FuzzParseLineage(f *testing.F) {
	f.Add("0123abcd/1932735283200000000/17")
	f.Add("a/0/0")
	f.Add("/1/2")
	f.Add("a/b/c")
	f.Add("a/1/2/3")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := persistence.ParseLineage(s)
		if err != nil {
			return
		}
		back, err := persistence.ParseLineage(l.String())
		if err != nil || back != l {
			t.Fatalf("ParseLineage(%q) = %+v; its String %q parses to %+v, %v", s, l, l.String(), back, err)
		}
	})
}
