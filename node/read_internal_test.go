package node

import (
	"context"
	"testing"
	"time"
)

// TestReaderWaitBusy: a reader whose last read was short waits while
// busyDepth batches are in flight, until the collector completes one; a
// full read, or fewer batches in flight, reads on at once.
func TestReaderWaitBusy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pending  int64
		lastFull bool
		waits    bool
	}{
		{"idle", 0, false, false},
		{"one in flight", busyDepth - 1, false, false},
		{"busy, short read", busyDepth, false, true},
		{"busy, full read", busyDepth, true, false},
		{"busier, full read", busyDepth + 5, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &reader{freed: make(chan struct{}, 1)}
			r.pending.Store(tc.pending)
			done := make(chan error, 1)
			go func() { done <- r.waitBusy(context.Background(), tc.lastFull) }()
			select {
			case err := <-done:
				if tc.waits {
					t.Fatalf("returned %v at once; want it to wait for a completed batch", err)
				}
				return
			case <-time.After(100 * time.Millisecond):
				if !tc.waits {
					t.Fatal("waited; want a read at once")
				}
			}
			// The collector completes a group: one batch fewer, and a poke.
			r.pending.Add(-1)
			r.freed <- struct{}{}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("still waiting after a batch completed")
			}
		})
	}
	// ctx ends the wait.
	r := &reader{freed: make(chan struct{}, 1)}
	r.pending.Store(busyDepth)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.waitBusy(ctx, false); err == nil {
		t.Error("a cancelled wait returned nil")
	}
}
