package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/record"
)

// BatchActorName is the name of every node's key batch actor: a sender
// reaches the one of node address as actor.NewPID(address, BatchActorName).
//
// A sender batch holds requests to many keys; sent one by one, each is a
// protoactor request of its own (a future, a remote envelope, a serialized
// message), and a profile of a 4-node fleet spent ~30% of a node's CPU in
// remoting. The sender groups a batch's requests by owner node into one
// ApplyBatch; the owner's batch actor hands each Apply to its key's actor,
// in the batch's order, as a LocalApply, and answers once. Each key stays
// its own virtual actor and gets the very Apply a single request carries:
// ordering, gap refusal, fencing and resends are the key's as before.
const BatchActorName = "keybatch"

// defaultBatchTimeout is the answer deadline of an ApplyBatch that names
// no sender timeout.
const defaultBatchTimeout = 30 * time.Second

// DeadLetter is the answer a LocalApply's Reply gets when protoactor could
// not deliver it (no actor under its PID any more: it passivated or moved),
// as a future's request gets actor.ErrDeadLetter. See WatchDeadLetters.
type DeadLetter struct{}

// WatchDeadLetters answers, with DeadLetter, every LocalApply with a Reply
// that system could not deliver, and counts as done a Budget.Prune request
// to a key actor that had stopped (nothing to prune there). Every actor
// system that sends LocalApply (a node's source readers, its batch actor)
// needs it, once.
func WatchDeadLetters(system *actor.ActorSystem) {
	system.EventStream.Subscribe(func(msg any) {
		if d, ok := msg.(*actor.DeadLetterEvent); ok {
			switch m := d.Message.(type) {
			case *LocalApply:
				if m.Reply != nil {
					m.Reply.Reply(DeadLetter{})
				}
			case pruneNow:
				if m.done != nil {
					m.done.Done()
				}
			}
		}
	})
}

// BatchOptions configure a node's key batch actor.
type BatchOptions struct {
	// Write, when set, writes the outputs of a batch's answered keys to the
	// node's shared sinks (Kafka, Redis: one system every node reaches) when
	// the sender asks for it (ApplyBatch.owner_writes), before the batch is
	// answered. So a key's outputs reach those sinks from its owner alone,
	// in the order its actor made them, whichever node read its inputs.
	// written false (no shared sink here) or an error leaves the writing to
	// the sender, as without owner_writes; ctx ends before the sender's
	// timeout.
	Write func(ctx context.Context, outs []record.Output) (written bool, err error)
}

// SpawnBatch starts system's key batch actor under BatchActorName. The
// system needs WatchDeadLetters, so a request to a key whose actor is gone
// is answered (dead_letter) rather than timed out.
func SpawnBatch(system *actor.ActorSystem, opts BatchOptions) (*actor.PID, error) {
	pid, err := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return batchActor{opts: opts} }), BatchActorName)
	if err != nil {
		return nil, fmt.Errorf("actors: spawn %s: %w", BatchActorName, err)
	}
	return pid, nil
}

// batchActor is a node's key batch actor. Its mailbox only decodes the rows
// and hands the requests on, in order (so one key's requests of successive
// batches reach its mailbox in the order they were sent); a goroutine per
// batch gathers the answers, which come once the keys' states are durable,
// writes their outputs when asked (BatchOptions.Write) and answers.
type batchActor struct{ opts BatchOptions }

func (b batchActor) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*keypb.ApplyBatch)
	if !ok {
		return
	}
	timeout := time.Duration(m.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = defaultBatchTimeout
	}
	// Answer before the sender's future expires, so the keys that did
	// answer are not lost with the one that did not.
	deadline := time.Now().Add(timeout - timeout/10)
	answers := make([]*keypb.Applied, len(m.Applies))
	replies := make([]chan any, len(m.Applies))
	raw := make([]any, len(m.Applies))
	self := ctx.ActorSystem().Address()
	for i, a := range m.Applies {
		if i >= len(m.Pids) || m.Pids[i] == "" {
			answers[i] = &keypb.Applied{Error: fmt.Sprintf("batch: request %d names no key actor", i)}
			continue
		}
		replies[i] = make(chan any, 1)
		ctx.Send(actor.NewPID(self, m.Pids[i]), &LocalApply{Wire: a, Reply: ReplyChan(replies[i])})
	}
	sender := ctx.Sender()
	if sender == nil {
		return // sent, not requested: nobody waits for the answers
	}
	root := ctx.ActorSystem().Root
	write := b.opts.Write
	if !m.OwnerWrites {
		write = nil
	}
	go func() {
		gather(raw, replies, deadline)
		ab := &keypb.AppliedBatch{Applied: answers}
		if write != nil {
			ab.Written = writeOutputs(write, raw, deadline)
		}
		for i, x := range raw {
			if replies[i] != nil {
				answers[i] = wireAnswer(x)
			}
		}
		root.Send(sender, ab)
	}()
}

// writeOutputs writes, in batch order, the outputs of the keys that
// applied their requests (raw[i], a *LocalApplied without an error) through
// write, bounded by deadline, and says whether they were written.
func writeOutputs(write func(context.Context, []record.Output) (bool, error), raw []any, deadline time.Time) bool {
	var outs []record.Output
	for _, x := range raw {
		if la, ok := x.(*LocalApplied); ok && la.Applied.GetError() == "" {
			outs = append(outs, la.Outputs...)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	written, err := write(ctx, outs)
	return err == nil && written
}

// gather fills raw[i] with the answer on replies[i] (nil: answered
// already), waiting until deadline; a key that has not answered by then is
// answered with timeout.
func gather(raw []any, replies []chan any, deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	expired := false
	for i, ch := range replies {
		if ch == nil {
			continue
		}
		if !expired {
			select {
			case raw[i] = <-ch:
				continue
			case <-t.C:
				expired = true
			}
		}
		select {
		case raw[i] = <-ch:
		default:
			raw[i] = &keypb.Applied{Timeout: true}
		}
	}
}

// wireAnswer turns a key actor's answer to a LocalApply into its part of an
// AppliedBatch: outputs encoded (binary rows), a dead letter flagged.
func wireAnswer(x any) *keypb.Applied {
	switch v := x.(type) {
	case DeadLetter:
		return &keypb.Applied{DeadLetter: true}
	case *LocalApplied:
		ap := v.Applied // the key actor's, made for this answer alone
		for _, o := range v.Outputs {
			po, err := EncodeOutput(o)
			if err != nil {
				return &keypb.Applied{Error: err.Error()}
			}
			ap.Outputs = append(ap.Outputs, po)
		}
		return ap
	case *keypb.Applied:
		return v
	}
	return &keypb.Applied{Error: fmt.Sprintf("batch: unexpected answer %T", x)}
}
