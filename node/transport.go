package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
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
		fut, sendErr = r.send(c.key, sendstate.Resend(c.req))
	}
}

// send sends one request, req, to key's actor (see sendCalls): the resend
// of a request whose answer failed.
func (r *reader) send(key record.Key, req *sendstate.Request) (answer, error) {
	c := []call{{key: key, req: req}}
	r.sendCalls(c)
	return c[0].fut, c[0].sendErr
}

// sendCalls sends each call's request to its key's actor and sets the
// call's answer to come (fut) or why it could not be sent (sendErr). A key
// in this process gets the request as it is, in a LocalApply (its rows
// decoded: nothing encoded either way, no protobuf messages) that answers
// on a channel. The requests to keys in other processes are encoded
// (actors.EncodeRequest: binary rows, or an event-time input's JSON row)
// and grouped by owner node (groupByOwner): one ApplyBatch per owner, its
// requests in batch order, to the owner's batch actor, whose one answer
// holds each key's.
func (r *reader) sendCalls(calls []call) {
	n := r.n
	self := n.system.Address()
	var owners, pids []string // by call, made at the first remote one
	var wire []*keypb.Apply   // by call, the remote ones' requests encoded
	var lb *localBatch        // the local requests' answers: one channel and one deadline
	var slab []localAnswer    // and the requests: one allocation for the batch's
	for i := range calls {
		c := &calls[i]
		c.fut, c.sendErr = nil, nil
		pid, err := n.client.PID(string(c.key))
		if err != nil {
			c.sendErr = err
			continue
		}
		if pid.Address == self {
			if lb == nil {
				lb = &localBatch{ch: make(chan *localAnswer, len(calls)-i), deadline: time.Now().Add(n.timeout)}
				slab = make([]localAnswer, len(calls)-i)
			}
			la := &slab[0]
			slab = slab[1:]
			la.b = lb
			la.msg = actors.LocalApply{Req: &c.req.Request, Reply: la}
			n.system.Root.Send(pid, &la.msg)
			c.fut = la
			continue
		}
		if n.provider.IsSuspect(pid.Address) {
			c.sendErr = errPeerLost{pid.Address} // placement moves its keys soon (peers.go)
			continue
		}
		a, err := actors.EncodeRequest(c.key, &c.req.Request, n.timed != nil)
		if err != nil {
			c.sendErr = err
			continue
		}
		if owners == nil {
			owners, pids, wire = make([]string, len(calls)), make([]string, len(calls)), make([]*keypb.Apply, len(calls))
		}
		owners[i], pids[i], wire[i] = pid.Address, pid.Id, a
	}
	local, remote := 0, 0
	for i := range calls {
		switch {
		case owners != nil && owners[i] != "":
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
			TimeoutMs: n.timeout.Milliseconds(), OwnerWrites: n.out.hasShared() && !n.plan.ExactlyOnce}
		for j, i := range g.calls {
			ab.Applies[j], ab.Pids[j] = wire[i], pids[i]
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

// localBatch gathers the answers of the local requests sent together (one
// sendCalls: a batch's, or a resend): one channel for them all, with room
// for each, on which every answer comes as its request's localAnswer, and
// one deadline, request_timeout after the send. A wait that must block
// makes the batch's one timer, which fires at the deadline; from then on
// each request that has not answered times out (and is resent, see await),
// as with a timer per request that all end at that deadline. An answer
// that comes for another request than the one awaited is kept in its
// localAnswer until that one is awaited (batch order).
//
// The waits are the collector's alone: one goroutine, so got, timer and
// expired need no lock.
type localBatch struct {
	ch       chan *localAnswer
	deadline time.Time
	timer    *time.Timer // nil until a wait blocks
	expired  bool        // the timer fired
}

// localAnswer is a local key actor's answer to come for a LocalApply: it
// is the request's Replier. A LocalApply that reaches no actor (it
// passivated or moved) is answered with actors.DeadLetter (see
// actors.WatchDeadLetters), as a future's request would get
// actor.ErrDeadLetter.
type localAnswer struct {
	msg      actors.LocalApply // the request: with its answer, in its batch's one allocation (sendCalls)
	b        *localBatch
	x        any         // the answer, set before l goes on b.ch
	answered atomic.Bool // the first answer is the request's; later ones are dropped
	got      bool        // received from b.ch (the waiter's)
}

// Reply takes the request's answer (actors.Replier). It never blocks: b.ch
// has room for one answer of each of the batch's requests.
func (l *localAnswer) Reply(x any) {
	if !l.answered.CompareAndSwap(false, true) {
		return
	}
	l.x = x
	select {
	case l.b.ch <- l:
	default:
	}
}

func (l *localAnswer) Result(ctx context.Context) (any, error) {
	b := l.b
	for !l.got {
		select {
		case a := <-b.ch:
			a.got = true
			continue
		default:
		}
		if b.expired {
			return nil, actor.ErrTimeout
		}
		if b.timer == nil {
			b.timer = time.NewTimer(time.Until(b.deadline))
		}
		select {
		case a := <-b.ch:
			a.got = true
		case <-b.timer.C:
			b.expired = true
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if _, ok := l.x.(actors.DeadLetter); ok {
		return nil, actor.ErrDeadLetter
	}
	return l.x, nil
}
