package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/joinery/joinery/actors"
	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/node/sendstate"
	"github.com/joinery/joinery/record"
)

// await waits for a key's answer. A request that failed — the actor was gone
// (dead letter: it passivated or moved), did not answer in time, refused a gap
// (an earlier request to it was lost, and is retried first because batches
// complete in order), or could not write its state — is sent again to the
// key's current activation. Resending is safe: the actor skips events it
// already applied and re-sends their outputs from its outbox.
//
// written says the key's owner node already wrote the outputs to the shared
// sinks (owner_writes): the reader writes them to its node-local sinks only.
func (r *reader) await(ctx context.Context, c call) (ap *keypb.Applied, outs []record.Output, written bool, err error) {
	n := r.n
	fut, sendErr := c.fut, c.sendErr
	bo := retryBackoff()
	deadline := time.Now().Add(retryFor)
	for attempt := 1; ; attempt++ {
		why := sendErr
		if fut != nil {
			res, err := fut.Result(ctx)
			ap, outs, written = nil, nil, false
			switch x := res.(type) {
			case *actors.LocalApplied:
				ap, outs = x.Applied, x.Outputs
			case *keypb.Applied:
				ap = x
			case ownerWritten:
				ap, written = x.Applied, true
			}
			switch {
			case err != nil:
				why = err
			case ap == nil:
				why = fmt.Errorf("unexpected answer %T", res)
			case ap.Error != "":
				why = errors.New(ap.Error)
			default:
				for _, po := range ap.Outputs {
					o, err := actors.DecodeOutput(po)
					if err != nil {
						return nil, nil, false, fmt.Errorf("key %q: %w", c.key, err)
					}
					outs = append(outs, o)
				}
				return ap, outs, written, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, false, fmt.Errorf("key %q: giving up after %d attempts: %w", c.key, attempt, why)
		}
		n.stats.Retries.Add(1)
		n.log.Debug("key request failed; retrying", "key", c.key, "attempt", attempt, "err", why)
		if (errors.Is(why, actor.ErrDeadLetter) || errors.Is(why, actors.ErrOwnerLost)) && attempt <= 3 {
			// The actor had just passivated (or moved): resolve the key
			// again at once; a new activation answers.
		} else {
			if err := bo.Wait(ctx); err != nil {
				return nil, nil, false, err
			}
		}
		n.client.Forget(string(c.key))
		// Its answer may have been lost: ask for the kept outputs again. A
		// copy, as the first send may still be in a local actor's mailbox.
		fut, sendErr = r.send(c.key, sendstate.Resend(c.apply), c.rows)
	}
}

// send sends one request, a, to key's actor (see sendCalls): the resend
// of a request whose answer failed.
func (r *reader) send(key record.Key, a *keypb.Apply, rows []actors.EventRows) (answer, error) {
	c := []call{{key: key, apply: a, rows: rows}}
	r.sendCalls(c)
	return c[0].fut, c[0].sendErr
}

// sendCalls sends each call's request to its key's actor and sets the
// call's answer to come (fut) or why it could not be sent (sendErr). A key
// in this process gets a LocalApply with the rows decoded (no encoding
// either way) that answers on a channel. The requests to keys in other
// processes are grouped by owner node (groupByOwner): one ApplyBatch per
// owner, its requests in batch order and their rows encoded into them
// (binary rows, see actors.FillRows; so each apply must not be shared yet:
// a fresh request or a copy), to the owner's batch actor, whose one answer
// holds each key's.
func (r *reader) sendCalls(calls []call) {
	n := r.n
	self := n.system.Address()
	owners := make([]string, len(calls))
	pids := make([]string, len(calls))
	var deadline time.Time // the local requests': one clock read per batch
	for i := range calls {
		c := &calls[i]
		c.fut, c.sendErr = nil, nil
		pid, err := n.client.PID(string(c.key))
		if err != nil {
			c.sendErr = err
			continue
		}
		if pid.Address == self {
			if deadline.IsZero() {
				deadline = time.Now().Add(n.timeout)
			}
			la := &localAnswer{ch: make(chan any, 1), deadline: deadline}
			la.msg = actors.LocalApply{Apply: c.apply, Rows: c.rows, Reply: la.ch}
			n.system.Root.Send(pid, &la.msg)
			c.fut = la
			continue
		}
		if n.provider.IsSuspect(pid.Address) {
			c.sendErr = errPeerLost{pid.Address} // placement moves its keys soon (peers.go)
			continue
		}
		if err := actors.FillRows(c.apply, c.rows); err != nil {
			c.sendErr = err
			continue
		}
		owners[i], pids[i] = pid.Address, pid.Id
	}
	local, remote := 0, 0
	for i := range calls {
		switch {
		case owners[i] != "":
			remote++
		case calls[i].sendErr == nil:
			local++
		}
	}
	if local > 0 {
		n.metrics.KeyRequests.WithLabelValues(n.spec.Name, "local").Add(float64(local))
	}
	if remote > 0 {
		n.metrics.KeyRequests.WithLabelValues(n.spec.Name, "remote").Add(float64(remote))
	}
	for _, g := range groupByOwner(owners) {
		ab := &keypb.ApplyBatch{Applies: make([]*keypb.Apply, len(g.calls)), Pids: make([]string, len(g.calls)),
			TimeoutMs: n.timeout.Milliseconds(), OwnerWrites: n.out.hasShared()}
		for j, i := range g.calls {
			ab.Applies[j], ab.Pids[j] = calls[i].apply, pids[i]
		}
		lost := n.peers.watch(g.owner) // before the send: a connection lost meanwhile fails it (peers.go)
		rb := &remoteBatch{fut: &remoteAnswer{fut: n.system.Root.RequestFuture(actor.NewPID(g.owner, actors.BatchActorName), ab, n.timeout),
			addr: g.owner, lost: lost}, size: len(g.calls)}
		for j, i := range g.calls {
			calls[i].fut = batchPart{b: rb, i: j}
		}
	}
}

// answer is a key request's answer to come: a localAnswer, or a key's part
// of an owner node's batch answer (batchPart). Result waits for it until
// the request's timeout or ctx ends (then ctx.Err()).
type answer interface {
	Result(ctx context.Context) (any, error)
}

// localAnswer waits for a local key actor's answer to a LocalApply on its
// Reply channel. A LocalApply that reaches no actor (it passivated or
// moved) comes back as actors.DeadLetter (see actors.WatchDeadLetters), as
// a future's request would.
type localAnswer struct {
	msg      actors.LocalApply // the request: one allocation with its answer
	ch       chan any
	deadline time.Time
}

func (l *localAnswer) Result(ctx context.Context) (any, error) {
	var x any
	select {
	case x = <-l.ch:
	default:
		t := time.NewTimer(time.Until(l.deadline))
		defer t.Stop()
		select {
		case x = <-l.ch:
		case <-t.C:
			return nil, actor.ErrTimeout
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if _, ok := x.(actors.DeadLetter); ok {
		return nil, actor.ErrDeadLetter
	}
	return x, nil
}
