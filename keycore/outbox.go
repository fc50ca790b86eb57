package keycore

import (
	"maps"

	"github.com/joinery/joinery/record"
)

// stamp gives new outputs the key's next sequence numbers (record.Output.
// Seq): one above the last, and never below now (Unix ms) shifted left 12
// bits, so a key whose state was dropped when it emptied still numbers
// above its earlier outputs when it comes back.
func (c *Core) stamp(outs []record.Output, now int64) {
	if c.cfg.NoSeq {
		return
	}
	floor := uint64(max(now, 0)) << 12
	for i := range outs {
		c.seq = max(c.seq+1, floor)
		outs[i].Seq = c.seq
	}
}

// duplicate reports whether e, a changelog-join change at source position
// pos, is not newer than the last change applied to the same row (a
// Debezium at-least-once replay arriving at a new offset), and otherwise
// records pos as the row's last. Changes without a position, or whose row
// has no usable primary key, are never duplicates.
func (c *Core) duplicate(e record.Event, pos string) bool {
	if pos == "" {
		return false
	}
	spec := &c.cfg.Machine
	row, pkCol := e.After, spec.pkColumn(e.Side)
	if e.Op == record.OpDelete {
		row = e.Before
	}
	pk, ok := record.KeyOf(row[pkCol])
	if !ok {
		return false
	}
	id := spec.sideName(e.Side) + "/" + string(pk)
	last, ok := c.src[id]
	if ok && pos <= last {
		return true
	}
	if c.src == nil {
		c.src = map[string]string{}
	}
	c.src[id] = pos
	if c.cfg.Parts {
		ch := c.pt.changes()
		ch.src = append(ch.src, id)
		c.pt.srcBytes += len(pos) - len(last)
		if !ok {
			c.pt.srcBytes += 2 + len(id)
		}
	}
	return false
}

// prune drops outbox entries the sender has committed. It reports whether it
// dropped any.
func (c *Core) prune(committed map[string]int64) bool {
	if len(committed) == 0 || len(c.outbox) == 0 {
		return false
	}
	kept := c.outbox[:0]
	for _, e := range c.outbox {
		if n, ok := committed[e.Part]; ok && e.Offset <= n {
			if c.cfg.Parts && e.id < c.pt.written {
				ch := c.pt.changes()
				ch.dropped = append(ch.dropped, e.id)
				c.pt.outboxBytes -= 18 + e.encLen()
			}
			continue
		}
		kept = append(kept, e)
	}
	dropped := len(kept) != len(c.outbox)
	clear(c.outbox[len(kept):])
	c.outbox = kept
	return dropped
}

// Prune drops the outbox entries at or below committed (partition id ->
// offset its sources committed, the outputs written), as a request's
// Committed does, and returns the Write that deletes them from the store:
// nil when it dropped none. A key hears of commits only in its next
// request, so a key that idles after its last input would keep that
// input's outputs in the store for as long as it idles; its driver calls
// Prune when the key has idled a while or passivates. Call it with no
// Write pending (Pending is 0); the Write counts as pending until
// Durable. Only partition offsets prune: firings' entries (FirePart) wait
// for a request.
func (c *Core) Prune(committed map[string]int64) (*Write, error) {
	if c.pending > 0 || c.dirty || len(c.outbox) == 0 {
		return nil, nil
	}
	if _, ok := committed[FirePart]; ok {
		committed = maps.Clone(committed)
		delete(committed, FirePart)
	}
	if !c.prune(committed) {
		return nil, nil
	}
	return c.write()
}

// resendFired appends the kept outputs of firings at or below wm that were
// not sent to sender yet (all of them when resend), and records them sent.
func (c *Core) resendFired(wm int64, sender string, resend bool, outs []record.Output) []record.Output {
	for i := range c.outbox {
		e := &c.outbox[i]
		if e.Part != FirePart || e.Offset > wm || (!resend && e.SentTo == sender) {
			continue
		}
		outs = append(outs, e.outputs()...)
		e.SentTo = sender
	}
	return outs
}

// kept returns the outputs the outbox holds for an input.
func (c *Core) kept(part string, offset int64) []record.Output {
	for _, e := range c.outbox {
		if e.Part == part && e.Offset == offset {
			return e.outputs()
		}
	}
	return nil
}
