package node

import (
	"context"
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/joinery/joinery/actors/keypb"
)

// ownerGroup is one owner node's share of a batch's remote requests: the
// indexes of its calls in the batch, ascending (batch order).
type ownerGroup struct {
	owner string
	calls []int
}

// groupByOwner groups calls by owner node address (owners[i] is call i's;
// "" for a call that is not sent remotely): owners in the order of their
// first call, each owner's calls in batch order. A batch holds one request
// per key, so no key's requests are reordered; one key's requests of
// successive batches go out in batch order (one batch is sent before the
// next is built) and its actor refuses a gap between them as it would for
// requests sent one by one.
func groupByOwner(owners []string) []ownerGroup {
	var groups []ownerGroup
	at := map[string]int{}
	for i, o := range owners {
		if o == "" {
			continue
		}
		g, ok := at[o]
		if !ok {
			g = len(groups)
			at[o] = g
			groups = append(groups, ownerGroup{owner: o})
		}
		groups[g].calls = append(groups[g].calls, i)
	}
	return groups
}

// remoteBatch is the answer to come of one ApplyBatch: its future, awaited
// once, split into the keys' parts.
type remoteBatch struct {
	fut   answer // the batch actor's future (an AppliedBatch)
	size  int    // requests in the batch
	once  sync.Once
	parts []*keypb.Applied
	// written: the owner wrote the parts' outputs to its shared sinks
	// (ApplyBatch.owner_writes, AppliedBatch.written).
	written bool
	err     error
}

// ownerWritten is a key's answer whose outputs its owner node already wrote
// to the shared sinks: the reader writes them to its node-local sinks only.
type ownerWritten struct{ *keypb.Applied }

// wait awaits the batch's answer; ctx is the first waiter's (the parts of
// one batch are awaited by one reader, under one context).
func (b *remoteBatch) wait(ctx context.Context) {
	res, err := b.fut.Result(ctx)
	if err != nil {
		b.err = err // the whole batch: a timeout, or a dead letter (no batch actor there)
		return
	}
	ab, ok := res.(*keypb.AppliedBatch)
	switch {
	case !ok:
		b.err = fmt.Errorf("unexpected batch answer %T", res)
	case len(ab.Applied) != b.size:
		b.err = fmt.Errorf("batch answer has %d answers for %d requests", len(ab.Applied), b.size)
	default:
		b.parts, b.written = ab.Applied, ab.Written
	}
}

// batchPart is one key's answer in a remoteBatch. Its Result is what a
// single request's future would give: the key's Applied (a refusal, such
// as a gap, in its Error), or actor.ErrDeadLetter or actor.ErrTimeout when
// the owner says the key's actor was gone or did not answer in time, or
// the batch's own failure. An answer whose outputs the owner wrote comes as
// ownerWritten.
type batchPart struct {
	b *remoteBatch
	i int
}

func (p batchPart) Result(ctx context.Context) (any, error) {
	p.b.once.Do(func() { p.b.wait(ctx) })
	if p.b.err != nil {
		return nil, p.b.err
	}
	ap := p.b.parts[p.i]
	switch {
	case ap == nil:
		return nil, fmt.Errorf("batch answer %d is empty", p.i)
	case ap.DeadLetter:
		return nil, actor.ErrDeadLetter
	case ap.Timeout:
		return nil, actor.ErrTimeout
	case p.b.written:
		return ownerWritten{ap}, nil
	}
	return ap, nil
}
