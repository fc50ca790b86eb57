package hotkeys

import (
	"fmt"
	"testing"
	"time"

	"github.com/joinery/joinery/record"
)

func TestHotKeysTopK(t *testing.T) {
	t0 := time.Unix(0, 0)
	h := New(8, 10*time.Second, t0)
	// One heavy key among many light ones, more distinct keys than capacity.
	for i := range 1000 {
		h.Add("hot", 5, t0.Add(time.Duration(i)*time.Millisecond))
		h.Add(record.Key(fmt.Sprint("k", i%50)), 1, t0.Add(time.Duration(i)*time.Millisecond))
	}
	keys, rates := h.Top(3, t0.Add(10*time.Second))
	if len(keys) != 3 || keys[0] != "hot" {
		t.Fatalf("top = %v", keys)
	}
	if rates[0] < 499 || rates[0] > 501 { // 5000 events in 10 s
		t.Errorf("hot rate = %v events/s, want 500", rates[0])
	}
	if len(h.counts) != 0 {
		t.Errorf("new window not started")
	}
}

// TestHotKeysAddBatch: a batch's counts are what Add of each gives,
// evictions (more keys than capacity) and a window's roll included.
func TestHotKeysAddBatch(t *testing.T) {
	t0 := time.Unix(0, 0)
	one, batched := New(8, 10*time.Second, t0), New(8, 10*time.Second, t0)
	for round := range 30 {
		now := t0.Add(time.Duration(round) * time.Second)
		keys := []record.Key{"hot"}
		for i := range 5 {
			keys = append(keys, record.Key(fmt.Sprint("k", (round*5+i)%13)))
		}
		count := func(i int) int64 { return int64(max(20*(1-i), 1+i*(round%3))) } // "hot": 20
		for i, k := range keys {
			one.Add(k, count(i), now)
		}
		batched.AddBatch(keys, count, now)
	}
	at := t0.Add(30 * time.Second)
	wantKeys, wantRates := one.Top(8, at)
	gotKeys, gotRates := batched.Top(8, at)
	if fmt.Sprint(gotKeys, gotRates) != fmt.Sprint(wantKeys, wantRates) {
		t.Errorf("AddBatch top %v %v, Add top %v %v", gotKeys, gotRates, wantKeys, wantRates)
	}
	if len(gotKeys) == 0 || gotKeys[0] != "hot" {
		t.Errorf("top = %v, want hot first", gotKeys)
	}
}
