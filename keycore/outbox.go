package keycore

import (
	"maps"
	"math"

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

// admission is what admit decided of a changelog-join change.
type admission int

const (
	admitted  admission = iota
	duplicate           // a Debezium replay: its source position is not newer
	stale               // a versioned side's change older than the row's last
)

// admit decides whether e, a changelog-join change at Debezium source
// position pos, is applied, and records the row's last position when it
// is. A change whose position is not newer than the row's last is a
// duplicate (an at-least-once replay arriving at a new offset). On a
// versioned side (joins.SideSpec.Versioned) the row's last position is its
// version: the change's source time, then pos (versionPos); a change older
// than the row's version is stale, unless it moves the row to another join
// value (isMove), which is applied and keeps the newer version at the old
// key. Changes without a position on a side that is not versioned, or
// whose row has no usable primary key, are always admitted.
func (c *Core) admit(e record.Event, pos string) admission {
	spec := &c.cfg.Machine
	versioned := spec.versioned(e.Side)
	if pos == "" && !versioned {
		return admitted
	}
	row, pkCol := e.After, spec.pkColumn(e.Side)
	if e.Op == record.OpDelete {
		row = e.Before
	}
	pk, ok := record.KeyOf(row[pkCol])
	if !ok {
		return admitted
	}
	id := spec.sideName(e.Side) + "/" + string(pk)
	last, ok := c.src[id]
	next := pos
	if versioned {
		next = versionPos(e.Ts, pos)
		if ok {
			lastTs, lastPos, isVersion := parseVersion(last)
			if !isVersion {
				lastTs, lastPos = math.MinInt64, last // stored before the side was versioned
			}
			if pos != "" && lastPos != "" && pos <= lastPos {
				return duplicate
			}
			if max(e.Ts, 0) < lastTs {
				if !isMove(e) {
					return stale
				}
				if e.Op == record.OpDelete {
					next = versionPos(lastTs, pos) // the row leaves; its newer version stays
				}
			}
		}
	} else if ok && pos <= last {
		return duplicate
	}
	if ok && next == last {
		return admitted
	}
	if c.src == nil {
		c.src = map[string]string{}
	}
	c.src[id] = next
	if c.cfg.Parts {
		ch := c.pt.changes()
		ch.src = append(ch.src, id)
		c.pt.srcBytes += len(next) - len(last)
		if !ok {
			c.pt.srcBytes += 2 + len(id)
		}
	}
	return admitted
}

// isMove reports whether e is half of a change that moved its row to
// another join value (joins.CDCSpec.AppendRoute on a versioned side): the
// retraction at the old key, a delete that carries the new row too, or the
// insertion at the new key, the change's second event.
func isMove(e record.Event) bool {
	return (e.Op == record.OpDelete && e.After != nil) || (e.Op == record.OpCreate && e.Seq == 1)
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
