package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/internal/backoff"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node/sendstate"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter"
	"github.com/joinery/joinery/sources"
	"github.com/joinery/joinery/transform"
)

// batch is one dispatched read: the key requests it sent and the offsets it covers.
type batch struct {
	fireWm  int64 // event-time joins: the watermark the batch's keys advance to
	seq     uint64
	last    map[string]record.Position // partition id -> highest position in the batch
	calls   []call
	forward []sources.Forward // readRaw: the records to write to the repartition streams
	records int
	dead    []deadletter.Record // dead letters, written before the offsets are committed
	epoch   uint64              // a transactional source's Epoch when the batch was read (exactlyonce.go)
}

type call struct {
	key     record.Key
	req     *sendstate.Request // read-only once sent: a resend is a copy (sendstate.Resend)
	fut     answer             // nil when sending failed (sendErr); set by sendCalls
	sendErr error
}

// reader is the read state of one source (or of one half of a repartitioned
// source): its read loop (read), router (dispatch) and collector (collect).
type reader struct {
	n    *Node
	cfg  job.Source
	src  sources.Source
	dl   deadletter.Writer // nil without a dead-letter output
	logs logLimiter
	// filter is the source's filter expression (sources[].filter), or nil.
	filter *transform.Filter
	// keep is the decoder's column filter (keptColumns.decoderKeep); nil
	// decodes every column.
	keep *debezium.Keep
	// avro decodes a debezium-avro source's records; nil for Debezium JSON.
	avro *debeziumavro.Decoder
	// role: a source read as it is, or one half of a repartitioned source
	// (repartition.go); fwd writes the repartition streams (readRaw).
	role sourceRole
	fwd  sources.Repartitioner
	// groupOf is the key group of a key of a source partitioned or
	// repartitioned by the join key (keyGroupOf); nil otherwise.
	groupOf func(record.Key) int

	// txnState: an exactly-once job's transactional source (exactlyonce.go).
	txnState

	// sender: the batches' sequence numbers and the committed offsets the
	// requests carry (node/sendstate); its committed offsets under mu.
	mu     sync.Mutex
	sender *sendstate.Reader

	// Transient read errors (sources.Transient): since when, the next wait, how many.
	transientSince   time.Time
	transientBackoff backoff.Backoff
	transientRetries int

	// Event-time joins.
	lastFire int64               // watermark up to which due timers were asked for
	parts    map[string]struct{} // partitions this source delivered
	wg       sync.WaitGroup      // batches queued and not completed

	// Batches queued and not completed (pending), and a poke after each
	// group the collector completes (freed): see waitBusy.
	pending atomic.Int64
	freed   chan struct{}
}

// busyDepth is how many batches may be in flight before a reader whose
// last read was not full waits for one to complete before it reads again.
const busyDepth = 2

// waitBusy holds the next read while busyDepth batches are in flight and
// the last read was short (under half a batch: it took what the source had): what arrives
// meanwhile makes the next batch, so batches grow with the load and the
// per-batch costs (a key's state write, the commits) are shared, instead
// of a stream of one-record batches keeping the node at its CPU limit. A
// full read (a backlog) reads on at once, and an idle node (nothing in
// flight) never waits.
func (r *reader) waitBusy(ctx context.Context, lastFull bool) error {
	for !lastFull && r.freed != nil && r.pending.Load() >= busyDepth {
		select {
		case <-r.freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (r *reader) read(ctx context.Context, queue chan<- *batch) error {
	max := readBatch
	var pace *time.Ticker
	if r.cfg.Rate > 0 {
		max = 1
		pace = time.NewTicker(time.Duration(float64(time.Second) / r.cfg.Rate))
		defer pace.Stop()
	}
	timed := r.n.evt != nil
	lastFull := false
	for {
		if pace != nil {
			select {
			case <-pace.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := r.n.checkStateBudget(); err != nil {
			return err // statebudget.go: the embedded store is full
		}
		if err := r.waitBusy(ctx, lastFull); err != nil {
			return err
		}
		msgs, err := r.src.Read(ctx, max)
		// Half a batch or more: a backlog (a sharded source's read may stop
		// short of max at a shard's batch that does not fit).
		lastFull = len(msgs) >= max/2
		if sources.IsTransient(err) {
			// The source's system is unreachable or restarting (Redis down):
			// stall, retrying with backoff, as state writes do; give up only
			// after retryFor.
			if err = r.waitTransient(ctx, err); err == nil {
				continue
			}
		} else if err == nil || len(msgs) > 0 {
			r.transientSince, r.transientRetries = time.Time{}, 0
		}
		if r.avro != nil && len(msgs) > 0 {
			if rerr := r.resolveSchemas(ctx, msgs); rerr != nil {
				return rerr
			}
		}
		if len(msgs) > 0 || (timed && err == nil) {
			// An empty read of an event-time job still advances idle
			// partitions' watermark and wakes due timers.
			b, derr := r.dispatch(ctx, msgs)
			if derr != nil {
				return derr
			}
			if len(msgs) > 0 {
				b.epoch = msgs[0].Epoch // one Read: one epoch
			}
			if len(msgs) > 0 || len(b.calls) > 0 {
				if err := r.enqueue(ctx, queue, b); err != nil {
					return err
				}
			}
		}
		if timed && errors.Is(err, io.EOF) {
			parts := make([]string, 0, len(r.parts))
			for p := range r.parts {
				parts = append(parts, p)
			}
			if len(parts) == 0 {
				parts = append(parts, record.Position{Source: r.cfg.Name}.PartitionID())
			}
			r.n.evt.finish(parts, time.Now())
			if ferr := r.flushTimers(ctx, queue); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, sources.ErrLostRange) {
			r.n.lostRange(r.cfg.Name, err) // rollback.go
		}
		if err != nil {
			return err
		}
	}
}

// enqueue hands a sent batch to the collector, or returns ctx.Err() when
// reading stops first (the batch's flight then ends: eventTime.release).
func (r *reader) enqueue(ctx context.Context, queue chan<- *batch, b *batch) error {
	r.wg.Add(1)
	r.pending.Add(1)
	select {
	case queue <- b:
		return nil
	case <-ctx.Done():
		r.n.evt.release(b)
		r.pending.Add(-1)
		r.wg.Done()
		return ctx.Err()
	}
}

// waitTransient waits before the next Read after a transient error: nil
// to read again, or the error once the source has failed for retryFor (or
// ctx.Err()). It logs the first failure and every tenth retry.
func (r *reader) waitTransient(ctx context.Context, err error) error {
	now := time.Now()
	if r.transientSince.IsZero() {
		r.transientSince, r.transientBackoff = now, retryBackoff()
	}
	if now.Sub(r.transientSince) > retryFor {
		return fmt.Errorf("source unavailable for %v: %w", retryFor, err)
	}
	r.n.stats.Retries.Add(1)
	if r.transientRetries++; r.transientRetries%10 == 1 {
		r.n.log.Warn("source read failed; retrying", "source", r.cfg.Name, "backoff", r.transientBackoff.Delay(), "err", err)
	}
	return r.transientBackoff.Wait(ctx)
}

// inflightKeys is the node's unanswered key requests, of every reader
// (node/sendstate.Keys), under mu: a request's Prev is computed and the
// request sent under it, so no other reader sends between (dispatch).
// ids names the readers in it.
type inflightKeys struct {
	mu   sync.Mutex
	keys sendstate.Keys
	ids  atomic.Int64
}
