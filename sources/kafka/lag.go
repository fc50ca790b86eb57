package kafka

import (
	"context"

	"github.com/joinery/joinery/sources"
)

var _ sources.Lagger = (*Source)(nil)

// Lag returns, for each partition this member owns, its high watermark
// (asked of the leaders, one ListOffsets request) minus the group's next
// offset: the one this member last committed, or the group's committed
// offset it started from, or else the first offset it delivered; a
// partition with none of these starts at the reset offset (StartOffset).
func (s *Source) Lag(ctx context.Context) (map[int32]int64, error) {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	next := make(map[int32]int64, len(s.mu.owned))
	parts := make([]int32, 0, len(s.mu.owned))
	for p, o := range s.mu.owned {
		parts = append(parts, p)
		switch {
		case o.committed >= 0:
			next[p] = o.committed
		case o.lo >= 0:
			next[p] = o.lo
		}
	}
	s.mu.Unlock()
	out := make(map[int32]int64, len(parts))
	if len(parts) == 0 {
		return out, nil
	}
	ends, err := s.listOffsets(ctx, parts, -1)
	if err != nil {
		return nil, err
	}
	committed := s.client.CommittedOffsets()[s.cfg.Topic]
	var unknown []int32
	for _, p := range parts {
		if c, ok := committed[p]; ok && c.Offset >= 0 {
			if n, ok := next[p]; !ok || c.Offset > n {
				next[p] = c.Offset
			}
		}
		if _, ok := next[p]; !ok {
			unknown = append(unknown, p)
		}
	}
	if len(unknown) > 0 {
		if s.cfg.StartOffset == StartLatest {
			for _, p := range unknown {
				next[p] = ends[p]
			}
		} else {
			starts, err := s.startOffsets(ctx, unknown)
			if err != nil {
				return nil, err
			}
			for _, p := range unknown {
				next[p] = starts[p]
			}
		}
	}
	for _, p := range parts {
		out[p] = max(0, ends[p]-next[p])
	}
	return out, nil
}
