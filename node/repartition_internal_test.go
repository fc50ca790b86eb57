package node

import (
	"context"
	"testing"
	"time"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// fakeRepartitioner records the writes and reports a backlog that falls
// by drain at every Backlog call.
type fakeRepartitioner struct {
	sources.Source
	backlog, drain int64
	written        int
	polls          int
}

func (f *fakeRepartitioner) Repartition(_ context.Context, fwd []sources.Forward) (int64, error) {
	f.written += len(fwd)
	return f.backlog, nil
}

func (f *fakeRepartitioner) Backlog(context.Context) (int64, error) {
	f.polls++
	f.backlog = max(0, f.backlog-f.drain)
	return f.backlog, nil
}

// TestRepartitionWaitsForBacklog checks the raw reader's backpressure: a
// write that leaves a repartition stream over maxRepartitionBacklog
// returns (and the batch's raw offsets get committed) only once the
// streams are consumed below it; under it, at once.
func TestRepartitionWaitsForBacklog(t *testing.T) {
	fwd := []sources.Forward{{Pos: record.Position{Source: "cdc", Offset: 1}, Group: 0, Value: []byte("x")}}
	for _, tc := range []struct {
		name           string
		backlog, drain int64
		wantPolls      int
	}{
		{"under the bound", maxRepartitionBacklog, 1, 0},
		{"over it", maxRepartitionBacklog + 2500, 1000, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRepartitioner{backlog: tc.backlog, drain: tc.drain}
			r := &reader{n: &Node{}, fwd: f}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := r.repartition(ctx, fwd); err != nil {
				t.Fatal(err)
			}
			if f.written != 1 || f.polls != tc.wantPolls || f.backlog > maxRepartitionBacklog {
				t.Errorf("wrote %d, polled the backlog %d times (left %d); want 1, %d, at most %d", f.written, f.polls, f.backlog, tc.wantPolls, maxRepartitionBacklog)
			}
		})
	}
	// A backlog that never drains holds the batch until ctx ends.
	f := &fakeRepartitioner{backlog: maxRepartitionBacklog + 1}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := (&reader{n: &Node{}, fwd: f}).repartition(ctx, fwd); err == nil {
		t.Error("a backlog that never drains: no error once ctx ended")
	}
}
