package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node/sendstate"
	"github.com/joinery/joinery/sinks/deadletter"
	"github.com/joinery/joinery/sources"
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
	if n.refusal != nil {         // version.go
		go func() {
			select {
			case <-n.refusal.done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	dl, err := openDeadLetter(ctx, n.plan, n.connEnv())
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
	if n.refusal != nil {
		if err := n.refusal.found(); err != nil {
			return err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if errs := n.out.tableErrors(); len(errs) > 0 {
		return fmt.Errorf("changelog inconsistent: %w", errors.Join(errs...))
	}
	return ctx.Err()
}

// openSource opens a source of the plan with its kind (connectors/all) and
// the configuration the job compiled; the timer tick (wmshare.go) is the
// node's own.
func (n *Node) openSource(ctx context.Context, cfg job.SourcePlan) (sources.Source, error) {
	if cfg.Type == timerTickType {
		return tickSource{every: n.wms.cfg.Interval}, nil
	}
	consumer := n.spec.Cluster.NodeName
	if consumer == "" {
		consumer = n.system.ID
	}
	env := &connectors.SourceEnv{
		Env:         n.connEnv(),
		Name:        cfg.Name,
		RecordLimit: cfg.RecordLimit(),
		Stdin:       n.opts.Stdin,
		Consumer:    consumer,
		Committed: func(ctx context.Context) (map[string]int64, error) {
			return n.recoveryOffsets(ctx) // rollback.go
		},
		OnPartitions: n.sourcePartitions(cfg.Name),
		OnRevokeTimeout: func(parts []int32, waited time.Duration) {
			n.metrics.RevokeTimeouts.WithLabelValues(n.spec.Name, cfg.Name).Inc()
			n.log.Warn("a rebalance took partitions before the records in flight from them were committed; their next owner reads those records again (keys skip what they applied)",
				"source", cfg.Name, "partitions", parts, "waited", waited)
		},
		OnLease:    n.readingHook(cfg.Name, n.sourcePartitions(cfg.Name)),
		Members:    n.liveMembers,
		Expect:     n.spec.Cluster.Expect,
		ExpectWait: n.spec.Cluster.ExpectWait,
		Member:     n.memberName,
		Applied:    n.appliedOffset(cfg.Name), // rollback.go
		Lineage:    n.commitLineage,           // rollback.go
		KeptFloor:  n.keptFloor(cfg.Name),     // rollback.go
	}
	if n.plan.ExactlyOnce {
		env.TransactionalID = n.transactionalID(cfg.Name, consumer) // exactlyonce.go
	}
	var src sources.Source
	var err error
	if cfg.Kind.Open != nil {
		src, err = cfg.Kind.Open(ctx, cfg.Config, env)
	}
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
		n.log.Info("source partitions", "source", source, "assigned", assigned, "revoked", revoked, "held", len(held))
		mu.Unlock()
		if next != nil {
			next(assigned, revoked)
		}
	}
}

func (n *Node) runSource(ctx context.Context, sp job.SourcePlan, dl deadletter.Writer, role sourceRole) error {
	cfg := sp.Source
	src, err := n.openSource(ctx, sp)
	if err != nil {
		return err
	}
	defer src.Close()
	// joinery_source_lag_records (sourcelag.go), until before the source closes.
	defer n.watchLag(ctx, cfg.Name, src)()
	r := &reader{n: n, cfg: cfg, filter: sp.Filter, src: src, dl: dl, sender: sendstate.NewReader(sendstate.ReaderID(n.inflight.ids.Add(1))),
		lastFire: math.MinInt64, parts: map[string]struct{}{}, role: role, groupOf: keyGroupOf(sp), freed: make(chan struct{}, 1)}
	if err := r.setRole(); err != nil { // repartition.go
		return err
	}
	r.keep = n.kept.decoderKeep(&cfg, r.filter != nil, n.spec.SideOf)
	n.opened.Store(cfg.Name, true) // readiness: this source is assigned and reading
	if cfg.Format == job.FormatDebeziumAvro {
		if r.avro, err = n.avroDecoder(sp); err != nil {
			return fmt.Errorf("source %s: %w", cfg.Name, err)
		}
	}
	if n.plan.ExactlyOnce { // exactlyonce.go
		if r.txn, _ = src.(sources.Transactional); r.txn == nil {
			return fmt.Errorf("source %s: an exactly-once job's source must be transactional (a kafka source)", cfg.Name)
		}
	}
	queue := make(chan *batch, maxInflight)
	collectErr := make(chan error, 1)
	// Reading stops when ctx ends; the batches already sent are still
	// completed (answers awaited, outputs written, offsets committed) for up
	// to drainTimeout more, so a graceful stop leaves nothing half done.
	readCtx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	r.stopRead = stopRead
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

// connEnv is what every connector constructor gets from the node.
func (n *Node) connEnv() connectors.Env {
	return connectors.Env{Resolve: n.spec.Resolve, OnRedisError: n.redisError, Log: n.log}
}
