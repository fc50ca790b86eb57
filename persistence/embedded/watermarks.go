package embedded

import (
	"context"
	"sync"

	"github.com/joinery/joinery/persistence"
)

var _ persistence.WatermarkStore = (*Store)(nil)

// watermarkBoard holds the published node watermarks, in memory only (they
// are ephemeral: never logged to the file). Nodes that share one Store in a
// process see each other's entries.
type watermarkBoard struct {
	mu   sync.Mutex
	jobs map[string]map[string]persistence.NodeWatermark // job -> node -> entry
}

func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.closed
}

// PublishWatermark implements persistence.WatermarkStore.
func (s *Store) PublishWatermark(_ context.Context, job string, w persistence.NodeWatermark) error {
	if s.isClosed() {
		return persistence.ErrClosed
	}
	b := &s.wms
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.jobs == nil {
		b.jobs = make(map[string]map[string]persistence.NodeWatermark)
	}
	j := b.jobs[job]
	if j == nil {
		j = make(map[string]persistence.NodeWatermark)
		b.jobs[job] = j
	}
	j[w.Node] = w
	return nil
}

// Watermarks implements persistence.WatermarkStore.
func (s *Store) Watermarks(_ context.Context, job string) ([]persistence.NodeWatermark, error) {
	if s.isClosed() {
		return nil, persistence.ErrClosed
	}
	b := &s.wms
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]persistence.NodeWatermark, 0, len(b.jobs[job]))
	for _, w := range b.jobs[job] {
		out = append(out, w)
	}
	return out, nil
}

// DeleteWatermark implements persistence.WatermarkStore.
func (s *Store) DeleteWatermark(_ context.Context, job, node string) error {
	if s.isClosed() {
		return persistence.ErrClosed
	}
	b := &s.wms
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.jobs[job], node)
	return nil
}
