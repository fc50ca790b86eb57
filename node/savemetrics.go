package node

import (
	"context"
	"time"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/persistence"
)

// meteredSaves is the store as the key actors' Writer sees it: every Save
// (one pipelined batch) is timed into joinery_snapshot_seconds and its
// state bytes added to joinery_snapshot_bytes_total. Only the Writer gets
// it; the node keeps the store itself for its other uses (and their
// optional interfaces, e.g. persistence.WatermarkStore).
type meteredSaves struct {
	persistence.Store
	m *admin.Metrics
}

func (s meteredSaves) Save(ctx context.Context, snaps []persistence.Snapshot) error {
	start := time.Now()
	err := s.Store.Save(ctx, snaps)
	s.m.SnapshotSeconds.Observe(time.Since(start).Seconds())
	if err == nil {
		n := 0
		for _, sn := range snaps {
			n += len(sn.State)
			for _, p := range sn.Parts { // incremental writes: the parts written
				n += len(p.Name) + len(p.Value)
			}
		}
		s.m.SnapshotBytes.Add(float64(n))
	}
	return err
}

// redisError counts one failed Redis call of the state store or a Redis
// connector (redisopts.Failed) into joinery_redis_errors_total.
func (n *Node) redisError() { n.metrics.RedisErrors.Inc() }
