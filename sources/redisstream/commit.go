package redisstream

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/record"
)

// Commit acknowledges (XACK) every entry Read delivered whose offset is <=
// the offset committed for this source's partition 0, in one round trip
// (pipelined XACKs of up to 1000 IDs each, then the SET of Config.Lineage
// to LineageKey). Positions of other sources are
// ignored; another partition of this source is an error. If the round trip
// fails the entries stay unacknowledged and a later Commit retries them.
func (s *Source) Commit(ctx context.Context, upTo []record.Position) error {
	upToOffset := int64(-1)
	for _, p := range upTo {
		if p.Source != s.cfg.Name {
			continue
		}
		if p.Partition != s.cfg.partition {
			return fmt.Errorf("redisstream: commit %v: source %s has only partition %d", p, s.cfg.Name, s.cfg.partition)
		}
		upToOffset = max(upToOffset, p.Offset)
	}
	if upToOffset < 0 {
		return nil
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	a, err := s.prepareAck(upToOffset)
	if err != nil || a.n == 0 {
		return err
	}
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		a.queue(ctx, p)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstream: ack %d entries of %s: %w", a.n, s.cfg.Stream, err)
	}
	s.acked(a.n)
	return nil
}

// ack is one source's part of a Commit: the first n delivered entries,
// their IDs, the last one's offset, and the lineage to write beside them.
type ack struct {
	s       *Source
	ids     []string
	n       int
	last    int64
	lineage string
}

// prepareAck takes the delivered entries up to upTo for a commit; the
// caller holds commitMu until it called acked (or gave up).
func (s *Source) prepareAck(upTo int64) (ack, error) {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return ack{}, ErrClosed
	}
	n := 0
	for n < len(s.mu.unacked) && s.mu.unacked[n].offset <= upTo {
		n++
	}
	a := ack{s: s, n: n, ids: make([]string, n)}
	for i := range a.ids {
		a.ids[i] = s.mu.unacked[i].id
	}
	if n > 0 {
		a.last = s.mu.unacked[n-1].offset
	}
	s.mu.Unlock()
	if n > 0 && s.cfg.Lineage != nil {
		a.lineage = s.cfg.Lineage()
	}
	return a, nil
}

// queue adds a's commands to a pipeline: its XACKs, the lineage, the trim.
func (a ack) queue(ctx context.Context, p redis.Pipeliner) {
	s := a.s
	for start := 0; start < len(a.ids); start += ackChunk {
		p.XAck(ctx, s.cfg.Stream, s.cfg.Group, a.ids[start:min(start+ackChunk, len(a.ids))]...)
	}
	if a.lineage != "" {
		p.Set(ctx, LineageKey(s.cfg.Stream, s.cfg.Group), a.lineage, 0)
	}
	if to, ok := a.trimTo(); ok {
		p.XTrimMinID(ctx, s.cfg.Stream, ID(to))
	}
}

// trimTo is where a TrimAcked source's commit trims the stream (XTRIM
// MINID: the entry at to stays), ok false not at all. Entries are
// delivered and acknowledged in stream order by the one lease holder,
// which re-delivers its predecessors' pending entries first: everything
// up to the last acknowledged is consumed. But the next reader of the
// stream starts where Config.Applied says, and rewind reports a lost
// range when the entry there is gone: so the trim stops at the store's
// applied offset as Config.KeptFloor bounds it. On one Redis server that
// is the committed offset, at or above the last acknowledged entry; on a
// Redis Cluster store it is the replay floor, up to a second or so of
// entries behind, and a trim past it made every graceful hand-over of a
// repartition shard (a node stopped, its shards taken over) stop the
// taker with a lost range the store never lost (docs/guides/producers.md,
// TestClusterRepartitionedGracefulStops). The entry kept is the one the
// rewind check looks for: a store that really lost writes sees it gone.
func (a ack) trimTo() (int64, bool) {
	s := a.s
	if !s.cfg.TrimAcked {
		return 0, false
	}
	if s.cfg.KeptFloor == nil {
		return a.last, true
	}
	floor, ok := s.cfg.KeptFloor(s.cfg.partition)
	if !ok {
		return 0, false
	}
	return min(a.last, floor), true
}

// acked drops the first n delivered entries, acknowledged.
func (s *Source) acked(n int) {
	// Only Commit removes entries and Commits are serialised, so the first n
	// are still the ones acknowledged; Read may have appended more since.
	s.mu.Lock()
	s.mu.unacked = append(s.mu.unacked[:0:0], s.mu.unacked[n:]...)
	s.mu.Unlock()
}

// unackedCount is how many delivered entries are not acknowledged yet.
func (s *Source) unackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.unacked)
}

// forget drops the last n delivered entries from the unacknowledged ones:
// they were read but never handed to the caller (a sharded source stopped
// reading the shard); they stay pending in the group, for the next reader.
func (s *Source) forget(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.unacked = s.mu.unacked[:max(0, len(s.mu.unacked)-n)]
}
