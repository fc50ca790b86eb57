package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/node/sendstate"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter/reason"
	"github.com/joinery/joinery/sources"
	"github.com/joinery/joinery/timers"
	"github.com/joinery/joinery/transform"
)

// eventTime holds the node's event-time state for an event-time join: the
// watermarks of every source partition this node reads, combined (minimum),
// and, when several nodes read the job's sources, the other nodes' published
// watermarks (wmshare.go). The watermark the node stamps and fires with is
// the global one: the minimum of its own and the live, active peers'.
//
// Each element is sent with the watermark as it was before the element, so
// lateness is decided the same way in every run of the same arrival order.
// A partition whose source ended moves to the end of time, as Flink does, so
// when every source of a finite job has ended all timers fire.
type eventTime struct {
	mu sync.Mutex
	wm *timers.Watermarks
	// g combines wm with the peers' watermarks (the global watermark, never
	// decreasing) and holds, per batch sent with elements and not yet
	// complete, the local watermark before it: the node publishes no more
	// than that, so no peer fires past an element still on its way (see
	// published).
	g *timers.Global[*batch]
	// peers is the other reading nodes' watermarks at the last refresh.
	peers peerView
	// nudge asks the publisher to publish soon; it must not block. Nil
	// without sharing.
	nudge func()
}

// newEventTime makes the event-time state of a job's watermark settings
// (job.EventTimeOf: one delay and idle timeout for the node).
func newEventTime(et job.EventTime) (*eventTime, error) {
	w, err := timers.NewWatermarks(timers.WatermarkConfig{MaxOutOfOrderness: et.MaxOutOfOrderness.Milliseconds(), IdleTimeout: et.IdleTimeout})
	if err != nil {
		return nil, err
	}
	// Every source holds the watermark back from the start (partition 0 of
	// each; a Kafka source replaces it by the partitions it is assigned, see
	// sourcePartitions), so a source that starts first cannot run the
	// watermark ahead of one that starts later.
	now := time.Now()
	for _, s := range et.Sources {
		w.AddPartition(record.Position{Source: s}.PartitionID(), now)
	}
	return &eventTime{wm: w, g: timers.NewGlobal[*batch](), peers: peerView{min: math.MaxInt64}}, nil
}

// observeLocked records the elements of batch b in arrival order, stamping
// each with the (global) watermark before it, and returns the watermark
// after them. The caller holds t.mu until it has sent the batch: another
// source reads the watermark only after the elements it covers are on their
// way, so a key never advances past an element still to arrive from another
// source. A batch with elements stays in flight, holding back what the node
// publishes to its peers, until release.
func (t *eventTime) observeLocked(b *batch, evs []*keycore.Event, now time.Time) int64 {
	if b != nil && len(evs) > 0 {
		t.g.Hold(b, t.wm.Current())
	}
	for _, e := range evs {
		e.Watermark = t.globalLocked()
		t.wm.Observe(record.Position{Source: e.Pos.Source, Partition: e.Pos.Partition}.PartitionID(), e.Ts, now)
	}
	t.wm.Advance(now)
	return t.globalLocked()
}

// release ends batch b's flight: it completed, or will never be. It is a
// no-op on a nil eventTime (a changelog job) and for a batch without elements.
func (t *eventTime) release(b *batch) {
	if t == nil {
		return
	}
	t.mu.Lock()
	ok := t.g.Release(b)
	nudge := t.nudge
	t.mu.Unlock()
	if ok && nudge != nil {
		nudge()
	}
}

// globalLocked combines the local watermark with the peers' and records it.
func (t *eventTime) globalLocked() int64 {
	return t.g.Combine(t.wm.Current(), t.wm.Holder() != "")
}

// published is what the node tells its peers: its local watermark, but no
// more than the local watermark before any batch still in flight (a peer
// firing at a higher one could overtake the batch's elements on their way
// to their keys), and whether it holds nothing back (every partition idle,
// nothing in flight).
func (t *eventTime) published(now time.Time) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wm.Advance(now)
	return t.g.Published(t.wm.Current(), t.wm.Holder() == "")
}

// setPeers installs the peers' watermarks read from the board.
func (t *eventTime) setPeers(p peerView) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.peers = p
	t.g.SetPeers(p.min, p.active)
	t.globalLocked()
}

// current is the global watermark, advanced to now.
func (t *eventTime) current(now time.Time) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wm.Advance(now)
	return t.globalLocked()
}

// finish moves partitions of an ended source to the end of time.
func (t *eventTime) finish(parts []string, now time.Time) {
	t.mu.Lock()
	for _, p := range parts {
		t.wm.ObserveWatermark(p, math.MaxInt64, now)
	}
	nudge := t.nudge
	t.mu.Unlock()
	if nudge != nil {
		nudge()
	}
}

// sourcePartitions returns the OnPartitions hook of a Kafka or Redis Streams
// source for an event-time job (nil for a changelog job); a Redis stream is
// partition 0, assigned to the source that holds the stream's lease. Each partition assigned to
// this node is declared in the watermarks, so it holds the watermark back
// from its assignment (start-up or rebalance) rather than from its first
// record, which could otherwise come after the other partitions ran the
// watermark past it (late). A revoked or lost partition keeps holding the
// watermark at its last value for a grace period (revokeGrace), then is
// removed: it no longer holds the watermark back, and its records still on
// their way do not bring it back. The grace covers a cooperative
// rebalance, where a partition is revoked from one node a round before it
// is assigned to another: in between, neither would hold the (shared)
// watermark back, and it could pass the partition's unread records. A
// partition assigned again within the grace simply stays. With an idle timeout, a declared partition
// that stays empty goes idle as any other. The first report replaces the
// placeholder partition 0 declared at start when 0 is not assigned here.
func (n *Node) sourcePartitions(source string) func(assigned, revoked []int32) {
	t := n.evt
	if t == nil {
		return nil
	}
	first := true
	id := func(p int32) string { return record.Position{Source: source, Partition: p}.PartitionID() }
	grace := n.revokeGrace()
	revoking := map[string]uint64{} // partition -> the revocation that will remove it
	var gen uint64
	return func(assigned, revoked []int32) {
		now := time.Now()
		t.mu.Lock()
		if first && !slices.Contains(assigned, 0) {
			t.wm.RemovePartition(id(0))
		}
		first = false
		for _, p := range revoked {
			part := id(p)
			gen++
			revoking[part] = gen
			mine := gen
			time.AfterFunc(grace, func() {
				t.mu.Lock()
				if revoking[part] == mine {
					delete(revoking, part)
					t.wm.RemovePartition(part)
					t.globalLocked()
				}
				nudge := t.nudge
				t.mu.Unlock()
				if nudge != nil {
					nudge()
				}
			})
		}
		for _, p := range assigned {
			delete(revoking, id(p))
			t.wm.AddPartition(id(p), now)
		}
		t.globalLocked()
		nudge := t.nudge
		t.mu.Unlock()
		if nudge != nil {
			nudge()
		}
	}
}

// revokeGrace is how long a revoked Kafka partition keeps holding the
// watermark (see sourcePartitions): twice the watermark board's TTL, the
// time within which a peer that took the partition has published its
// declaration of it.
func (n *Node) revokeGrace() time.Duration {
	if n.revokeGraceForTest > 0 {
		return n.revokeGraceForTest
	}
	ttl := n.spec.Cluster.Watermarks.TTL
	if ttl <= 0 {
		ttl = defaultShareTTL
	}
	return 2 * ttl
}

// exportLag sets joinery_watermark_lag_seconds: how far each partition's
// watermark is behind the wall clock (the usual freshness signal of a live
// stream; for a replay of old data it is large by nature), and
// joinery_watermark_seconds: the global watermark global (milliseconds),
// when it is a time (not before the first event, not past the end of input).
func (n *Node) exportLag(parts []timers.PartitionWatermark, global int64, now time.Time) {
	if global != math.MinInt64 && global != math.MaxInt64 {
		n.metrics.Watermark.WithLabelValues(n.spec.Name).Set(float64(global) / 1000)
	}
	for _, p := range parts {
		if p.Watermark == math.MinInt64 || p.Watermark == math.MaxInt64 {
			continue
		}
		src, _, _ := strings.Cut(p.Partition, "/")
		n.metrics.WatermarkLag.WithLabelValues(n.spec.Name, src, p.Partition).Set(float64(now.UnixMilli()-p.Watermark) / 1000)
	}
}

// view returns every partition's state followed by one row per peer node
// ("node:NAME"; idle when it is idle or no longer live), the global
// watermark and the partition or node holding it back ("" when none does),
// advanced to now.
func (t *eventTime) view(now time.Time) ([]timers.PartitionWatermark, int64, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wm.Advance(now)
	g := t.globalLocked()
	holder := t.wm.Holder()
	if t.peers.active && (holder == "" || t.peers.min < t.wm.Current()) {
		holder = t.peers.holder
	}
	return append(t.wm.Partitions(), t.peers.rows...), g, holder
}

// timedEvent decodes a plain JSON event of an event-time join into its key
// and the key core's event (its row decoded: encoded only for a key actor
// in another process, actors.EncodeRequest). A record it sets aside (a
// tombstone, bad input) gives ok false; the error is set only when a fail
// policy stops the source.
func (r *reader) timedEvent(b *batch, m sources.Message) (record.Key, keycore.Event, bool, error) {
	n := r.n
	if len(bytes.TrimSpace(m.Value)) == 0 {
		n.stats.Tombs.Add(1)
		return "", keycore.Event{}, false, nil
	}
	// The Debezium decoder's object walker: what encoding/json with
	// UseNumber gives (fuzzed against it in formats/debezium), refusing
	// what is not one JSON object or not UTF-8.
	row, err := debezium.DecodeObject(m.Value, m.Pos)
	if err != nil {
		why := reason.NotJSON
		var de *debezium.DecodeError
		if errors.As(err, &de) {
			why = reason.Reason(de.Reason)
		}
		return "", keycore.Event{}, false, r.reject(b, m, why, err)
	}
	side, ok := n.spec.SideOf(r.cfg.Side)
	if !ok {
		return "", keycore.Event{}, false, r.reject(b, m, reason.UnknownSide, fmt.Errorf("source %q has no side", r.cfg.Name))
	}
	ss := n.spec.SideSpec(side)
	kv, present := row[ss.Key]
	if ke := n.keyExprs[side]; ke != nil {
		v, err := ke.Eval(transform.Env(row))
		if err != nil {
			return "", keycore.Event{}, false, r.reject(b, m, reason.Filter, fmt.Errorf("key_expr: %w", err))
		}
		kv, present = v, true
	}
	var key record.Key
	switch {
	case (!present || kv == nil) && side == record.Left && n.spec.PadsNullKeys():
		// KIP-962: a left KStream-KTable join emits a null-key record
		// padded; at joins.NullKey no version is ever stored.
		key = joins.NullKey
	case !present || kv == nil:
		return "", keycore.Event{}, false, r.reject(b, m, reason.MissingKey, fmt.Errorf("field %q missing or null", ss.Key))
	default:
		var ok bool
		if key, ok = record.KeyOf(kv); !ok {
			return "", keycore.Event{}, false, r.reject(b, m, reason.WrongType, fmt.Errorf("field %q is not a scalar", ss.Key))
		}
		if key == joins.NullKey {
			return "", keycore.Event{}, false, r.reject(b, m, reason.WrongType, fmt.Errorf("field %q: %q is reserved (the key of null-key probes)", ss.Key, key))
		}
	}
	ts, why, err := eventTs(row[ss.Ts])
	if err != nil {
		return "", keycore.Event{}, false, r.reject(b, m, why, fmt.Errorf("field %q: %w", ss.Ts, err))
	}
	if r.filter != nil {
		keep, err := r.filter.Keep(row)
		if err != nil {
			return "", keycore.Event{}, false, r.reject(b, m, reason.Filter, err)
		}
		if !keep {
			n.stats.Filtered.Add(1)
			return "", keycore.Event{}, false, nil
		}
	}
	// Without a kind field an input is an insert (record.Insert, the zero
	// Kind).
	var kind record.Kind
	if ss.Kind != "" && row[ss.Kind] != nil {
		ks, _ := row[ss.Kind].(string)
		k, ok := record.ParseKind(ks)
		if !ok {
			return "", keycore.Event{}, false, r.reject(b, m, reason.WrongType, fmt.Errorf("field %q: not a row kind (+I, -U, +U, -D): %v", ss.Kind, row[ss.Kind]))
		}
		kind = k
	}
	// The state keeps only the columns the join reads (projection
	// pushdown): key, time and kind are read above, the filter has run.
	n.kept.projectRow(side, row)
	// The row as decoded (json.Number numbers, as actors.DecodeRow makes
	// them): a row decoded from JSON always encodes again, for a key actor
	// in another process (actors.EncodeRequest).
	return key, keycore.Event{Side: side, After: row, Pos: m.Pos, Ts: ts, Kind: kind}, true, nil
}

// eventTs reads an event time: epoch milliseconds or an RFC 3339 string. On
// failure it also returns the reject reason.
func eventTs(v any) (int64, reason.Reason, error) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			return 0, reason.WrongType, fmt.Errorf("%s is not an integer of ms", x)
		}
		return n, "", nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return 0, reason.BadTs, err
		}
		return t.UnixMilli(), "", nil
	case nil:
		return 0, reason.MissingTs, errors.New("missing or null")
	}
	return 0, reason.WrongType, fmt.Errorf("not a number of ms or an RFC 3339 time: %v", v)
}

// fireLimit bounds the due keys woken per batch.
const fireLimit = 10000

// addFires marks every Apply of the batch, and the keys the store's timer
// index says are due, to advance to the current watermark after their events.
func (r *reader) addFires(ctx context.Context, applies *sendstate.Batch, wm int64) error {
	for _, k := range applies.Keys() {
		a := applies.Get(k)
		a.Fire, a.Watermark = true, wm
	}
	if wm <= r.lastFire {
		return nil
	}
	due, err := r.n.store.DueTimers(ctx, r.n.spec.Name, min(wm, persistence.MaxTimer), fireLimit)
	if err != nil {
		return fmt.Errorf("due timers: %w", err)
	}
	for _, d := range due {
		if applies.Has(d.Key) {
			continue
		}
		a := applies.Apply(d.Key)
		a.Fire, a.Watermark = true, wm
	}
	if len(due) < fireLimit {
		r.lastFire = wm
	}
	return nil
}

// flushTimers runs once a finite source ended: it waits for its batches to
// complete and, while the watermark has reached the end of time, wakes the
// keys with due timers until none is left.
func (r *reader) flushTimers(ctx context.Context, queue chan<- *batch) error {
	for range 1000 {
		r.wg.Wait()
		// Publish this node's end of input and read the peers' before
		// deciding: of two nodes ending together, at least one sees both.
		r.n.syncWatermarks(ctx)
		wm := r.n.evt.current(time.Now())
		if wm != math.MaxInt64 {
			return nil // another source or node still runs; it fires what is due
		}
		r.lastFire = math.MinInt64 // ask the index again: earlier fires may have set new timers
		b, err := r.dispatch(ctx, nil)
		if err != nil {
			return err
		}
		if len(b.calls) == 0 {
			return nil
		}
		if err := r.enqueue(ctx, queue, b); err != nil {
			return err
		}
	}
	return errors.New("timers keep firing after the end of input")
}
