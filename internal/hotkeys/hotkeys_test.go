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
