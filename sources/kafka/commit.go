package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/record"
)

// Commit commits, for each partition of this source in upTo, the offset after
// the given position (the group's next offset to read), in one synchronous
// OffsetCommit carrying the record's leader epoch and, as each partition's
// metadata, Config.Lineage.
//
// A partition is committed only while this member owns it and only for an
// offset it delivered during the current ownership: when a partition was
// revoked or lost since its records were read, Commit skips it silently (nil
// error) and its uncommitted records are delivered again to the partition's
// new owner. Commit never moves a committed offset backwards. Positions of
// other sources are ignored. A transactional source refuses: its offsets
// go in transactions (Transact). A failed commit leaves the offsets uncommitted;
// a later Commit retries them.
func (s *Source) Commit(ctx context.Context, upTo []record.Position) error {
	if s.transactional() {
		return fmt.Errorf("kafka: source %s is transactional: its offsets are committed by Transact", s.cfg.Name)
	}
	want := make(map[int32]int64)
	for _, p := range upTo {
		if p.Source != s.cfg.Name {
			continue
		}
		if cur, ok := want[p.Partition]; !ok || p.Offset > cur {
			want[p.Partition] = p.Offset
		}
	}
	if len(want) == 0 {
		return nil
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	offsets := make(map[int32]kgo.EpochOffset)
	for part, off := range want {
		p := s.mu.owned[part]
		if p == nil || p.lo < 0 || off < p.lo || off > p.hi || off+1 <= p.committed {
			continue
		}
		offsets[part] = kgo.EpochOffset{Epoch: p.epochOf(off), Offset: off + 1}
	}
	s.mu.Unlock()
	if len(offsets) == 0 {
		return nil
	}
	if s.cfg.Lineage != nil {
		if l := s.cfg.Lineage(); l != "" {
			ctx = kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
				for i := range req.Topics {
					for j := range req.Topics[i].Partitions {
						req.Topics[i].Partitions[j].Metadata = &l
					}
				}
				return nil
			})
		}
	}
	var errs []error
	done := make(map[int32]bool, len(offsets))
	s.client.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{s.cfg.Topic: offsets},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				errs = append(errs, err)
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						errs = append(errs, fmt.Errorf("partition %d: %w", p.Partition, err))
						continue
					}
					done[p.Partition] = true
				}
			}
		})
	// The revoke callback waits for commitMu, so owned entries are the
	// ones the offsets were taken from.
	s.mu.Lock()
	for part := range done {
		if p := s.mu.owned[part]; p != nil {
			p.committed = offsets[part].Offset
			// Forget epoch changes no later commit can need.
			i := 0
			for i+1 < len(p.epochs) && p.epochs[i+1].from <= offsets[part].Offset-1 {
				i++
			}
			p.epochs = p.epochs[i:]
		}
	}
	if len(done) > 0 {
		s.progressedLocked() // a revoke may be waiting for these
	}
	s.mu.Unlock()
	if len(errs) > 0 {
		return fmt.Errorf("kafka: commit %s: %w", s.cfg.Topic, errors.Join(errs...))
	}
	return nil
}
