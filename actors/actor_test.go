package actors

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// TestKeyActorAnswersOnlyWhenDurable: a re-sent request whose events the
// key already applied, arriving while the write of those events is still
// pending, is not answered before that write: when the write is then
// refused (a newer activation took the key), both answers are errors. An
// early success for the re-sent request would let the sender commit
// changes that were never written.
func TestKeyActorAnswersOnlyWhenDurable(t *testing.T) {
	ctx := context.Background()
	inner := newEmbedded(t)
	gs := &gateStore{Store: inner, gate: make(chan struct{})}
	w := NewWriter(gs, WriterOptions{})
	defer w.Close(ctx)
	spec := &joins.CDCSpec{Type: joins.Inner,
		Left:  joins.SideSpec{Name: "users", PK: "id", JoinOn: "id"},
		Right: joins.SideSpec{Name: "domains", PK: "id", JoinOn: "user_id"}}
	deps := &Deps{Job: "j", Spec: spec, Store: inner, Writer: w, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	system := actor.NewActorSystem()
	defer system.Shutdown()
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &keyActor{deps: deps} }))
	system.Root.Send(pid, &cluster.ClusterInit{Identity: &cluster.ClusterIdentity{Identity: "7", Kind: "k"}})

	ev := record.Event{Key: "7", Side: record.Left, Op: record.OpCreate,
		After: record.Row{"id": "7", "name": "x"}, Pos: record.Position{Source: "s", Partition: 0, Offset: 1}}
	send := func(resend bool) chan any {
		pe, rows := EventShell(ev)
		ch := make(chan any, 1)
		system.Root.Send(pid, &LocalApply{Apply: &keypb.Apply{Key: "7", Events: []*keypb.Event{pe}, Resend: resend}, Rows: []EventRows{rows}, Reply: ch})
		return ch
	}
	first := send(false)
	again := send(true) // its event is applied (in memory); the first write is pending
	select {
	case x := <-again:
		t.Errorf("re-sent request answered %+v before the write of its events", x)
		again <- x // for the check below
	case <-time.After(100 * time.Millisecond):
	}
	// A newer activation takes the key: the pending write will be refused.
	if _, err := inner.Acquire(ctx, "j", "7"); err != nil {
		t.Fatal(err)
	}
	close(gs.gate)
	for name, ch := range map[string]chan any{"first": first, "re-sent": again} {
		select {
		case x := <-ch:
			var ap *keypb.Applied
			switch a := x.(type) {
			case *LocalApplied:
				ap = a.Applied
			case *keypb.Applied:
				ap = a
			}
			if ap == nil || ap.Error == "" {
				t.Errorf("%s request answered %#v, want a write error (fenced)", name, x)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s request: no answer", name)
		}
	}
	if _, err := inner.Load(ctx, "j", "7"); err != persistence.ErrNotFound {
		t.Errorf("the stale activation's state was written: %v", err)
	}
}
