package embedded

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// TestStoreEmbeddedTimerIndex drives the heap with random sets and removes
// and compares every due answer with a sorted copy of a plain map.
func TestStoreEmbeddedTimerIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newTimerIndex()
	model := map[record.Key]int64{}
	for op := range 20000 {
		key := record.Key(fmt.Sprint(rng.IntN(300)))
		if rng.IntN(4) == 0 {
			x.remove(key)
			delete(model, key)
		} else {
			at := int64(rng.IntN(100) - 50)
			x.set(key, at)
			model[key] = at
		}
		if op%50 != 0 {
			continue
		}
		var want []persistence.TimerDue
		for k, at := range model {
			want = append(want, persistence.TimerDue{Key: k, At: at})
		}
		slices.SortFunc(want, func(a, b persistence.TimerDue) int {
			return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Key, b.Key))
		})
		upTo, limit := int64(rng.IntN(120)-60), rng.IntN(400)
		n := 0
		for n < len(want) && want[n].At <= upTo {
			n++
		}
		want = want[:min(n, limit)]
		if got := x.due(upTo, limit); !slices.Equal(got, want) {
			t.Fatalf("op %d: due(%d, %d) = %v, want %v", op, upTo, limit, got, want)
		}
		if x.len() != len(model) {
			t.Fatalf("op %d: len = %d, want %d", op, x.len(), len(model))
		}
		for k, at := range model {
			if got, ok := x.get(k); !ok || got != at {
				t.Fatalf("op %d: get(%s) = %d, %t; want %d", op, k, got, ok, at)
			}
		}
	}
}

// TestStoreEmbeddedTimersLogKinds: a save without timers is still written
// as kind 1, which binaries without kind 4 read; one with a timer is kind 4.
func TestStoreEmbeddedTimersLogKinds(t *testing.T) {
	for _, tc := range []struct {
		sn   persistence.Snapshot
		kind byte
	}{
		{persistence.Snapshot{Job: "j", Key: "k", State: []byte("s")}, kindSave},
		{persistence.Snapshot{Job: "j", Key: "k", State: []byte("s"), NextTimer: 7}, kindSave},
		{persistence.Snapshot{Job: "j", Key: "k", State: []byte("s"), HasTimer: true}, kindSaveTimers},
	} {
		b, err := encodeRecord(nil, logRecord{kind: kindSave, snaps: []persistence.Snapshot{tc.sn}})
		if err != nil {
			t.Fatal(err)
		}
		if b[frameHeader] != tc.kind {
			t.Errorf("%+v written as kind %d, want %d", tc.sn, b[frameHeader], tc.kind)
		}
	}
	_, err := encodeRecord(nil, logRecord{kind: kindSave, snaps: []persistence.Snapshot{
		{Job: "j", Key: "k", State: []byte("s"), HasTimer: true, NextTimer: persistence.MaxTimer + 1}}})
	if err == nil {
		t.Fatal("encodeRecord with a timer out of range succeeded")
	}
}

// TestStoreEmbeddedOldLogTimers: a log from before timers has an empty
// index, takes timers, and replays them.
func TestStoreEmbeddedOldLogTimers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.log")
	b, err := hex.DecodeString(oldLog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := openFile(t, path)
	if due, err := s.DueTimers(ctx, "job", math.MaxInt64, 10); err != nil || len(due) != 0 {
		t.Fatalf("DueTimers of an old log = %v, %v; want none", due, err)
	}
	if err := s.Save(ctx, []persistence.Snapshot{{Job: "job", Key: "b", State: []byte("b"), HasTimer: true, NextTimer: -3}}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s = openFile(t, path)
	due, err := s.DueTimers(ctx, "job", 0, 10)
	if want := []persistence.TimerDue{{Key: "b", At: -3}}; err != nil || !slices.Equal(due, want) {
		t.Fatalf("DueTimers after reopen = %v, %v; want %v", due, err, want)
	}
	if got, err := s.Load(ctx, "job", "a"); err != nil || string(got.State) != "old a" {
		t.Fatalf("Load(a) = %q, %v", got.State, err)
	}
}

// TestStoreEmbeddedCompactTimers: compaction keeps the timer index.
func TestStoreEmbeddedCompactTimers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.log")
	s := openFile(t, path)
	ctx := context.Background()
	state := make([]byte, 1000)
	var want []persistence.TimerDue
	for i := 0; i < 2*compactMin/(100*len(state))+1; i++ {
		var batch []persistence.Snapshot
		for k := range 100 {
			key := record.Key(fmt.Sprintf("%03d", k))
			batch = append(batch, persistence.Snapshot{Job: "job", Key: key, State: state,
				HasTimer: k%3 != 0, NextTimer: int64(i - k)})
		}
		if err := s.Save(ctx, batch); err != nil {
			t.Fatal(err)
		}
		want = want[:0]
		for _, sn := range batch {
			if sn.HasTimer {
				want = append(want, persistence.TimerDue{Key: sn.Key, At: sn.NextTimer})
			}
		}
	}
	slices.SortFunc(want, func(a, b persistence.TimerDue) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Key, b.Key))
	})
	_ = s.Close()
	before, _ := os.Stat(path)
	s = openFile(t, path)
	after, _ := os.Stat(path)
	if after.Size() >= before.Size()/4 {
		t.Fatalf("log not compacted: %d bytes before, %d after", before.Size(), after.Size())
	}
	if got, err := s.DueTimers(ctx, "job", math.MaxInt64, 1000); err != nil || !slices.Equal(got, want) {
		t.Fatalf("DueTimers after compaction = %v, %v; want %v", got, err, want)
	}
}
