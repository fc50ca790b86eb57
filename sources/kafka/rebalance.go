package kafka

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/sources"
)

// LostRangeError says that the records a state store lost can no longer be
// read again: the topic's earliest record is past the first of them.
type LostRangeError struct {
	Source    string
	Topic     string
	Partition int32
	From, To  int64 // the lost offsets, inclusive
}

// Is makes the error match sources.ErrLostRange.
func (e *LostRangeError) Is(target error) bool { return target == sources.ErrLostRange }

func (e *LostRangeError) Error() string {
	return fmt.Sprintf("kafka: source %s: the state store lost offsets %d..%d of %s partition %d, which the topic no longer holds (retention): those records cannot be applied again",
		e.Source, e.From, e.To, e.Topic, e.Partition)
}

func (s *Source) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	s.mu.Lock()
	for _, p := range assigned[s.cfg.Topic] {
		s.mu.owned[p] = &owned{lo: -1, hi: -1, committed: -1}
	}
	closed := s.mu.closed
	s.mu.Unlock()
	mine := assigned[s.cfg.Topic]
	if mine == nil {
		mine = []int32{} // a rebalance that gave nothing: still reported
	}
	s.report(closed, mine, nil)
}

// fetched keeps the commit metadata of the partitions being assigned, for
// rewind (the client calls it just before, in the same goroutine).
func (s *Source) fetched(_ context.Context, _ *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
	meta := map[int32]string{}
	keep := func(topic string, partition int32, offset int64, metadata *string) {
		// "": named by topic id (v10); the source reads one topic.
		if (topic == s.cfg.Topic || topic == "") && metadata != nil && offset >= 0 {
			meta[partition] = *metadata
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			keep(t.Topic, p.Partition, p.Offset, p.Metadata)
		}
	}
	for _, g := range resp.Groups { // v8+: one group, the source's
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				keep(t.Topic, p.Partition, p.Offset, p.Metadata)
			}
		}
	}
	s.mu.Lock()
	s.mu.meta = meta
	s.mu.Unlock()
	return nil
}

// rewind moves the start of each newly assigned partition back to the
// record after the store's applied offset, where the group's committed
// position is past it (see Config.Applied). A partition whose first lost
// record is gone is left where it is, and the next Read fails with a
// *LostRangeError.
func (s *Source) rewind(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	parts := offsets[s.cfg.Topic]
	s.mu.Lock()
	meta := s.mu.meta
	s.mu.meta = nil
	s.mu.Unlock()
	var back []int32
	want := map[int32]int64{}
	for p, o := range parts {
		at := o.EpochOffset().Offset
		if at < 0 {
			continue // no committed position: the reset offset applies
		}
		applied, ok, err := s.cfg.Applied(ctx, p, meta[p])
		if err != nil {
			return nil, fmt.Errorf("kafka: source %s: the store's offset of partition %d: %w", s.cfg.Name, p, err)
		}
		if ok && applied+1 < at {
			back = append(back, p)
			want[p] = applied + 1
		}
	}
	if len(back) == 0 {
		return offsets, nil
	}
	starts, err := s.startOffsets(ctx, back)
	if err != nil {
		return nil, err
	}
	for _, p := range back {
		at := parts[p].EpochOffset().Offset
		if starts[p] > want[p] {
			s.mu.Lock()
			s.mu.readErr = &LostRangeError{Source: s.cfg.Name, Topic: s.cfg.Topic, Partition: p, From: want[p], To: min(starts[p], at) - 1}
			if s.mu.wake != nil {
				s.mu.wake()
			}
			s.mu.Unlock()
			continue
		}
		parts[p] = kgo.NewOffset().At(want[p]).WithEpoch(-1)
	}
	return offsets, nil
}

// startOffsets asks the partitions' leaders for their earliest offsets.
func (s *Source) startOffsets(ctx context.Context, parts []int32) (map[int32]int64, error) {
	return s.listOffsets(ctx, parts, -2)
}

// listOffsets asks the partitions' leaders for their earliest (ts -2) or
// end (ts -1: the high watermark) offsets.
func (s *Source) listOffsets(ctx context.Context, parts []int32, ts int64) (map[int32]int64, error) {
	select { // the group joins while New still pings the brokers
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = s.cfg.Topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, s.client)
	if err != nil {
		return nil, fmt.Errorf("kafka: source %s: list offsets: %w", s.cfg.Name, err)
	}
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("kafka: source %s: offset of partition %d: %w", s.cfg.Name, rp.Partition, err)
			}
			out[rp.Partition] = rp.Offset
		}
	}
	for _, p := range parts {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("kafka: source %s: no offset for partition %d", s.cfg.Name, p)
		}
	}
	return out, nil
}

// report calls Config.OnPartitions, outside the source's locks, unless the
// source is closed or it is a revocation of nothing. (The client calls
// onAssigned after every rebalance, even when it assigns nothing new, and
// onRevoked at the end of every group session.)
func (s *Source) report(closed bool, assigned, revoked []int32) {
	if s.cfg.OnPartitions == nil || closed || (assigned == nil && len(revoked) == 0) {
		return
	}
	if assigned == nil {
		assigned = []int32{}
	}
	slices.Sort(assigned)
	slices.Sort(revoked)
	s.cfg.OnPartitions(assigned, revoked)
}

// onRevoked runs when the group takes partitions from this member (a
// rebalance; the eager KeyGroupBalancer takes them all): before it lets
// them go it waits, up to Config.RevokeWait, for the records it already
// delivered from them to be committed (the caller's batches in flight
// complete and Commit, which still commits them as they are owned until
// here), so that their next owner resumes after them rather than reading
// them again. The group's rebalance waits meanwhile (the member rejoins
// when this returns). Then it releases them as onLost does.
//
// A transactional source does not wait: the revoke aborts the transaction
// in progress (kgo.GroupTransactSession; Transact), and the partitions'
// next owner reads again from the last committed transaction's offsets.
func (s *Source) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	if !s.transactional() {
		s.awaitCommits(ctx, revoked[s.cfg.Topic])
	}
	s.onLost(ctx, cl, revoked)
}

// onLost runs for lost partitions (session expired, fenced: they can no
// longer be committed) and at the end of onRevoked: they are no longer
// committed by this member. It waits for a commit in flight.
func (s *Source) onLost(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	s.revokes.Add(1)
	s.commitMu.Lock()
	s.mu.Lock()
	for _, p := range revoked[s.cfg.Topic] {
		delete(s.mu.owned, p)
	}
	closed := s.mu.closed
	s.mu.Unlock()
	s.commitMu.Unlock()
	s.report(closed, nil, revoked[s.cfg.Topic])
}

// awaitCommits waits until every record delivered from parts during their
// ownership is committed, Config.RevokeWait passes, ctx ends or the source
// is closed (nothing more is committed then).
func (s *Source) awaitCommits(ctx context.Context, parts []int32) {
	wait := s.cfg.RevokeWait
	if wait == 0 {
		wait = DefaultRevokeWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	hooked := false
	for {
		s.mu.Lock()
		if s.mu.closed || s.committedAllLocked(parts) {
			s.mu.Unlock()
			return
		}
		progress, hook := s.mu.progress, s.mu.revoking
		s.mu.Unlock()
		if !hooked && hook != nil {
			hooked = true
			hook(parts)
		}
		select {
		case <-progress:
		case <-timer.C:
			if s.cfg.OnRevokeTimeout != nil {
				s.cfg.OnRevokeTimeout(slices.Clone(parts), wait)
			}
			return // released with what was committed: the rest is read again
		case <-ctx.Done():
			return
		}
	}
}

// committedAllLocked reports whether every record delivered from the owned
// partitions among parts was committed. s.mu is held.
func (s *Source) committedAllLocked(parts []int32) bool {
	for _, p := range parts {
		if o := s.mu.owned[p]; o != nil && o.lo >= 0 && o.committed <= o.hi {
			return false
		}
	}
	return true
}

// progressedLocked wakes a revoke waiting for commits. s.mu is held.
func (s *Source) progressedLocked() {
	close(s.mu.progress)
	s.mu.progress = make(chan struct{})
}
