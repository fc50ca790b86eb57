package keycore

import (
	"errors"
	"math"
	"slices"

	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// Config is what every key of one job shares.
type Config struct {
	Machine MachineSpec
	// NoSeq leaves outputs' Seq at 0 (replay's outputs carry none).
	NoSeq bool
	// Parts: Writes carry the state as a base and named parts, and after
	// the first only what changed (incremental writes: see parts.go). The
	// driver's store must apply persistence.Snapshot.Parts and Delta.
	Parts bool
	// Coalesce: a Step while a Write is pending encodes no Write of its
	// own; its Ready says Wait, and once every pending Write is Durable,
	// Flush gives one Write of the state as it is, covering every Step that
	// waited (group commit: a key that many senders reach at once is
	// encoded and written once per store round trip, not once per request).
	Coalesce bool
}

// ErrGap is Ready.Err of a request refused for a gap.
var ErrGap = errors.New("gap: an earlier request for this key was not applied")

// Core is the per-key exactly-once protocol as a pure value: it applies
// requests to one key's join machine, skips inputs it applied (its state
// holds the highest applied offset per source partition), refuses requests
// that build on one it never applied, drops Debezium replays, keeps the
// outbox of outputs not yet committed and re-sends them, stamps outputs
// with the key's sequence, and says what to persist. It does no I/O, reads
// no clock (Step takes the time), starts no goroutine; it is not safe for
// concurrent use.
//
// Lifecycle: New, then Restore (the durable state) or Init (none), then Step
// per request. When a Ready carries a Write, the driver persists it and
// calls Durable; an answer is given only once what it covers is durable.
type Core struct {
	cfg     *Config
	key     record.Key
	m       *Machine
	offsets offsets           // partition id -> highest applied offset
	src     map[string]string // changelog join: "side/pk" -> last applied source position
	outbox  []outboxEntry
	seq     uint64 // the Seq of the key's last output
	epoch   int64
	pending int  // writes handed out and not yet durable
	loaded  bool // (the flags together: a Core is one per live key)
	fresh   bool // loaded, and no request stepped since
	dirty   bool // Coalesce: Steps wait for the next Flush
	pt      partsState
}

// New returns key's core, not loaded.
func New(cfg *Config, key record.Key) *Core {
	c := &Core{cfg: cfg, key: key}
	c.Reset()
	return c
}

// Reset empties the core and forgets its epoch: the driver takes the key
// again (a new owner epoch) and restores its durable state before the next
// Step. Writes already pending stay counted (Pending).
func (c *Core) Reset() {
	c.m = NewMachine(c.cfg.Machine)
	c.offsets = nil
	c.outbox, c.src, c.seq = nil, nil, 0
	c.loaded, c.fresh, c.epoch, c.dirty = false, false, 0, false
	c.pt = partsState{}
}

// Key is the core's join key.
func (c *Core) Key() record.Key { return c.key }

// Loaded reports whether Restore or Init ran since New or Reset.
func (c *Core) Loaded() bool { return c.loaded }

// Epoch is the owner epoch the driver took the key with (0: none yet).
func (c *Core) Epoch() int64 { return c.epoch }

// SetEpoch records the owner epoch the driver took the key with.
func (c *Core) SetEpoch(e int64) { c.epoch = e }

// Init marks the core loaded with no durable state.
func (c *Core) Init() { c.loaded, c.fresh = true, true }

// Restore loads durable state: the applied offsets and the state bytes of
// a Write (offsets in order, as a store's Load returns them; the core keeps
// a copy). On error the core stays not loaded.
func (c *Core) Restore(offsets record.Offsets, state []byte) error {
	if err := offsets.Check(); err != nil {
		return err
	}
	var st keyState
	var rows int
	var err error
	packed := stateparts.IsPacked(state)
	if packed {
		st, rows, err = decodeParts(state, schemasOf(c.cfg.Machine.CDC))
	} else {
		st, err = decodeState(state, schemasOf(c.cfg.Machine.CDC))
	}
	if err != nil {
		return err
	}
	if len(st.Join) > 0 {
		if err := c.m.Restore(st.Join); err != nil {
			return err
		}
	}
	c.m.restoreTimers(st.Timers, st.Wm)
	c.outbox, c.src, c.seq = st.Outbox, st.Src, st.Seq
	// A state stored with its rows as parts under a join that keeps them
	// whole now (or the other way round: a job's max_ts changed) is
	// written whole once.
	split := c.rowParts()
	c.pt = partsState{stored: packed, all: (rows > 0 && !split) || (rows == 0 && split && len(st.Join) > 0)}
	if split && c.m.cdc != nil {
		// The left row's position went with its part; one still in an s:
		// part is of the layout before that, rewritten folded.
		if l := c.m.cdc.Left(); l != nil {
			if k, ok := rowKey(l, c.cfg.Machine.pkColumn(record.Left)); ok {
				id := c.cfg.Machine.sideName(record.Left) + "/" + k
				if st.leftPos != "" {
					if c.src == nil {
						c.src = map[string]string{}
					}
					c.src[id] = st.leftPos
				} else if slices.Contains(st.srcParts, id) {
					c.pt.all = true
				}
			}
		}
		sides := c.keyedSides()
		for _, id := range st.srcParts {
			if _, _, ok := sides.of(id); ok {
				st.unfolded = true // a position its row's part now holds
			}
		}
		if st.unfolded {
			c.pt.all = true
		}
	}
	rest := len(state)
	for i := range c.outbox {
		if !packed {
			c.outbox[i].id = uint64(i)
		}
		c.pt.next = max(c.pt.next, c.outbox[i].id+1)
		c.pt.outboxBytes += 18 + len(c.outbox[i].enc)
	}
	stored := 0 // the positions' stored bytes: compact, most folded into rows
	for id, pos := range c.src {
		c.pt.srcBytes += 2 + len(id) + len(pos)
		stored += 8
	}
	// What the outbox and positions leave of the state is about the rows
	// (and a small base).
	rest = max(0, rest-c.pt.outboxBytes-stored)
	c.pt.rowBytes, c.pt.rowAvg = rest, rest/max(1, rows)
	c.pt.written = c.pt.next
	c.offsets = slices.Clone(offsets)
	c.Init()
	return nil
}

// Pending is the number of Writes handed out and not yet reported Durable.
func (c *Core) Pending() int { return c.pending }

// Dirty reports whether Steps wait for a Flush (Config.Coalesce): the
// driver calls Flush once Pending is 0.
func (c *Core) Dirty() bool { return c.dirty }

// Flush returns the Write that the Steps waiting since the last Write
// (Ready.Wait) need, or nil when none waits. Call it once Pending is 0;
// the Write counts as pending until Durable. An error (state that cannot
// be encoded) leaves the core ahead of the store: Reset it or stop.
func (c *Core) Flush() (*Write, error) {
	if !c.dirty {
		return nil, nil
	}
	c.dirty = false
	return c.write()
}

// Durable reports one Write durable, or failed: after a failure the core is
// ahead of the store and the driver must Reset it (or stop) before the next
// Step.
func (c *Core) Durable() { c.pending-- }

// Offload drops from memory the JSON of the outbox entries that the
// store holds durably, once every write handed out is durable (the driver
// calls it after a successful write). An outbox entry of a key touched
// once lives as long as the key (until the sender commits past it and
// tells the key in a later request), and its JSON was ≈ 10% of a live
// key's heap (docs/performance/2026-12-05-bench.md, "Bytes per live key"). Only a state
// written in parts (Config.Parts) of a changelog join offloads: its
// Writes after the first carry only new entries. An entry offloaded is
// needed again only when its input is re-sent before it is committed (a
// sender restarted): Step then answers Reload, and the driver reloads
// the key's durable state, entries included, as after a gap.
func (c *Core) Offload() {
	if c.pending > 0 || c.dirty || !c.cfg.Parts || c.m.EventTime() || !c.pt.stored || c.pt.all {
		return
	}
	for i := range c.outbox {
		e := &c.outbox[i]
		if e.id < c.pt.written && e.enc != nil {
			e.offloaded, e.enc, e.Outputs = len(e.enc), nil, nil
		}
	}
}

// needsOffloaded reports whether req re-sends an input whose outputs are
// kept in an offloaded outbox entry not committed by req.
func (c *Core) needsOffloaded(req *Request) bool {
	for i := range req.Events {
		part := req.Events[i].Pos.PartitionID()
		off := req.Events[i].Pos.Offset
		if last, ok := c.offsets.Get(part); !ok || off > last {
			continue
		}
		if n, ok := req.Committed[part]; ok && off <= n {
			continue
		}
		for j := range c.outbox {
			if e := &c.outbox[j]; e.Part == part && e.Offset == off && e.offloaded > 0 {
				return true
			}
		}
	}
	return false
}

// Machine is the key's join machine; read-only for callers.
func (c *Core) Machine() *Machine { return c.m }

// Offsets are the applied offsets (a copy, in order).
func (c *Core) Offsets() record.Offsets { return slices.Clone(c.offsets) }

// OutboxLen is the number of inputs whose outputs are kept for re-sending.
func (c *Core) OutboxLen() int { return len(c.outbox) }

func (c *Core) gap(prev map[string]int64) bool {
	for part, off := range prev {
		if applied, _ := c.offsets.Get(part); applied < off {
			return true
		}
	}
	return false
}

// Step applies req at time now (Unix ms; it floors output sequences) and
// says what to persist, emit and answer. The Ready's slices are new for
// every Step; their rows are shared with the state (read-only).
func (c *Core) Step(req *Request, now int64) Ready {
	fresh := c.fresh
	c.fresh = false
	if c.gap(req.Prev) {
		if c.pending == 0 && !c.dirty && !fresh {
			return Ready{Reload: true}
		}
		return Ready{Gap: true, Err: ErrGap}
	}
	if c.needsOffloaded(req) {
		if c.pending == 0 && !c.dirty {
			return Ready{Reload: true}
		}
		return Ready{Gap: true, Err: ErrGap}
	}
	changed := c.prune(req.Committed)
	var r Ready
	var outs []record.Output
	var late []joins.Late
	for i := range req.Events {
		e := &req.Events[i]
		part := partitionID(c.offsets, e.Pos)
		// One input reaches one key at most once (a moved row goes to two
		// different keys), so "offset <= applied" means "already applied":
		// skip it, and send its outputs again if they may not have reached
		// the sinks yet.
		if last, ok := c.offsets.Get(part); ok && e.Pos.Offset <= last {
			r.Skipped++
			outs = append(outs, c.kept(part, e.Pos.Offset)...)
			continue
		}
		n := len(outs)
		if c.m.EventTime() {
			el := joins.Element{Side: e.Side, Ts: e.Ts, Row: e.After, Pos: e.Pos, Kind: e.Kind}
			outs, late = c.m.OnElement(el, e.Watermark, outs, late)
		} else {
			ev := record.Event{Key: c.key, Side: e.Side, Op: e.Op, Before: e.Before, After: e.After, Pos: e.Pos, Seq: e.Seq, Ts: e.Ts}
			switch c.admit(ev, e.SrcPos) {
			case duplicate:
				r.Duplicates++
			case stale:
				el := joins.Element{Side: e.Side, Ts: e.Ts, Row: ev.After, Pos: e.Pos}
				if ev.Op == record.OpDelete {
					el.Row, el.Kind = ev.Before, record.Delete
				}
				late = append(late, joins.Late{Element: el, Reason: joins.LateOutOfOrder})
			default:
				c.touch(&ev)
				outs = c.m.OnEvent(ev, outs)
			}
		}
		if len(outs) > n {
			c.stamp(outs[n:], now)
			c.outbox = append(c.outbox, outboxEntry{Part: part, Offset: e.Pos.Offset, Outputs: outs[n:len(outs):len(outs)], id: c.pt.next})
			c.pt.next++
		}
		c.offsets.Set(part, e.Pos.Offset)
		changed = true
	}
	if req.Fire && c.m.EventTime() {
		// Outputs of earlier firings that are kept (not yet committed) and
		// that this sender's run (Request.Sender) has not been sent: a
		// restarted sender may have lost them. A resent request gets them all again.
		outs = c.resendFired(min(req.Watermark, c.m.Watermark()), req.Sender, req.Resend, outs)
		limit := int64(math.MaxInt64)
		if req.Limited {
			limit = req.FireLimit
		}
		if req.Watermark > c.m.Watermark() || (c.m.firing && req.Watermark == c.m.Watermark()) {
			n := len(outs)
			outs, late = c.m.Advance(req.Watermark, limit, outs, late)
			if len(outs) > n {
				c.stamp(outs[n:], now)
				c.outbox = append(c.outbox, outboxEntry{Part: FirePart, Offset: req.Watermark, Outputs: outs[n:len(outs):len(outs)], SentTo: req.Sender, id: c.pt.next})
				c.pt.next++
			}
			changed = true
		}
	}
	r.Outputs, r.Late = outs, late
	if !changed && c.pending == 0 {
		// Nothing new, and everything applied so far is durable: a re-sent
		// request's skipped events are covered by the writes already done.
		// With writes still pending, the answer waits for a write of the
		// state as it is (it carries the skipped events, and is refused if
		// a newer activation took the key): an answer must never come
		// before what it covers is durable.
		return r
	}
	if c.cfg.Coalesce && (c.pending > 0 || c.dirty) {
		c.dirty, r.Wait = true, true
		return r
	}
	w, err := c.write()
	if err != nil {
		return Ready{Err: err}
	}
	r.Write = w
	return r
}

// write makes the Write of the key's state as it is and counts it pending.
func (c *Core) write() (*Write, error) {
	wb := &writeBuf{}
	w := &wb.w
	// The offsets are copied into the Write's own allocation (a key hears
	// from one partition or two): Set changes the core's in place.
	w.Offsets = append(wb.offsets[:0:len(wb.offsets)], c.offsets...)
	// A key whose join state emptied still writes a (small) state, so its
	// applied offsets survive passivation and failover: a request's Prev
	// names offsets that an emptied key must still know it applied, or it
	// would refuse the request as a gap for ever after reloading.
	switch {
	case c.m.Empty() && len(c.outbox) == 0 && c.m.timers.Len() == 0 && len(c.src) == 0 && len(c.offsets) == 0:
		// Deleted: a Write after it starts the stored state again.
		c.pt = partsState{next: c.pt.next, written: c.pt.next}
	case c.cfg.Parts:
		if err := c.writeParts(w, wb.parts[:0]); err != nil {
			return nil, err
		}
	default:
		b, err := c.Encode()
		if err != nil {
			return nil, err
		}
		w.State, w.Size = b, len(b)
	}
	w.Cached = c.m.CachedJSON() // after the encoding, which fills the caches
	w.NextTimer, w.HasTimer = c.m.NextTimer()
	c.pending++
	return w, nil
}

// writeBuf is a Write with room for a usual delta's parts (a row, the
// new outbox entry, a pruned one) and a usual key's offsets, in one
// allocation.
type writeBuf struct {
	w       Write
	parts   [4]stateparts.Part
	offsets [2]record.PartitionOffset
}

// Encode returns what a Write of the key's state now would hold: its
// applied offsets are Offsets.
func (c *Core) Encode() ([]byte, error) {
	st := keyState{Outbox: c.outbox, Timers: c.m.Timers(), Src: c.src, Seq: c.seq}
	if !c.m.Empty() {
		st.Join = c.m.Snapshot()
	}
	if c.m.EventTime() {
		wm := c.m.Watermark()
		st.Wm = &wm
	}
	return encodeState(st)
}

// Idle reports whether the key holds nothing a driver must keep: no join
// state, no timer, no kept output, nothing pending. (Its applied offsets
// and Debezium positions are forgotten with it.)
func (c *Core) Idle() bool {
	return c.m.Idle() && len(c.outbox) == 0 && c.pending == 0 && !c.dirty
}
