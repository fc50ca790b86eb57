package node

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// Rollback detection (docs/operations/recovery.md, "Rollback detection"): the node's
// key actors and their Writer load and save through a persistence.Guard
// (keyStore), which turns the store's refusal of a write to a shard gone
// back in time (its write generation below what this node saw) into the
// rollback, at the first such write; the node
// commits offsets through the same guard, which checks the store's
// lineage (incarnation and commit sequence) in the same atomic step, and
// checks it at start and every rollbackCheckEvery (a reconnect to a Redis
// restarted from an older snapshot shows there). A store that went back in
// time fails the next commit with a *persistence.RollbackError, which the
// node does not retry: the source stops and Run returns it, instead of
// going on with state that lost acknowledged writes.
//
// The sources' commits carry the lineage too (commitLineage: Kafka commit
// metadata, a key beside a Redis stream's group), and a source that opens
// hands it back (appliedOffset): a store behind it went back in time since
// those records were acknowledged, which a node started after the rollback
// cannot see otherwise. Then the source re-reads what the store lost, from
// the store's offsets, or from the partition's beginning where the store
// has none (it was restarted empty). A source that deletes what it
// acknowledged keeps what follows the store's replay floor (keptFloor),
// or its next reader would find the range it re-reads gone.

// rollbackCheckEvery is how often the node re-reads the store's lineage
// besides its commits.
const rollbackCheckEvery = 2 * time.Second

// startGuard wraps the store's commits in a guard (when the store keeps a
// lineage), records the lineage at start, registers
// joinery_store_rollbacks_total, and starts the periodic check, which ends
// when the store is closed or once a rollback was found.
func (n *Node) startGuard(ctx context.Context) error {
	rollbacks := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "joinery", Name: "store_rollbacks_total",
		Help: "Times this node found the state store gone back in time (restarted empty, restored from an older snapshot, failed over to a lagging replica); the node stops reading its sources."},
		[]string{"job"})
	if err := n.metrics.Registry().Register(rollbacks); err != nil {
		return err
	}
	n.rollback.init(rollbacks)
	g := persistence.NewGuard(n.store, func(re *persistence.RollbackError) {
		rollbacks.WithLabelValues(re.Job).Inc()
		n.log.Error("state store went back in time; stopping the sources (restart the node to resume from the store's committed offsets)",
			"seen", re.Seen.String(), "found", re.Found.String(), "err", re)
		n.rollback.stop(re)
	})
	if g == nil {
		return nil
	}
	rollbacks.WithLabelValues(n.spec.Name).Add(0)
	if err := g.Check(ctx, n.spec.Name); err != nil {
		return err
	}
	n.guard = g
	go func() {
		t := time.NewTicker(rollbackCheckEvery)
		defer t.Stop()
		for range t.C {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := g.Check(cctx, n.spec.Name)
			cancel()
			if errors.Is(err, persistence.ErrClosed) || errors.Is(err, persistence.ErrRollback) {
				return
			}
		}
	}()
	return nil
}

// keyStore is the store as the key actors and their Writer see it: the
// guard when there is one, so that a key write (or load) the store refuses
// because it went back in time under this node (persistence.
// StaleStoreError: the first write after the rollback to a shard whose
// writes were lost) stops the node as a rollback found at a commit does.
func (n *Node) keyStore() persistence.Store {
	if n.guard != nil {
		return n.guard
	}
	return n.store
}

// commitOffsets commits through the guard when there is one.
func (n *Node) commitOffsets(ctx context.Context, offsets map[string]int64) error {
	if n.guard != nil {
		return n.guard.CommitOffsets(ctx, n.spec.Name, offsets)
	}
	return n.store.CommitOffsets(ctx, n.spec.Name, offsets)
}

// notRetried reports whether Node.retry must give up on err at once: a
// store that went back in time does not come forward by retrying.
func notRetried(err error) bool { return errors.Is(err, persistence.ErrRollback) }

// appliedOffset is a Kafka or Redis stream source's view of the store's
// committed offsets (Config.Applied): where the store is behind what the
// source's group acknowledged — it went back in time — the source reads the
// lost range again from there (docs/operations/recovery.md, "Recovery"). lineage is
// what the source's own last commit of the partition carried
// (commitLineage): when the store went back in time since (another
// incarnation, or a lower commit sequence) and holds no offset for the
// partition — it was restarted empty, or restored from before its first
// commit — the store applied nothing of it, and the source reads it again
// from its beginning (-1). On a store whose shards go back in time one at
// a time (persistence.RecoveryStore: a Redis Cluster, one master failed
// over to a lagging replica) the store's offsets are its RecoveryOffsets:
// a committed offset kept on a master that lost nothing is ahead of the
// state a failed-over master kept, and starting from it would skip what
// that state lost (TestChaosClusterFailoverLaggingReplica).
func (n *Node) appliedOffset(source string) func(context.Context, int32, string) (int64, bool, error) {
	return func(ctx context.Context, partition int32, lineage string) (int64, bool, error) {
		committed, err := n.recoveryOffsets(ctx)
		if err != nil {
			return 0, false, err
		}
		off, ok := committed[record.Position{Source: source, Partition: partition}.PartitionID()]
		re, err := n.sourceRollback(ctx, source, partition, lineage)
		if err != nil {
			return 0, false, err
		}
		switch {
		case ok:
			n.log.Info("source partition starts from the store's committed offset", "source", source, "partition", partition, "offset", off)
		case re != nil:
			n.log.Warn("the state store has no offset for a partition the source committed before the store went back in time: reading it again from its beginning",
				"source", source, "partition", partition)
			return -1, true, nil
		}
		return off, ok, nil
	}
}

// recoveryOffsets is where the sources start: the store's committed
// offsets, or its RecoveryOffsets where it has them (a Redis Cluster: see
// appliedOffset).
func (n *Node) recoveryOffsets(ctx context.Context) (map[string]int64, error) {
	if rs, ok := n.store.(persistence.RecoveryStore); ok {
		return rs.RecoveryOffsets(ctx, n.spec.Name)
	}
	return n.store.CommittedOffsets(ctx, n.spec.Name)
}

// keptFloor bounds the trims of a source that deletes what it
// acknowledged (the repartition streams: redisstream Config.KeptFloor) by
// the store's replay floor of the partition, where appliedOffset starts
// its next reader. On a Redis Cluster store the recovery offsets are the
// floors, copied about once a second after the commits: trimmed up to the
// committed offset, a repartition shard taken over from a node that
// stopped gracefully lacked the entries between its floor and its commit,
// and the taker stopped with "the state store lost records the source no
// longer holds" (lostRange) though the store lost nothing
// (docs/guides/producers.md, "Repartition streams and the replay floors").
// nil when the store keeps no floors (its recovery offsets are its
// committed offsets).
func (n *Node) keptFloor(source string) func(int32) (int64, bool) {
	fs, ok := n.store.(persistence.FloorStore)
	if !ok {
		return nil
	}
	return func(partition int32) (int64, bool) {
		return fs.KeptFloor(n.spec.Name, record.Position{Source: source, Partition: partition}.PartitionID())
	}
}

// sourceRollback compares the lineage a source's commit carried with the
// store's (persistence.Guard.Recover): a store that went back in time since
// is logged and counted in joinery_store_rollbacks_total (once per store
// incarnation it recovered to), and re-founded when its floor did not move;
// the node goes on, the source reading again what the store lost. Metadata
// that is no lineage (a Kafka commit by another client) is ignored.
func (n *Node) sourceRollback(ctx context.Context, source string, partition int32, lineage string) (*persistence.RollbackError, error) {
	if n.guard == nil || lineage == "" {
		return nil, nil
	}
	seen, err := persistence.ParseLineage(lineage)
	if err != nil {
		return nil, nil
	}
	re, err := n.guard.Recover(ctx, n.spec.Name, seen)
	if re == nil || err != nil {
		return re, err
	}
	now := n.guard.Seen(n.spec.Name)
	n.log.Error("state store went back in time since the source committed; reading again what it lost, from the store's committed offsets",
		"source", source, "partition", partition, "seen", re.Seen.String(), "found", re.Found.String(), "now", now.String())
	if n.rollback.first(now.Incarnation) {
		n.rollback.count.WithLabelValues(re.Job).Inc()
	}
	return re, nil
}

// commitLineage is the lineage a source's commits carry: the store's, as
// the guard saw it last ("" without a guard).
func (n *Node) commitLineage() string {
	if n.guard == nil {
		return ""
	}
	if l := n.guard.Seen(n.spec.Name); l.Incarnation != "" {
		return l.String()
	}
	return ""
}

// lostRange reports a source that cannot re-read what the store lost: the
// node stops with err (it names the source, the partition and the range).
func (n *Node) lostRange(source string, err error) {
	n.metrics.LostRanges.WithLabelValues(n.spec.Name, source).Inc()
	n.log.Error("the state store lost records the source no longer holds; stopping", "job", n.spec.Name, "source", source, "err", err)
}

// rollbackStop tells Run that the guard found the store gone back in time
// (at a key write or load the store refused, persistence.StaleStoreError;
// at a commit; or in its periodic check): every later key write to a shard
// that lost writes would be refused too, so Run stops at once and returns
// the *persistence.RollbackError.
type rollbackStop struct {
	once sync.Once
	done chan struct{}
	err  error // set before done is closed

	// count is joinery_store_rollbacks_total; counted the incarnations a
	// rollback found through a source's lineage recovered to.
	count   *prometheus.CounterVec
	mu      sync.Mutex
	counted map[string]bool
}

func (r *rollbackStop) init(count *prometheus.CounterVec) {
	r.done, r.count, r.counted = make(chan struct{}), count, map[string]bool{}
}

// first reports whether incarnation is counted for the first time.
func (r *rollbackStop) first(incarnation string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counted[incarnation] {
		return false
	}
	r.counted[incarnation] = true
	return true
}

func (r *rollbackStop) stop(err error) {
	r.once.Do(func() { r.err = err; close(r.done) })
}

// watch cancels cancel when a rollback is found, until ctx ends.
func (r *rollbackStop) watch(ctx context.Context, cancel context.CancelFunc) {
	if r.done == nil {
		return
	}
	go func() {
		select {
		case <-r.done:
			cancel()
		case <-ctx.Done():
		}
	}()
}

// stopped is closed once a rollback is found (nil, never closed, before
// init).
func (r *rollbackStop) stopped() <-chan struct{} { return r.done }

// found is the rollback found, nil if none.
func (r *rollbackStop) found() error {
	if r.done == nil {
		return nil
	}
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}
