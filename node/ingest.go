package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/joinery/joinery/actors"
	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connectors/all"
	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/internal/backoff"
	"github.com/joinery/joinery/internal/utf8json"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter"
	"github.com/joinery/joinery/sinks/deadletter/reason"
	"github.com/joinery/joinery/sources"
	"github.com/joinery/joinery/transform"
)

// readBatch is the most records one dispatch reads from a source.
const readBatch = 256

// maxInflight bounds the batches sent but not yet answered, per source.
const maxInflight = 32

// drainTimeout bounds how long a stopping source keeps completing the batches
// it already sent.
const drainTimeout = 20 * time.Second

// Run reads every source of the job until all of them end (finite sources)
// or ctx is done, and returns the first error. A node without sources
// returns at once; it keeps hosting key actors until Close.
func (n *Node) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n.rollback.watch(ctx, cancel) // rollback.go
	dl, err := openDeadLetter(ctx, n.spec, n.redisError)
	if err != nil {
		return err
	}
	if dl != nil {
		defer dl.Close()
	}
	stopTick := n.startTimerTick(ctx) // watermarks shared: wake due timers while sources run (wmshare.go)
	var wg sync.WaitGroup
	runs := n.sourceRuns() // repartition.go: a repartitioned source is two
	errs := make([]error, len(runs))
	for i, sr := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.runSource(ctx, sr.cfg, dl, sr.role); err != nil && !errors.Is(err, context.Canceled) {
				errs[i] = fmt.Errorf("sources[%d] %s: %w", sr.index, sr.cfg.Name, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	stopTick()
	if err := n.rollback.found(); err != nil {
		return err
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if errs := n.out.tableErrors(); len(errs) > 0 {
		return fmt.Errorf("changelog inconsistent: %w", errors.Join(errs...))
	}
	return ctx.Err()
}

// openSource opens a source of the job through the connector registry
// (connectors/all); the timer tick (wmshare.go) is the node's own.
func (n *Node) openSource(ctx context.Context, cfg job.Source) (sources.Source, error) {
	if cfg.Type == timerTickType {
		return tickSource{every: n.wms.cfg.Interval}, nil
	}
	consumer := n.spec.Cluster.NodeName
	if consumer == "" {
		consumer = n.system.ID
	}
	env := &connectors.SourceEnv{
		Env:         connectors.Env{Resolve: n.spec.Resolve, OnRedisError: n.redisError},
		Name:        cfg.Name,
		RecordLimit: cfg.RecordLimit(),
		Stdin:       n.opts.Stdin,
		Consumer:    consumer,
		Committed: func(ctx context.Context) (map[string]int64, error) {
			return n.recoveryOffsets(ctx) // rollback.go
		},
		OnPartitions: n.sourcePartitions(cfg.Name),
		OnLease:      n.readingHook(cfg.Name, n.sourcePartitions(cfg.Name)),
		Members:      n.liveMembers,
		Member:       n.memberName,
		Applied:      n.appliedOffset(cfg.Name), // rollback.go
		Lineage:      n.commitLineage,           // rollback.go
	}
	src, _, err := all.Sources.Open(ctx, "source "+cfg.Name, cfg.Type, cfg, env)
	if err == nil && src == nil {
		err = fmt.Errorf("source type %q opens nothing", cfg.Type)
	}
	return src, err
}

// readingHook wraps a Redis stream source's OnPartitions hook (next, may be
// nil) to set joinery_source_reading: 1 while the source holds the lease of
// its stream (or of a shard stream), 0 while it waits for one.
func (n *Node) readingHook(source string, next func(assigned, revoked []int32)) func(assigned, revoked []int32) {
	g := n.metrics.SourceReading.WithLabelValues(n.spec.Name, source)
	var mu sync.Mutex
	held := map[int32]bool{}
	return func(assigned, revoked []int32) {
		mu.Lock()
		for _, p := range revoked {
			delete(held, p)
		}
		for _, p := range assigned {
			held[p] = true
		}
		if len(held) > 0 {
			g.Set(1)
		} else {
			g.Set(0)
		}
		mu.Unlock()
		if next != nil {
			next(assigned, revoked)
		}
	}
}

// batch is one dispatched read: the key requests it sent and the offsets it covers.
type batch struct {
	fireWm  int64 // event-time joins: the watermark the batch's keys advance to
	seq     uint64
	last    map[string]record.Position // partition id -> highest position in the batch
	calls   []call
	forward []sources.Forward // readRaw: the records to write to the repartition streams
	records int
	dead    []deadletter.Record // dead letters, written before the offsets are committed
}

type call struct {
	key     record.Key
	apply   *keypb.Apply
	rows    []actors.EventRows // the events' rows, when apply's events carry none (CDC)
	fut     answer             // nil when sending failed (sendErr); set by sendCalls
	sendErr error
}

type sent struct {
	offsets map[string]int64
	seq     uint64
}

// reader is the ingest state of one source.
type reader struct {
	n    *Node
	cfg  job.Source
	src  sources.Source
	dl   deadletter.Writer // nil without a dead-letter output
	logs logLimiter
	next uint64
	// filter is the source's filter expression (sources[].filter), or nil.
	filter *transform.Filter
	// avro decodes a debezium-avro source's records; nil for Debezium JSON.
	avro *debeziumavro.Decoder
	// role: a source read as it is, or one half of a repartitioned source
	// (repartition.go); fwd writes the repartition streams (readRaw).
	role sourceRole
	fwd  sources.Repartitioner

	mu        sync.Mutex
	committed map[string]int64 // partition id -> committed offset

	// Transient read errors (sources.Transient): since when, the next wait, how many.
	transientSince   time.Time
	transientBackoff backoff.Backoff
	transientRetries int

	// Event-time joins.
	lastFire int64               // watermark up to which due timers were asked for
	parts    map[string]struct{} // partitions this source delivered
	wg       sync.WaitGroup      // batches queued and not completed
}

func (n *Node) runSource(ctx context.Context, cfg job.Source, dl deadletter.Writer, role sourceRole) error {
	src, err := n.openSource(ctx, cfg)
	if err != nil {
		return err
	}
	defer src.Close()
	// joinery_source_lag_records (sourcelag.go), until before the source closes.
	defer n.watchLag(ctx, cfg.Name, src)()
	r := &reader{n: n, cfg: cfg, src: src, dl: dl, committed: map[string]int64{},
		lastFire: math.MinInt64, parts: map[string]struct{}{}, role: role}
	if err := r.setRole(); err != nil { // repartition.go
		return err
	}
	n.opened.Store(cfg.Name, true) // readiness: this source is assigned and reading
	if r.filter, err = cfg.CompiledFilter(); err != nil {
		return fmt.Errorf("source %s: %w", cfg.Name, err) // job validation compiled it already
	}
	if cfg.Format == job.FormatDebeziumAvro {
		if r.avro, err = n.avroDecoder(cfg); err != nil {
			return fmt.Errorf("source %s: %w", cfg.Name, err)
		}
	}
	queue := make(chan *batch, maxInflight)
	collectErr := make(chan error, 1)
	// Reading stops when ctx ends; the batches already sent are still
	// completed (answers awaited, outputs written, offsets committed) for up
	// to drainTimeout more, so a graceful stop leaves nothing half done.
	readCtx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	drainCtx, stopDrain := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDrain()
	go func() {
		<-readCtx.Done()
		select {
		case <-time.After(drainTimeout):
			stopDrain()
		case <-n.rollback.stopped():
			// The store went back in time: nothing in flight may be
			// written to a sink or committed, and the keys whose writes
			// are refused answer no more; stop waiting for them at once.
			stopDrain()
		case <-drainCtx.Done():
		}
	}()
	go func() {
		err := r.collect(drainCtx, queue)
		if err != nil {
			stopRead()
		}
		collectErr <- err
	}()
	readErr := r.read(readCtx, queue)
	close(queue)
	if err := <-collectErr; err != nil {
		return err
	}
	if errors.Is(readErr, io.EOF) {
		return nil
	}
	return readErr
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
		msgs, err := r.src.Read(ctx, max)
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
			if len(msgs) > 0 || len(b.calls) > 0 {
				r.wg.Add(1)
				select {
				case queue <- b:
				case <-ctx.Done():
					r.n.evt.release(b)
					r.wg.Done()
					return ctx.Err()
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

// dispatch decodes and routes msgs and sends one Apply per key (the
// remote ones grouped into one message per owner node: sendCalls).
func (r *reader) dispatch(ctx context.Context, msgs []sources.Message) (*batch, error) {
	n := r.n
	b := &batch{seq: r.next, last: map[string]record.Position{}, records: len(msgs), fireWm: math.MinInt64}
	r.next++
	applies := map[record.Key]*keypb.Apply{}
	rows := map[record.Key][]actors.EventRows{} // changelog joins: the events' rows, by key
	var order []record.Key
	var arrivals []*keypb.Event // event-time inputs in arrival order
	n.stats.addIn(r.cfg.Name, len(msgs))
	for _, m := range msgs {
		part := m.Pos.PartitionID()
		if p, ok := b.last[part]; !ok || m.Pos.Offset > p.Offset {
			b.last[part] = m.Pos
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
			k, pe, err := r.timedEvent(b, m)
			if err != nil {
				return nil, err
			}
			if pe == nil {
				continue
			}
			a, found := applies[k]
			if !found {
				a = &keypb.Apply{Key: string(k)}
				applies[k] = a
				order = append(order, k)
			}
			a.Events = append(a.Events, pe)
			arrivals = append(arrivals, pe)
			n.stats.Events.Add(1)
			continue
		}
		evs, srcPos, err := r.cdcEvents(b, m)
		if err != nil {
			return nil, err
		}
		if r.role == readRaw {
			r.forward(b, m, evs) // to the key groups' repartition streams
			continue
		}
		for _, e := range evs {
			if r.role == readRepartitioned && !r.inGroup(e.Key, m.Pos) {
				continue // the part of a moved row that its other key group applies
			}
			// The rows travel decoded to a local key actor; FillRows
			// encodes them only for one in another process.
			pe, er := actors.EventShell(e)
			pe.SrcPos = srcPos
			a, ok := applies[e.Key]
			if !ok {
				a = &keypb.Apply{Key: string(e.Key)}
				applies[e.Key] = a
				order = append(order, e.Key)
			}
			a.Events = append(a.Events, pe)
			rows[e.Key] = append(rows[e.Key], er)
			n.stats.Events.Add(1)
		}
	}
	now := time.Now()
	for _, k := range order {
		n.hot.Add(k, int64(len(applies[k].Events)), now)
	}
	if n.evt != nil {
		n.evt.mu.Lock()
		defer n.evt.mu.Unlock() // until the batch is sent: see observeLocked
		wm := n.evt.observeLocked(b, arrivals, now)
		if len(arrivals) > 0 {
			n.exportLag(n.evt.wm.Partitions(), wm, now)
		}
		var err error
		if order, err = r.addFires(ctx, applies, order, wm); err != nil {
			return nil, err
		}
		b.fireWm = wm
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n.inflight.mu.Lock()
	defer n.inflight.mu.Unlock() // until sent: see inflightKeys
	for _, k := range order {
		a := applies[k]
		a.Prev = n.inflight.prev(k)
		if len(r.committed) > 0 {
			a.Committed = maps.Clone(r.committed)
		}
		a.Session = n.session
		b.calls = append(b.calls, call{key: k, apply: a, rows: rows[k]})
		offs := map[string]int64{}
		for _, e := range a.Events {
			offs[record.Position{Source: e.Source, Partition: e.Partition}.PartitionID()] = e.Offset
		}
		n.inflight.add(k, r, sent{offsets: offs, seq: b.seq})
	}
	// One message per owner node. A key that cannot be resolved now
	// (membership changing) is retried by the collector, in order.
	r.sendCalls(b.calls)
	return b, nil
}

// inflightKeys holds, per key, the last unanswered request of each reader
// of the node (every source, and the timer tick). A request's Prev is the
// union of the offsets they carry, so the key refuses it (a gap) until the
// requests sent before it — by any reader — are applied: a request that
// is retried after a failover cannot be overtaken by a later one, such as a
// firing from another source that would make its elements late. Prev is
// computed and the request sent under mu, so no other reader sends between.
type inflightKeys struct {
	mu   sync.Mutex
	keys map[record.Key]map[*reader]sent
}

func (f *inflightKeys) prev(k record.Key) map[string]int64 {
	var prev map[string]int64
	for _, s := range f.keys[k] {
		for part, off := range s.offsets {
			if prev == nil {
				prev = map[string]int64{}
			}
			prev[part] = max(prev[part], off)
		}
	}
	return prev
}

// add records r's new request to k. Its offsets merge with those of r's
// earlier unanswered requests to k: a request without events (a firing)
// must not hide an earlier one's events from the Prev of later requests.
// When the newest completes, every earlier one of r has (batches complete
// in order), so done may then forget them all.
func (f *inflightKeys) add(k record.Key, r *reader, s sent) {
	if f.keys == nil {
		f.keys = map[record.Key]map[*reader]sent{}
	}
	byReader := f.keys[k]
	if byReader == nil {
		byReader = map[*reader]sent{}
		f.keys[k] = byReader
	}
	for part, off := range byReader[r].offsets {
		if s.offsets[part] < off {
			s.offsets[part] = off
		}
	}
	byReader[r] = s
}

// done forgets r's request to k of batch seq once it is answered, unless a
// later one replaced it.
func (f *inflightKeys) done(k record.Key, r *reader, seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.keys[k][r]; ok && s.seq == seq {
		delete(f.keys[k], r)
		if len(f.keys[k]) == 0 {
			delete(f.keys, k)
		}
	}
}

// collect waits for each batch's answers in order, writes outputs, then
// commits the batch's offsets.
func (r *reader) collect(ctx context.Context, queue <-chan *batch) error {
	n := r.n
	var failed error
	for b := range queue {
		if failed == nil {
			if err := r.complete(ctx, b); err != nil {
				failed = err
			}
		}
		// Drain after a failure so the reader never blocks.
		n.evt.release(b)
		r.wg.Done()
	}
	return failed
}

func (r *reader) complete(ctx context.Context, b *batch) error {
	n := r.n
	var outs, owned []record.Output // owned: the keys' owners wrote them to the shared sinks
	for _, c := range b.calls {
		ap, kouts, written, err := r.await(ctx, c)
		if err != nil {
			return err
		}
		n.stats.addSkipped(int(ap.Skipped))
		n.stats.Duplicates.Add(int64(ap.Duplicates))
		for _, l := range ap.Late {
			r.late(b, c.key, l)
		}
		if written {
			owned = append(owned, kouts...)
		} else {
			outs = append(outs, kouts...)
		}
	}
	for _, c := range b.calls {
		n.inflight.done(c.key, r, b.seq)
	}
	if err := r.repartition(ctx, b); err != nil { // before the raw offsets are committed
		return err
	}
	if err := n.out.write(ctx, outs, n.retry); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	if err := n.out.writeTo(ctx, localSinks, owned, n.retry); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	n.stats.addOut(len(outs) + len(owned))
	if len(b.dead) > 0 && r.dl != nil {
		// Like the outputs, dead letters are durable before the offsets
		// that pass their records are committed.
		if err := n.retry(ctx, "write dead letters", func(ctx context.Context) error {
			return r.dl.Write(ctx, b.dead)
		}); err != nil {
			return fmt.Errorf("dead letter: %w", err)
		}
		n.stats.DeadLettered.Add(int64(len(b.dead)))
		for _, d := range b.dead {
			n.metrics.DeadLetters.WithLabelValues(n.spec.Name, d.Source).Inc()
		}
	}
	positions := make([]record.Position, 0, len(b.last))
	offsets := make(map[string]int64, len(b.last))
	for part, p := range b.last {
		positions = append(positions, p)
		offsets[part] = p.Offset
	}
	// Both commits are idempotent (offsets never go back), so a failure —
	// Redis restarting — is retried until it passes: ingestion stalls rather
	// than moves on with an uncommitted position.
	if err := n.retry(ctx, "commit offsets", func(ctx context.Context) error {
		return n.commitOffsets(ctx, offsets) // rollback.go
	}); err != nil {
		return err
	}
	if err := n.retry(ctx, "commit source", func(ctx context.Context) error {
		return r.src.Commit(ctx, positions)
	}); err != nil {
		return err
	}
	r.mu.Lock()
	for part, off := range offsets {
		if off > r.committed[part] {
			r.committed[part] = off
		}
	}
	if b.fireWm > math.MinInt64 {
		if c, ok := r.committed[actors.FirePart]; !ok || b.fireWm > c {
			r.committed[actors.FirePart] = b.fireWm
		}
	}
	r.mu.Unlock()
	return nil
}

// retryFor bounds how long one key request is retried before the node gives up.
const retryFor = 2 * time.Minute

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
		again := proto.Clone(c.apply).(*keypb.Apply)
		again.Resend = true
		fut, sendErr = r.send(c.key, again, c.rows)
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
	for i := range calls {
		c := &calls[i]
		c.fut, c.sendErr = nil, nil
		pid, err := n.client.PID(string(c.key))
		if err != nil {
			c.sendErr = err
			continue
		}
		if pid.Address == self {
			ch := make(chan any, 1)
			n.system.Root.Send(pid, &actors.LocalApply{Apply: c.apply, Rows: c.rows, Reply: ch})
			c.fut = &localAnswer{ch: ch, deadline: time.Now().Add(n.timeout)}
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

// routeReason maps a joins.RouteError reason to a reject reason.
func routeReason(why string) reason.Reason {
	switch why {
	case joins.ReasonJoinMissing, joins.ReasonJoinNull:
		return reason.MissingKey
	case joins.ReasonPKMissing, joins.ReasonPKNull:
		return reason.MissingPK
	case joins.ReasonJoinNotScalar, joins.ReasonPKNotScalar:
		return reason.WrongType
	case joins.ReasonDeleteUnroutable:
		return reason.Unroutable
	case joins.ReasonUnknownOp:
		return reason.UnknownOp
	case joins.ReasonMissingAfter:
		return reason.MissingAfter
	case joins.ReasonMissingBefore:
		return reason.MissingBefore
	}
	return reason.Route
}

// cdcEvents decodes a Debezium record and routes it to its join keys. It
// returns no events for a record it counted and set aside (tombstone, bad
// input, truncate) and an error only when a fail policy stops the source.
// srcPos is the record's source position when duplicates are dropped.
func (r *reader) cdcEvents(b *batch, m sources.Message) (evs []record.Event, srcPos string, err error) {
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
		env, err = debezium.DecodeEnvelope(m.Value, m.Pos)
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
	if n.multi != nil {
		evs, err = n.multi.Route(int(side), env.Change)
	} else {
		evs, err = n.cdc.Route(side, env.Change)
	}
	if err != nil {
		why := reason.Route
		var re *joins.RouteError
		if errors.As(err, &re) {
			why = routeReason(re.Reason)
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

// retryBackoff is the wait between retries of key requests, source reads
// and state writes: 10ms, doubled up to a second.
func retryBackoff() backoff.Backoff {
	return backoff.Backoff{Initial: 10 * time.Millisecond, Max: time.Second}
}

// retry runs f until it succeeds, backing off up to a second between tries,
// for at most retryFor or until ctx ends.
func (n *Node) retry(ctx context.Context, what string, f func(context.Context) error) error {
	bo := retryBackoff()
	deadline := time.Now().Add(retryFor)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) || notRetried(err) { // rollback.go
			return fmt.Errorf("%s: %w", what, err)
		}
		n.stats.Retries.Add(1)
		n.log.Warn(what+" failed; retrying", "backoff", bo.Delay(), "err", err)
		if err := bo.Wait(ctx); err != nil {
			return err
		}
	}
}

// late counts an input an event-time join found late and, when the job names
// a dead-letter output, writes it there with the reason ("late: …"). Late data
// is never dropped silently.
func (r *reader) late(b *batch, key record.Key, l *keypb.Late) {
	n := r.n
	n.stats.Late.Add(1)
	n.metrics.Late.WithLabelValues(n.spec.Name).Inc()
	e := l.Event
	if e == nil {
		return
	}
	pos := record.Position{Source: e.Source, Partition: e.Partition, Offset: e.Offset}
	n.log.Debug("late input", "key", key, "position", pos.String(), "ts", e.Ts, "reason", l.Reason)
	if r.dl != nil {
		b.dead = append(b.dead, deadletter.New(string(reason.Late(l.Reason)), fmt.Errorf("key %s, event time %d", key, e.Ts), pos, e.After, time.Now()))
	}
}
