package keycore

import (
	"testing"
)

// TestWriteCached: a Write says how many bytes of JSON the join caches
// for its snapshots (the memory budget adds them): a window join's
// elements' after the state is encoded, none for a CDC join (its row
// cache, older than the budget, is not reported).
func TestWriteCached(t *testing.T) {
	for _, tc := range []struct {
		join, events string
		cached       func(n int) bool
	}{
		{"window", `{"events":[{"side":"l","after":{"v":"a"},"ts":1,"pos":"s/0@1"},{"side":"r","after":{"v":"b"},"ts":2,"pos":"s/1@1"}]}`,
			// Each element: {"t":1,"p":{"source":"s","partition":0,"offset":1},"r":{"v":"a"}}.
			func(n int) bool {
				return n == 2*len(`{"t":1,"p":{"source":"s","partition":0,"offset":1},"r":{"v":"a"}}`)
			}},
		{"interval", `{"events":[{"side":"l","after":{"v":"a"},"ts":1,"pos":"s/0@1"}]}`,
			func(n int) bool { return n == len(`{"t":1,"p":{"source":"s","partition":0,"offset":1},"r":{"v":"a"}}`) }},
		{"cdc", `{"events":[{"side":"users","op":"c","after":{"id":1},"pos":"s/0@1"}]}`,
			func(n int) bool { return n == 0 }},
	} {
		for _, parts := range []bool{false, true} {
			h := &harness{parts: parts}
			h.run(t, "new "+tc.join)
			h.run(t, "step now=1 "+tc.events)
			if len(h.pending) != 1 {
				t.Fatalf("%s parts=%v: %d writes pending, want 1", tc.join, parts, len(h.pending))
			}
			if w := h.pending[0]; !tc.cached(w.Cached) {
				t.Errorf("%s parts=%v: Write.Cached %d (Size %d)", tc.join, parts, w.Cached, w.Size)
			}
		}
	}
}
