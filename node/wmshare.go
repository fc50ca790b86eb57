package node

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
	"github.com/joinery/joinery/timers"
)

// WatermarkSharing configures how the nodes reading an event-time job's sources
// share their watermarks (docs/concepts/architecture.md, "Cluster"). Each such node publishes its own
// watermark on the state store's board and stamps elements and fires timers
// at the global watermark: the minimum over its own and every live, active
// peer's, as Flink combines its parallel source subtasks. Without it, a node
// reading some of the job's partitions fires windows that another node still
// has data for. The zero value is the default.
type WatermarkSharing struct {
	// Disabled makes the node use its own watermark only: right only when it
	// is the only node reading the job's sources.
	Disabled bool
	// Interval is how often the node publishes its watermark (a heartbeat
	// even when it does not move) and reads its peers'. Default 100ms.
	Interval time.Duration
	// TTL is how long a peer's entry counts after its last heartbeat change,
	// by this node's clock, unless the peer is an alive cluster member. A
	// peer gone longer stops holding the watermark back. Default 3s.
	TTL time.Duration
}

const (
	defaultShareInterval = 100 * time.Millisecond
	defaultShareTTL      = 3 * time.Second
)

// wmShare publishes this node's watermark and reads its peers'. One
// goroutine (run) owns the periodic exchange; syncNow runs one exchange at
// once for callers that must not wait (start, Run, end of input).
type wmShare struct {
	board    persistence.WatermarkStore
	job      string
	self     string
	cfg      WatermarkSharing
	evt      *eventTime
	alive    func() map[string]bool // names of the alive cluster members; may be nil
	log      *slog.Logger
	nudge    chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// mu serializes exchanges, so a stale publish can never overwrite a
	// newer one (an end of input published by syncNow, say), and guards the
	// fields below. Lock order: mu before eventTime.mu.
	mu      sync.Mutex
	seen    map[string]seenEntry
	failing bool // the last exchange failed (logged once per outage)
	stopped bool // the entry was taken off the board: publish no more
}

// seenEntry is the last heartbeat read from a peer's entry and when, by
// this node's clock, it was first read: liveness never compares clocks
// across machines, except for a first guess about an entry never seen.
type seenEntry struct {
	heartbeat time.Time
	at        time.Time
}

// peerView is the result of combining the peers' entries.
type peerView struct {
	min    int64  // minimum watermark of the live, active peers
	active bool   // some live peer is active
	holder string // "node:NAME" of the peer at min; ties to the smallest name
	rows   []timers.PartitionWatermark
}

// combinePeers applies the liveness and idleness rule to the board's
// entries: an entry other than self's counts while its heartbeat changed
// less than ttl ago (by now, this node's clock) or its node is alive in
// the cluster, and it is not idle. seen is updated (entries no longer on
// the board are forgotten). An entry seen for the first time counts from
// now unless its own heartbeat is already more than ttl old.
func combinePeers(entries []persistence.NodeWatermark, self string, now time.Time, ttl time.Duration,
	seen map[string]seenEntry, alive map[string]bool) peerView {
	v := peerView{min: math.MaxInt64}
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.Node == self {
			continue
		}
		present[e.Node] = true
		s, ok := seen[e.Node]
		switch {
		case ok && s.heartbeat.Equal(e.Heartbeat):
		case ok || now.Sub(e.Heartbeat) < ttl:
			s = seenEntry{heartbeat: e.Heartbeat, at: now}
		default:
			s = seenEntry{heartbeat: e.Heartbeat, at: e.Heartbeat}
		}
		seen[e.Node] = s
		live := now.Sub(s.at) < ttl || alive[e.Node]
		name := "node:" + e.Node
		v.rows = append(v.rows, timers.PartitionWatermark{Partition: name, Watermark: e.Watermark,
			MaxTs: math.MinInt64, Idle: e.Idle || !live, LastSeen: e.Heartbeat})
		if !live || e.Idle {
			continue
		}
		if !v.active || e.Watermark < v.min || (e.Watermark == v.min && name < v.holder) {
			v.min, v.holder = e.Watermark, name
		}
		v.active = true
	}
	for name := range seen {
		if !present[name] {
			delete(seen, name)
		}
	}
	return v
}

// startWmShare starts sharing for an event-time job that reads sources,
// unless disabled or the store has no watermark board. It publishes once
// before returning, so a node is visible to its peers once Start returns.
func (n *Node) startWmShare(ctx context.Context) error {
	cfg := n.opts.WatermarkSharing
	if cfg == (WatermarkSharing{}) {
		w := n.spec.Cluster.Watermarks // the job file's, unless the embedder set Options
		cfg = WatermarkSharing{Disabled: w.Disabled, Interval: w.Interval, TTL: w.TTL}
	}
	board, ok := n.store.(persistence.WatermarkStore)
	if n.evt == nil || len(n.spec.Sources) == 0 || cfg.Disabled || !ok {
		return nil
	}
	if cfg.Interval <= 0 {
		cfg.Interval = defaultShareInterval
	}
	if cfg.TTL <= 0 {
		cfg.TTL = defaultShareTTL
	}
	self := n.spec.Cluster.NodeName
	for _, m := range n.provider.Members() {
		if m.Self {
			self = m.Name
		}
	}
	if self == "" {
		self = n.system.ID
	}
	s := &wmShare{board: board, job: n.spec.Name, self: self, cfg: cfg, evt: n.evt,
		log: n.log.With("component", "watermarks"), nudge: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), seen: map[string]seenEntry{}}
	s.alive = func() map[string]bool {
		out := map[string]bool{}
		for _, m := range n.provider.Members() {
			if m.Status == cluster.StatusAlive {
				out[m.Name] = true
			}
		}
		return out
	}
	if err := s.syncNow(ctx); err != nil {
		return err
	}
	n.evt.mu.Lock()
	n.evt.nudge = func() {
		select {
		case s.nudge <- struct{}{}:
		default:
		}
	}
	n.evt.mu.Unlock()
	n.wms = s
	go s.run()
	return nil
}

// syncWatermarks runs one exchange now, when the node shares watermarks.
// A failure is logged: the periodic exchange retries it.
func (n *Node) syncWatermarks(ctx context.Context) {
	if n.wms == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = n.wms.syncNow(cctx)
}

// stopWmShare stops the exchange and takes this node's entry off the board:
// a node that leaves, like one that dies, stops holding the watermark back.
func (n *Node) stopWmShare(ctx context.Context) {
	s := n.wms
	if s == nil {
		return
	}
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if err := s.board.DeleteWatermark(cctx, s.job, s.self); err != nil {
		s.log.Warn("cannot remove this node's watermark entry; it expires", "err", err)
	}
}

// run exchanges every Interval, and soon after a nudge (a batch completed,
// a source ended) but not more often than every Interval/5.
func (s *wmShare) run() {
	defer close(s.done)
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	minGap := s.cfg.Interval / 5
	var last time.Time
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		case <-s.nudge:
			if wait := minGap - time.Since(last); wait > 0 {
				select {
				case <-s.stop:
					return
				case <-time.After(wait):
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(s.cfg.Interval, time.Second))
		_ = s.syncNow(ctx)
		cancel()
		last = time.Now()
	}
}

// syncNow publishes this node's watermark, then reads the board and
// installs the peers' view. Publishing first matters at the end of input:
// of two nodes that end together, at least one reads the other's end.
func (s *wmShare) syncNow(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	now := time.Now()
	wm, idle := s.evt.published(now)
	err := s.board.PublishWatermark(ctx, s.job, persistence.NodeWatermark{Node: s.self, Watermark: wm, Heartbeat: now, Idle: idle})
	var entries []persistence.NodeWatermark
	if err == nil {
		entries, err = s.board.Watermarks(ctx, s.job)
	}
	if err != nil {
		if !s.failing {
			s.log.Warn("cannot exchange watermarks; the global watermark waits", "err", err)
		}
		s.failing = true
		return err
	}
	if s.failing {
		s.log.Info("watermark exchange recovered")
		s.failing = false
	}
	var alive map[string]bool
	if s.alive != nil {
		alive = s.alive()
	}
	s.evt.setPeers(combinePeers(entries, s.self, time.Now(), s.cfg.TTL, s.seen, alive))
	return nil
}

// timerTickSource names the timer tick's reader (its metrics label), and
// timerTickType is its source type, which only openSource knows.
const (
	timerTickSource = "~timers"
	timerTickType   = "~timer-tick"
)

// startTimerTick exchanges watermarks once (learning the peers that started
// since Start) and, while the node shares watermarks, runs a reader without
// input beside the sources until the returned stop is called: every
// Interval it wakes the keys whose timers the global watermark made due. A
// source's own reads do that too, but a source whose read blocks until input
// comes (Kafka) does not, and a timer may become due only because a peer's
// watermark moved. Firing is idempotent at the key, so the tick and the
// sources may fire the same keys. stop waits for the fires already sent to
// complete (their outputs written).
func (n *Node) startTimerTick(ctx context.Context) (stop func()) {
	n.syncWatermarks(ctx)
	if n.wms == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A reader like a source's: its fires complete (outputs written)
		// before it returns, for up to drainTimeout after stop.
		err := n.runSource(ctx, job.SourcePlan{Source: job.Source{Name: timerTickSource, Type: timerTickType}}, nil, readDirect)
		if err != nil && !errors.Is(err, context.Canceled) {
			n.log.Warn("timer tick stopped", "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// tickSource is the timer tick's input: nothing, every interval.
type tickSource struct{ every time.Duration }

func (s tickSource) Read(ctx context.Context, _ int) ([]sources.Message, error) {
	t := time.NewTimer(s.every)
	defer t.Stop()
	select {
	case <-t.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (tickSource) Commit(context.Context, []record.Position) error { return nil }
func (tickSource) Close() error                                    { return nil }
