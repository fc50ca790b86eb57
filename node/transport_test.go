package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/joinery/joinery/actors"
	"github.com/joinery/joinery/actors/keypb"
)

// TestLocalBatchResult: a batch's local requests answer on one channel, in
// any order, and each is awaited in batch order: its own answer (the first,
// a second is dropped), a dead letter as actor.ErrDeadLetter, one that
// comes while it is awaited, and, at the batch's one deadline,
// actor.ErrTimeout for each that has not answered.
func TestLocalBatchResult(t *testing.T) {
	const timeout = 100 * time.Millisecond
	first, second, late := &keypb.Applied{Skipped: 1}, &keypb.Applied{Skipped: 2}, &keypb.Applied{Skipped: 3}
	cases := []struct {
		name    string
		answer  func(l *localAnswer) // before the awaits
		later   any                  // answered while awaited, when set
		want    any
		wantErr error
	}{
		{name: "dead letter", answer: func(l *localAnswer) { l.Reply(actors.DeadLetter{}) }, wantErr: actor.ErrDeadLetter},
		{name: "answered twice", answer: func(l *localAnswer) { l.Reply(first); l.Reply(second) }, want: first},
		{name: "answered while awaited", later: late, want: late},
		{name: "not answered", wantErr: actor.ErrTimeout},
		{name: "not answered either", wantErr: actor.ErrTimeout},
		{name: "answered last, before the others are awaited", answer: func(l *localAnswer) { l.Reply(second) }, want: second},
	}
	b := &localBatch{ch: make(chan *localAnswer, len(cases)), deadline: time.Now().Add(timeout)}
	ls := make([]*localAnswer, len(cases))
	for i := len(cases) - 1; i >= 0; i-- { // answers come in any order
		ls[i] = &localAnswer{b: b}
		if cases[i].answer != nil {
			cases[i].answer(ls[i])
		}
	}
	for i, tc := range cases {
		if tc.later != nil {
			go func() {
				time.Sleep(timeout / 10)
				ls[i].Reply(tc.later)
			}()
		}
		res, err := ls[i].Result(context.Background())
		switch {
		case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
			t.Errorf("%s: %v, %v; want %v", tc.name, res, err, tc.wantErr)
		case tc.wantErr == nil && (err != nil || res != tc.want):
			t.Errorf("%s: %v, %v; want %v", tc.name, res, err, tc.want)
		case errors.Is(err, actor.ErrTimeout) && time.Now().Before(b.deadline):
			t.Errorf("%s: timed out before the batch's deadline", tc.name)
		}
	}

	// A wait ends with its context.
	b = &localBatch{ch: make(chan *localAnswer, 1), deadline: time.Now().Add(time.Hour)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&localAnswer{b: b}).Result(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v, want %v", err, context.Canceled)
	}
}
