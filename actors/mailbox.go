package actors

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// deadLetterMailbox is protoactor's unbounded mailbox with one change: the
// user messages it delivers after its actor has stopped go to the actor
// system's dead letters instead of nowhere.
//
// protoactor drops them silently (actorContext.InvokeUserMessage returns at
// once once the actor is stopped). A key actor passivates by poisoning
// itself, and the requests that were queued behind the pill, or posted
// through a PID resolved just before the actor was removed from the
// registry, were then lost without an answer: their sender waited out its
// whole request timeout (30 s) before resending — a stall of the source's
// read loop at every unlucky passivation (seen in
// TestChaosClusterFailoverLaggingReplica with passivate_after: 50ms). As
// dead letters they are answered at once (a request gets a
// DeadLetterResponse, a LocalApply's Reply a DeadLetter, see
// WatchDeadLetters) and their senders resend them to the key's next
// activation, which is what they do for a message sent after the stop.
//
// It wraps protoactor's lock-free mailbox (see NewKind), in one allocation
// of about 48 B per activation with its invoker.
func deadLetterMailbox() actor.MailboxProducer {
	inner := actor.UnboundedLockfree()
	return func() actor.Mailbox { return &deadLetterBox{Mailbox: inner()} }
}

type deadLetterBox struct {
	actor.Mailbox
	inv deadLetterInvoker
}

func (m *deadLetterBox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.inv.MessageInvoker = invoker
	m.Mailbox.RegisterHandlers(&m.inv, dispatcher)
}

// deadLetterInvoker is the actor's context as its mailbox invokes it.
type deadLetterInvoker struct {
	actor.MessageInvoker
	stopped atomic.Bool
}

func (i *deadLetterInvoker) InvokeSystemMessage(msg interface{}) {
	i.MessageInvoker.InvokeSystemMessage(msg)
	if _, ok := msg.(*actor.Stop); ok {
		// A key actor has no children, so the stop has finished: the
		// actor is out of the registry and has seen Stopped.
		i.stopped.Store(true)
	}
}

func (i *deadLetterInvoker) InvokeUserMessage(msg interface{}) {
	if !i.stopped.Load() {
		i.MessageInvoker.InvokeUserMessage(msg)
		return
	}
	ctx, ok := i.MessageInvoker.(interface {
		ActorSystem() *actor.ActorSystem
		Self() *actor.PID
	})
	if !ok {
		return // not protoactor's actor context: nothing to answer with
	}
	ctx.ActorSystem().DeadLetter.SendUserMessage(ctx.Self(), msg)
}
