package actors

import (
	"runtime"
	"sync"
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
// It is protoactor's lock-free mailbox (actor.UnboundedLockfree: two
// linked queues, a node per message; its code — github.com/asynkron/
// protoactor-go actor/mailbox.go and internal/queue/mpsc, Apache License
// 2.0, adapted — without the mailbox middlewares key actors do not use)
// with two allocations per message
// fewer (docs/performance/2026-12-05-node-profile.md, "Allocations per event on the node's hot
// path"): the function the dispatcher runs is made once per mailbox, not
// per schedule (protoactor passes a new method value each time), and the
// queues' nodes are recycled (nodePool) instead of made per message.
func deadLetterMailbox() actor.MailboxProducer {
	return func() actor.Mailbox {
		m := &keyMailbox{}
		m.user.init()
		m.system.init()
		m.process = m.processMessages
		return m
	}
}

// keyMailbox is protoactor's defaultMailbox over two mpscQueues, with the
// dead-letter invoker.
type keyMailbox struct {
	user, system    mpscQueue
	schedulerStatus atomic.Int32 // mailboxIdle or mailboxRunning
	userMessages    atomic.Int32
	sysMessages     atomic.Int32
	suspended       atomic.Int32
	inv             deadLetterInvoker
	dispatcher      actor.Dispatcher
	process         func() // processMessages, for the dispatcher
}

const (
	mailboxIdle int32 = iota
	mailboxRunning
)

func (m *keyMailbox) PostUserMessage(message any) {
	// A raw batch message, as protoactor's mailbox: its messages, then
	// itself.
	if batch, ok := message.(actor.MessageBatch); ok {
		for _, msg := range batch.GetMessages() {
			m.PostUserMessage(msg)
		}
	}
	if env, ok := message.(*actor.MessageEnvelope); ok {
		if batch, ok := env.Message.(actor.MessageBatch); ok {
			for _, msg := range batch.GetMessages() {
				m.PostUserMessage(msg)
			}
		}
	}
	m.user.push(message)
	m.userMessages.Add(1)
	m.schedule()
}

func (m *keyMailbox) PostSystemMessage(message any) {
	m.system.push(message)
	m.sysMessages.Add(1)
	m.schedule()
}

func (m *keyMailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.inv.MessageInvoker = invoker
	m.dispatcher = dispatcher
}

func (m *keyMailbox) schedule() {
	if m.schedulerStatus.CompareAndSwap(mailboxIdle, mailboxRunning) {
		m.dispatcher.Schedule(m.process)
	}
}

func (m *keyMailbox) processMessages() {
	for {
		m.run()
		m.schedulerStatus.Store(mailboxIdle)
		// Messages posted after the loop ended: run again if no one else
		// has scheduled the mailbox since.
		sys, user := m.sysMessages.Load(), m.userMessages.Load()
		if (sys > 0 || (m.suspended.Load() == 0 && user > 0)) && m.schedulerStatus.CompareAndSwap(mailboxIdle, mailboxRunning) {
			continue
		}
		return
	}
}

func (m *keyMailbox) run() {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.inv.EscalateFailure(r, msg)
		}
	}()
	i, t := 0, m.dispatcher.Throughput()
	for {
		if i > t {
			i = 0
			runtime.Gosched()
		}
		i++
		// System messages first, until there are none.
		if msg = m.system.pop(); msg != nil {
			m.sysMessages.Add(-1)
			switch msg.(type) {
			case *actor.SuspendMailbox:
				m.suspended.Store(1)
			case *actor.ResumeMailbox:
				m.suspended.Store(0)
			default:
				m.inv.InvokeSystemMessage(msg)
			}
			continue
		}
		if m.suspended.Load() == 1 {
			return // until resumed
		}
		if msg = m.user.pop(); msg == nil {
			return
		}
		m.userMessages.Add(-1)
		m.inv.InvokeUserMessage(msg)
	}
}

func (m *keyMailbox) Start() {}

func (m *keyMailbox) UserMessageCount() int { return int(m.userMessages.Load()) }

// mpscQueue is protoactor's multi-producer single-consumer queue
// (internal/queue/mpsc, after www.1024cores.net's non-intrusive MPSC
// node-based queue) whose consumer recycles the nodes it is done with.
// push is safe from any goroutine; pop only from the one consumer.
//
// A node is done with once pop has moved past it: the one producer that
// linked a node after it (the one whose swap of head returned it) stored
// its next before pop could see it, and touches it no more, so the
// consumer owns it and puts it back in nodePool.
type mpscQueue struct {
	head, tail atomic.Pointer[mpscNode]
	stub       mpscNode // the first tail: part of the mailbox, never pooled
}

type mpscNode struct {
	next atomic.Pointer[mpscNode]
	val  any
}

var nodePool = sync.Pool{New: func() any { return new(mpscNode) }}

func (q *mpscQueue) init() {
	q.head.Store(&q.stub)
	q.tail.Store(&q.stub)
}

func (q *mpscQueue) push(x any) {
	n := nodePool.Get().(*mpscNode)
	n.val = x
	prev := q.head.Swap(n)
	prev.next.Store(n) // release n to the consumer
}

func (q *mpscQueue) pop() any {
	tail := q.tail.Load()
	next := tail.next.Load()
	if next == nil {
		return nil
	}
	q.tail.Store(next)
	v := next.val
	next.val = nil
	tail.next.Store(nil) // hold no node of the queue (or of another, once reused)
	if tail != &q.stub {
		nodePool.Put(tail)
	}
	return v
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
