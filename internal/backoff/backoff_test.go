package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name         string
		initial, max time.Duration
		want         []time.Duration
	}{
		{"doubles to the cap", 10 * ms, time.Second, []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}},
		{"cap not a power of two away", 3 * ms, 10 * ms, []time.Duration{3 * ms, 6 * ms, 10 * ms, 10 * ms}},
		{"initial equals max", 5 * ms, 5 * ms, []time.Duration{5 * ms, 5 * ms, 5 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Backoff{Initial: tt.initial, Max: tt.max}
			for i, w := range tt.want {
				if d := b.Delay(); d != w {
					t.Fatalf("try %d: Delay() = %v, want %v", i, d, w)
				}
				if d := b.Next(); d != w {
					t.Fatalf("try %d: Next() = %v, want %v", i, d, w)
				}
			}
			b.Reset()
			if d := b.Next(); d != tt.initial {
				t.Fatalf("after Reset: Next() = %v, want %v", d, tt.initial)
			}
		})
	}
}

func TestWait(t *testing.T) {
	b := Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond}
	start := time.Now()
	if err := b.Wait(context.Background()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if el := time.Since(start); el < time.Millisecond {
		t.Fatalf("Wait returned after %v, before the %v wait", el, time.Millisecond)
	}
	if d := b.Delay(); d != 2*time.Millisecond {
		t.Fatalf("after one Wait: Delay() = %v, want 2ms", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	long := Backoff{Initial: time.Hour, Max: time.Hour}
	if err := long.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on an ended context = %v, want context.Canceled", err)
	}
}
