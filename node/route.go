package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/joinery/joinery/actors"
	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/internal/slab"
	"github.com/joinery/joinery/internal/utf8json"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/node/sendstate"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter/reason"
	"github.com/joinery/joinery/sources"
)

// dispatch decodes and routes msgs and sends one request per key (the
// remote ones grouped into one message per owner node: sendCalls).
func (r *reader) dispatch(ctx context.Context, msgs []sources.Message) (*batch, error) {
	n := r.n
	b := &batch{seq: r.sender.NextSeq(), last: map[string]record.Position{}, records: len(msgs), fireWm: math.MinInt64}
	// The requests, one per key in the order of the keys' first records:
	// sized for a key per record, the usual changelog batch, not grown.
	var applies sendstate.Batch
	applies.Hint(len(msgs))
	// arrivals: the event-time inputs in arrival order, as (request,
	// event) places in applies (a request's events may still move as it
	// grows; observeLocked stamps them once all are in).
	var arrivals []arrival
	// Each key's first event slice from chunks made for the batch (they
	// live as long as its requests): the events travel as they are, rows
	// decoded, to a local key actor (actors.LocalApply); only one in
	// another process gets them encoded (sendCalls).
	var firstEvs slab.Slab[keycore.Event]
	firstEvs.Hint(len(msgs))
	var routed []record.Event // a record's events, the buffer reused record to record
	n.stats.addIn(r.cfg.Name, len(msgs))
	events := int64(0) // routed events, counted once for the batch
	defer func() { n.stats.Events.Add(events) }()
	var part, partSrc string // the partition id of the last record's partition
	var partN int32
	for _, m := range msgs {
		if part == "" || m.Pos.Source != partSrc || m.Pos.Partition != partN {
			// One id per run of records of one partition, not one per record.
			part, partSrc, partN = m.Pos.PartitionID(), m.Pos.Source, m.Pos.Partition
		}
		if p, ok := b.last[part]; !ok || m.Pos.Offset > p.Offset {
			b.last[part] = m.Pos
		}
		if m.Reject != nil { // the source refused it (sources.Message.Reject)
			if err := r.bad(b, m, r.cfg.BadInputPolicy(), m.Reject.Reason, m.Reject.Err); err != nil {
				return nil, err
			}
			continue
		}
		if len(m.Value) > r.cfg.RecordLimit() {
			err := fmt.Errorf("record of %d bytes is over max_record_bytes %d", len(m.Value), r.cfg.RecordLimit())
			if err := r.bad(b, m, r.cfg.BadInputPolicy(), reason.TooLarge, err); err != nil {
				return nil, err
			}
			continue
		}
		if n.evt != nil {
			r.parts[part] = struct{}{}
			k, e, ok, err := r.timedEvent(b, m)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			a, i := applies.ApplyAt(k)
			arrivals = append(arrivals, arrival{req: i, ev: len(a.Events)})
			a.Events = firstEvs.Append(a.Events, e)
			events++
			continue
		}
		evs, srcPos, err := r.cdcEvents(b, m, routed[:0])
		if err != nil {
			return nil, err
		}
		if evs != nil {
			routed = evs
		}
		if r.role == readRaw {
			r.forward(b, m, evs) // to the key groups' repartition streams
			continue
		}
		for _, e := range evs {
			if r.role == readRepartitioned && !r.inGroup(e.Key, m.Pos) {
				continue // the part of a moved row that its other key group applies
			}
			a := applies.Apply(e.Key)
			a.Events = firstEvs.Append(a.Events, actors.KeyEvent(e, srcPos))
			events++
		}
	}
	now := time.Now()
	reqs := applies.Requests()
	n.hot.AddBatch(applies.Keys(), func(i int) int64 { return int64(len(reqs[i].Events)) }, now)
	if n.evt != nil {
		n.evt.mu.Lock()
		defer n.evt.mu.Unlock() // until the batch is sent: see observeLocked
		evs := make([]*keycore.Event, len(arrivals))
		for j, at := range arrivals {
			evs[j] = &reqs[at.req].Events[at.ev]
		}
		wm := n.evt.observeLocked(b, evs, now)
		if len(arrivals) > 0 {
			n.exportLag(n.evt.wm.Partitions(), wm, now)
		}
		if err := r.addFires(ctx, &applies, wm); err != nil {
			return nil, err
		}
		b.fireWm = wm
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n.inflight.mu.Lock()
	defer n.inflight.mu.Unlock() // until sent: see sendstate.Keys
	sent := r.sender.Send(&n.inflight.keys, b.seq, &applies, n.senderID)
	b.calls = make([]call, 0, len(sent))
	for _, a := range sent { // in the order of applies (Send)
		b.calls = append(b.calls, call{key: a.Key, req: a})
	}
	// One message per owner node. A key that cannot be resolved now
	// (membership changing) is retried by the collector, in order.
	r.sendCalls(b.calls)
	return b, nil
}

// arrival is an event-time input's place in a batch: its request's in
// the batch's order (sendstate.Batch.ApplyAt) and its own among the
// request's events.
type arrival struct{ req, ev int }

// cdcEvents decodes a Debezium record and routes it to its join keys. It
// returns no events for a record it counted and set aside (tombstone, bad
// input, truncate) and an error only when a fail policy stops the source.
// srcPos is the record's source position when duplicates are dropped.
// The events of a two-way join are appended to dst (they are read before
// the next record's overwrite them).
func (r *reader) cdcEvents(b *batch, m sources.Message, dst []record.Event) (evs []record.Event, srcPos string, err error) {
	n := r.n
	var env debezium.Envelope
	if r.avro != nil {
		env, err = r.avro.DecodeEnvelope(context.Background(), m.Value, m.Pos)
		var re *debeziumavro.RegistryError
		if errors.As(err, &re) { // resolveSchemas fetched every id; not the record's fault
			return nil, "", fmt.Errorf("source %s: %w", r.cfg.Name, err)
		}
	} else if r.cfg.Format == job.FormatDebeziumJSONSchema {
		env, err = debeziumavro.DecodeJSONSchema(m.Value, m.Pos)
	} else if r.cfg.Format == job.FormatChangelog {
		env.Change, err = changelog.DecodeChange(m.Value, m.Pos) // another job's output (a chain)
	} else {
		env, err = debezium.DecodeEnvelopeKeep(m.Value, m.Pos, r.keep)
	}
	switch {
	case errors.Is(err, debezium.ErrTombstone):
		n.stats.Tombs.Add(1)
		return nil, "", nil
	case errors.Is(err, debezium.ErrTruncate):
		n.stats.Truncates.Add(1)
		return nil, "", r.bad(b, m, r.cfg.TruncatePolicy(), reason.Truncate,
			fmt.Errorf("truncate of table %q: the join state keeps its rows; re-snapshot the table to rebuild it", env.Table))
	case err != nil:
		var de *debezium.DecodeError
		var ue *utf8json.Error
		why := reason.Decode
		switch {
		case errors.As(err, &de):
			why = reason.Reason(de.Reason)
		case errors.As(err, &ue): // formats/changelog
			why = reason.BadUTF8
		}
		return nil, "", r.reject(b, m, why, err)
	}
	side, err := r.side(env.Table)
	if err != nil {
		return nil, "", r.reject(b, m, reason.UnknownTable, err)
	}
	if r.filter != nil {
		c, keep, err := r.filter.FilterChange(env.Change, map[string]any{"_table": env.Table})
		if err != nil {
			return nil, "", r.reject(b, m, reason.Filter, err)
		}
		if !keep {
			n.stats.Filtered.Add(1)
			return nil, "", nil
		}
		env.Change = c
	}
	n.kept.project(side, &env.Change)
	if n.multi != nil {
		evs, err = n.multi.Route(int(side), env.Change)
	} else {
		evs, err = n.cdc.AppendRoute(dst, side, env.Change)
	}
	if errors.Is(err, joins.ErrUnmatched) {
		n.stats.Unmatched.Add(1) // a null join value the join does not keep: not bad input
		return nil, "", nil
	}
	if err != nil {
		why := reason.Route
		var re *joins.RouteError
		if errors.As(err, &re) {
			why = re.Reason
		}
		return nil, "", r.reject(b, m, why, err)
	}
	if r.cfg.DedupOn() {
		srcPos = env.SourcePos
	}
	return evs, srcPos, nil
}

// side finds the join side of a record: the source's fixed side, or the side
// bound to its Debezium source.table.
func (r *reader) side(table string) (record.Side, error) {
	if r.cfg.Side != "" {
		s, _ := r.n.spec.SideOf(r.cfg.Side)
		return s, nil
	}
	binding, ok := r.cfg.Tables[table]
	if !ok {
		return 0, fmt.Errorf("source.table %q is not bound in sources[].tables", table)
	}
	s, _ := r.n.spec.SideOf(binding)
	return s, nil
}

// reject handles bad input by the source's on_bad_input policy (see bad).
func (r *reader) reject(b *batch, m sources.Message, why reason.Reason, err error) error {
	return r.bad(b, m, r.cfg.BadInputPolicy(), why, err)
}
