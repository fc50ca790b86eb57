package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// load takes the key (an owner epoch) if this activation has not, and
// restores its durable state into the core, unless the core is loaded.
func (a *keyActor) load() error {
	c := a.core
	if c.Loaded() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c.Epoch() == 0 && a.deps.loads != nil {
		// Become the owner, then read, in one round trip shared with the
		// activations that run at once (loader.go).
		epoch, snap, err := a.deps.loads.Activate(ctx, a.deps.Job, c.Key())
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			c.SetEpoch(epoch)
			c.Init()
			return nil
		case err != nil:
			return err
		}
		c.SetEpoch(epoch)
		return c.Restore(snap.Offsets, snap.State)
	}
	if c.Epoch() == 0 {
		// Become the owner before reading: a stale activation's later write
		// is then refused, so what this one loads stays what it will extend.
		epoch, err := a.deps.Store.Acquire(ctx, a.deps.Job, c.Key())
		if err != nil {
			return err
		}
		c.SetEpoch(epoch)
	}
	var snap persistence.Snapshot
	var err error
	if a.deps.loads != nil {
		snap, err = a.deps.loads.Load(ctx, a.deps.Job, c.Key())
	} else {
		snap, err = a.deps.Store.Load(ctx, a.deps.Job, c.Key())
	}
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		c.Init()
		return nil
	case err != nil:
		return err
	}
	return c.Restore(snap.Offsets, snap.State)
}

// request turns an Apply from the wire into the core's request, in rb (a
// LocalApply's Req is one already: actors.EncodeRequest is the inverse).
func (a *keyActor) request(m *keypb.Apply, rb *requestBuf) (*keycore.Request, error) {
	// For the usual one event, the event slice is rb's room for one.
	req := &rb.req
	*req = keycore.Request{Prev: m.Prev, Committed: m.Committed,
		Fire: m.Fire, Watermark: m.Watermark, Sender: m.Session, Resend: m.Resend}
	if len(m.Events) == 1 {
		req.Events = rb.one[:]
	} else {
		req.Events = make([]keycore.Event, len(m.Events))
	}
	timed := a.deps.NewTimed != nil
	for i, pe := range m.Events {
		e := keycore.Event{Side: record.Side(pe.Side), Pos: record.Position{Source: pe.Source, Partition: pe.Partition, Offset: pe.Offset},
			Seq: int(pe.Seq), Ts: pe.Ts, Watermark: pe.Watermark, SrcPos: pe.SrcPos}
		var err error
		switch {
		case timed:
			e.After, err = eventRow(pe.AfterBin, pe.After)
		default:
			if e.Before, err = eventRow(pe.BeforeBin, pe.Before); err == nil {
				e.After, err = eventRow(pe.AfterBin, pe.After)
			}
		}
		if err != nil {
			return nil, err
		}
		if timed {
			// An event-time input's op is "c", or the row kind of a
			// changelog input (a temporal join's side with a kind field).
			if k, ok := record.ParseKind(pe.Op); ok {
				e.Kind = k
			}
		} else {
			op, ok := record.ParseOp(pe.Op)
			if !ok {
				return nil, fmt.Errorf("actors: unknown op %q", pe.Op)
			}
			e.Op = op
		}
		req.Events[i] = e
	}
	return req, nil
}

// apply applies a request: req, the core's request in memory (a
// LocalApply's Req), or else m, an Apply from the wire, which request
// decodes. The answer to a LocalApply (local) is a LocalApplied with
// decoded outputs: nothing is encoded to JSON and back; to an Apply, an
// Applied with them encoded. It goes to replyTo when it is set, else to
// the sender.
func (a *keyActor) apply(ctx actor.Context, req *keycore.Request, m *keypb.Apply, local bool, replyTo Replier) {
	respond := func(x any) {
		if replyTo == nil {
			ctx.Respond(x)
			return
		}
		replyTo.Reply(x)
	}
	a.stop, a.cause = false, "" // a request cancels a pending passivation
	if a.deps.PassivateAfter > 0 {
		// protoactor cancels the receive timeout once it fires: arm it again
		// (a no-op while it is armed).
		ctx.SetReceiveTimeout(a.deps.PassivateAfter)
	}
	if err := a.load(); err != nil {
		respond(&keypb.Applied{Error: "load state: " + err.Error()})
		return
	}
	buf := &applyBuf{}
	if req == nil {
		if m == nil {
			respond(&keypb.Applied{Error: "actors: a LocalApply with no request"})
			return
		}
		var err error
		if req, err = a.request(m, &requestBuf{}); err != nil {
			respond(&keypb.Applied{Error: err.Error()})
			return
		}
	}
	r := a.core.Step(req, time.Now().UnixMilli())
	if r.Reload {
		// This activation may be stale: a topology change can activate a
		// key twice, and one that has not written since the other took
		// the key is never fenced out — it would refuse every request
		// that builds on the other's writes, for ever. Take the key again
		// and reload its durable state: if the earlier request was applied
		// anywhere, it is there now.
		a.deps.Logger.Debug("gap: reloading the key's durable state", "job", a.deps.Job, "key", a.core.Key(), "epoch", a.core.Epoch())
		a.core.Reset()
		if err := a.load(); err != nil {
			respond(&keypb.Applied{Error: "load state: " + err.Error()})
			return
		}
		r = a.core.Step(req, time.Now().UnixMilli())
	}
	switch {
	case r.Gap:
		respond(&keypb.Applied{Gap: true, Error: r.Err.Error()})
		return
	case r.Err != nil:
		respond(&keypb.Applied{Error: "encode state: " + r.Err.Error()})
		return
	}
	var reply *keypb.Applied
	var answer any
	if local {
		la := &buf.la
		la.Applied, la.Outputs = &la.applied, r.Outputs
		reply, answer = &la.applied, &la.LocalApplied
	} else {
		reply = &keypb.Applied{}
		answer = reply
	}
	reply.Skipped, reply.Duplicates = int32(r.Skipped), int32(r.Duplicates)
	for _, l := range r.Late {
		pe, err := EncodeEvent(record.Event{Key: a.core.Key(), Side: l.Element.Side, Op: record.OpCreate, After: l.Element.Row, Pos: l.Element.Pos})
		if err != nil {
			continue
		}
		pe.Ts = l.Element.Ts
		reply.Late = append(reply.Late, &keypb.Late{Event: pe, Reason: l.Reason})
	}
	if !local {
		for _, o := range r.Outputs {
			po, err := EncodeOutput(o)
			if err != nil {
				respond(&keypb.Applied{Error: err.Error()})
				return
			}
			reply.Outputs = append(reply.Outputs, po)
		}
	}
	w := waiter{answer: answer, replyTo: replyTo, sender: ctx.Sender()}
	switch {
	case r.Wait:
		// A write is in flight: this request's change goes out with the
		// next one (group commit), and so does its answer.
		a.account(ctx, 0, 0, false)
		a.waiting = append(a.waiting, w)
	case r.Write == nil:
		a.account(ctx, 0, 0, false)
		respond(answer)
	default:
		a.submitOne(ctx, r.Write, w, &buf.pw)
	}
}

// applyBuf is what a request needs, in one allocation, not one each
// (docs/performance/2026-12-05-node-profile.md, "Allocations per event on the node's hot path"):
// the local answer and the write (a request from the wire decodes into a
// requestBuf of its own; a local one comes as the core's request). Each
// apply makes a new one and never reuses it: the core, the reader and the
// Writer may hold its parts after apply returns.
type applyBuf struct {
	la localApplied
	pw pendingWrite
}

// localApplied is a LocalApplied with the Applied it points to.
type localApplied struct {
	LocalApplied
	applied keypb.Applied
}

// requestBuf is a keycore.Request with room for one event.
type requestBuf struct {
	req keycore.Request
	one [1]keycore.Event
}
