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

// Rollback detection (docs/operations.md, "Rollback detection"): the node
// commits offsets through a persistence.Guard, which checks the store's
// lineage (incarnation and commit sequence) in the same atomic step, and
// checks it at start and every rollbackCheckEvery (a reconnect to a Redis
// restarted from an older snapshot shows there). A store that went back in
// time fails the next commit with a *persistence.RollbackError, which the
// node does not retry: the source stops and Run returns it, instead of
// going on with state that lost acknowledged writes.

// rollbackCheckEvery is how often the node re-reads the store's lineage
// besides its commits.
const rollbackCheckEvery = 2 * time.Second

// startGuard wraps the store's commits in a guard (when the store keeps a
// lineage), records the lineage at start, registers
// joinery_store_rollbacks_total, and starts the periodic check, which ends
// when the store is closed or once a rollback was found.
func (n *Node) startGuard(ctx context.Context) error {
	rollbacks := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "joinery", Name: "store_rollbacks_total",
		Help: "Times this node found the state store gone back in time (restarted empty, restored from an older snapshot, failed over to a lagging replica); the node stops ingesting."},
		[]string{"job"})
	if err := n.metrics.Registry().Register(rollbacks); err != nil {
		return err
	}
	n.rollback.init()
	g := persistence.NewGuard(n.store, func(re *persistence.RollbackError) {
		rollbacks.WithLabelValues(re.Job).Inc()
		n.log.Error("state store went back in time; stopping ingestion (restart the node to resume from the store's committed offsets)",
			"seen", re.Seen.String(), "found", re.Found.String())
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
// lost range again from there (docs/operations.md, "Recovery").
func (n *Node) appliedOffset(source string) func(context.Context, int32) (int64, bool, error) {
	return func(ctx context.Context, partition int32) (int64, bool, error) {
		committed, err := n.store.CommittedOffsets(ctx, n.spec.Name)
		if err != nil {
			return 0, false, err
		}
		off, ok := committed[record.Position{Source: source, Partition: partition}.PartitionID()]
		if ok {
			n.log.Info("source partition starts from the store's committed offset", "source", source, "partition", partition, "offset", off)
		}
		return off, ok, nil
	}
}

// lostRange reports a source that cannot re-read what the store lost: the
// node stops with err (it names the source, the partition and the range).
func (n *Node) lostRange(source string, err error) {
	n.metrics.LostRanges.WithLabelValues(n.spec.Name, source).Inc()
	n.log.Error("the state store lost records the source no longer holds; stopping", "job", n.spec.Name, "source", source, "err", err)
}

// rollbackStop tells Run that the guard found the store gone back in time
// (at a commit or in its periodic check): key writes on the rolled-back
// store would be refused and retried for minutes, so Run stops at once and
// returns the *persistence.RollbackError.
type rollbackStop struct {
	once sync.Once
	done chan struct{}
	err  error // set before done is closed
}

func (r *rollbackStop) init() { r.done = make(chan struct{}) }

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
