package node

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/joinery/joinery/persistence"
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
	g := persistence.NewGuard(n.store, func(re *persistence.RollbackError) {
		rollbacks.WithLabelValues(re.Job).Inc()
		n.log.Error("state store went back in time; stopping ingestion (restart the node to resume from the store's committed offsets)",
			"job", re.Job, "seen", re.Seen.String(), "found", re.Found.String())
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
