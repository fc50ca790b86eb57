package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/persistence"
)

// waiter is an answer to give once a write is durable: on replyTo (a
// LocalApply), or to sender.
type waiter struct {
	answer  any
	replyTo Replier
	sender  *actor.PID
}

func (w waiter) give(root *actor.RootContext, x any) {
	switch {
	case w.replyTo != nil:
		w.replyTo.Reply(x)
	case w.sender != nil:
		root.Send(w.sender, x)
	}
}

// submit hands w to the Writer; once it is durable (or failed) the
// waiters are answered and the actor told (writeDone).
func (a *keyActor) submit(ctx actor.Context, w *keycore.Write, waiters []waiter) {
	a.write(ctx, w, &pendingWrite{waiters: waiters})
}

// submitOne is submit for one waiter (a request's own write), kept in p,
// the request's own (applyBuf): no allocation, not a slice and a closure.
func (a *keyActor) submitOne(ctx actor.Context, w *keycore.Write, wt waiter, p *pendingWrite) {
	p.one[0] = wt
	p.waiters = p.one[:]
	a.write(ctx, w, p)
}

func (a *keyActor) write(ctx actor.Context, w *keycore.Write, p *pendingWrite) {
	a.account(ctx, w.Size, w.Cached, true)
	snap := persistence.Snapshot{Job: a.deps.Job, Key: a.core.Key(), Epoch: a.core.Epoch(), Offsets: w.Offsets, State: w.State,
		Parts: w.Parts, Delta: w.Delta}
	if w.HasTimer {
		// The store's timer index wakes this key when the watermark reaches
		// its next timer, even if it is passivated by then.
		snap.HasTimer, snap.NextTimer = true, max(persistence.MinTimer, min(w.NextTimer, persistence.MaxTimer))
	}
	p.self, p.root = ctx.Self(), ctx.ActorSystem().Root
	a.deps.Writer.SubmitTo(snap, p)
}

// pendingWrite is a submitted write's answers and the actor's writeDone,
// in one allocation: given on the Writer's goroutine once the write is
// durable (or failed).
type pendingWrite struct {
	waiters []waiter
	one     [1]waiter
	self    *actor.PID
	root    *actor.RootContext
	done    writeDone
}

func (p *pendingWrite) WriteDone(err error) {
	for _, wt := range p.waiters {
		x := wt.answer
		if err != nil {
			x = &keypb.Applied{Error: "write state: " + err.Error()}
		}
		wt.give(p.root, x)
	}
	p.done.err = err
	p.root.Send(p.self, &p.done)
}

// flush writes what the requests waiting since the last write changed, in
// one write that answers them all.
func (a *keyActor) flush(ctx actor.Context) {
	waiters := a.waiting
	a.waiting = nil
	w, err := a.core.Flush()
	switch {
	case err != nil:
		a.waiting = waiters
		a.fail(ctx, fmt.Errorf("encode state: %w", err))
		a.deps.Logger.Error("key state encode failed; stopping the activation", "job", a.deps.Job, "key", a.core.Key(), "err", err)
		a.abandon(ctx)
	case w == nil:
		for _, wt := range waiters {
			wt.give(ctx.ActorSystem().Root, wt.answer)
		}
	default:
		a.submit(ctx, w, waiters)
	}
}

// fail answers the requests waiting for the next write, which will not
// come (the activation stops): with the write's error when one failed, or,
// when the activation stops for another reason, as if they had reached no
// actor. Either way their senders resend them to the next activation, which
// applies them again or skips what is durable.
func (a *keyActor) fail(ctx actor.Context, err error) {
	root := ctx.ActorSystem().Root
	for _, wt := range a.waiting {
		switch {
		case err != nil:
			wt.give(root, &keypb.Applied{Error: "write state: " + err.Error()})
		case wt.replyTo != nil:
			wt.give(root, DeadLetter{})
		default:
			wt.give(root, &keypb.Applied{Error: "key activation stopped before its state was written"})
		}
	}
	a.waiting = nil
}
