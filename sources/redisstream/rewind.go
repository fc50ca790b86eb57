package redisstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/sources"
)

// LostRangeError says that stream entries whose state the store lost can no
// longer be read again: the stream deleted or trimmed some of them.
type LostRangeError struct {
	Source    string
	Stream    string
	Partition int32
	// After is the store's applied offset, -1 when it applied nothing (it
	// was restarted empty). Of the entries after it, those up to Through
	// (an entry ID: some were deleted) or, after a trim, those before
	// Before (the first entry the stream still holds; "" none) are gone.
	After           int64
	Through, Before string
}

// Is makes the error match sources.ErrLostRange.
func (e *LostRangeError) Is(target error) bool { return target == sources.ErrLostRange }

func (e *LostRangeError) Error() string {
	gone := "deleted entries up to " + e.Through
	switch {
	case e.Before != "":
		gone = "trimmed every entry before " + e.Before
	case e.Through == "":
		gone = "trimmed every entry"
	}
	what := "the entries of " + e.Stream + " (partition " + strconv.Itoa(int(e.Partition)) + ") after " + ID(e.After)
	if e.After < 0 {
		what = "every entry of " + e.Stream + " (partition " + strconv.Itoa(int(e.Partition)) + "): it was restarted empty"
	}
	return fmt.Sprintf("redisstream: source %s: the state store lost %s, and the stream %s: they cannot be applied again",
		e.Source, what, gone)
}

// rewind runs once, before the first delivery: it hands Config.Applied the
// lineage the group's last Commit wrote (LineageKey), and when Applied says
// the store is behind entries the group delivered and that are no longer
// pending (acknowledged), it acknowledges the pending entries the store
// already applied, moves the group's last delivered ID back to the store's
// offset (0-0 when the store applied nothing) and skips the pending re-read
// and the claim at start, so that every entry after the store's offset —
// pending or acknowledged — comes again, once and in order, from the
// group's new entries.
func (s *Source) rewind(ctx context.Context) error {
	if s.cfg.Applied == nil {
		return nil
	}
	lineage, err := s.client.Get(ctx, LineageKey(s.cfg.Stream, s.cfg.Group)).Result()
	if errors.Is(err, redis.Nil) {
		lineage, err = "", nil
	}
	if err != nil {
		return fmt.Errorf("redisstream: lineage of %s group %s: %w", s.cfg.Stream, s.cfg.Group, err)
	}
	applied, ok, err := s.cfg.Applied(ctx, s.cfg.partition, lineage)
	if err != nil {
		return fmt.Errorf("redisstream: source %s: the store's offset of %s: %w", s.cfg.Name, s.cfg.Stream, err)
	}
	if !ok {
		return nil
	}
	applied = max(applied, -1) // -1: nothing applied
	groups, err := s.client.XInfoGroups(ctx, s.cfg.Stream).Result()
	if err != nil {
		return fmt.Errorf("redisstream: groups of %s: %w", s.cfg.Stream, err)
	}
	last := int64(-1)
	for _, g := range groups {
		if g.Name == s.cfg.Group {
			if last, err = Offset(g.LastDeliveredID); err != nil {
				return err
			}
		}
	}
	if last <= max(applied, 0) {
		return nil // the group delivered nothing the store has not applied (0-0: nothing at all)
	}
	// The first entry after the store's offset: pending means nothing past
	// it was acknowledged (acknowledgements follow the store's commits in
	// order), and the pending re-read and claims deliver it as usual.
	next, err := s.client.XRangeN(ctx, s.cfg.Stream, ID(applied+1), ID(last), 1).Result()
	if err != nil {
		return fmt.Errorf("redisstream: range of %s: %w", s.cfg.Stream, err)
	}
	info, err := s.client.XInfoStream(ctx, s.cfg.Stream).Result()
	if err != nil {
		return fmt.Errorf("redisstream: info of %s: %w", s.cfg.Stream, err)
	}
	lost := func(through, before string) error {
		return &LostRangeError{Source: s.cfg.Name, Stream: s.cfg.Stream, Partition: s.cfg.partition, After: applied, Through: through, Before: before}
	}
	// XDEL records the highest deleted ID; a trim does not, but a trim that
	// took the store's own entry took whatever followed it up to the
	// stream's first entry.
	if deleted, err := Offset(info.MaxDeletedEntryID); err == nil && deleted > max(applied, 0) && deleted <= last {
		return lost(info.MaxDeletedEntryID, "")
	}
	if applied < 0 && info.EntriesAdded > info.Length {
		// The store needs every entry, and the stream removed some: by
		// trims (the group read from the first, so it delivered at least
		// that one) or by XDEL after the group's position, which cannot
		// be told apart from those.
		if deleted, err := Offset(info.MaxDeletedEntryID); err == nil && deleted > 0 {
			return lost(info.MaxDeletedEntryID, info.FirstEntry.ID)
		}
		return lost("", info.FirstEntry.ID)
	}
	if first, err := Offset(info.FirstEntry.ID); err == nil && applied >= 0 && first > applied+1 {
		own, err := s.client.XRangeN(ctx, s.cfg.Stream, ID(applied), ID(applied), 1).Result()
		if err != nil {
			return fmt.Errorf("redisstream: range of %s: %w", s.cfg.Stream, err)
		}
		if len(own) == 0 {
			return lost("", info.FirstEntry.ID)
		}
	}
	if len(next) == 0 {
		return nil
	}
	pend, err := s.client.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s.cfg.Stream, Group: s.cfg.Group,
		Start: next[0].ID, End: next[0].ID, Count: 1}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redisstream: pending of %s: %w", s.cfg.Stream, err)
	}
	if len(pend) > 0 {
		return nil
	}
	// Entries the store applied but nobody acknowledged are done with.
	for applied >= 0 {
		old, err := s.client.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: s.cfg.Stream, Group: s.cfg.Group,
			Start: "-", End: ID(applied), Count: claimCount}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("redisstream: pending of %s: %w", s.cfg.Stream, err)
		}
		if len(old) == 0 {
			break
		}
		ids := make([]string, len(old))
		for i, p := range old {
			ids[i] = p.ID
		}
		if err := s.client.XAck(ctx, s.cfg.Stream, s.cfg.Group, ids...).Err(); err != nil {
			return fmt.Errorf("redisstream: ack %s: %w", s.cfg.Stream, err)
		}
	}
	to := "0-0"
	if applied >= 0 {
		to = ID(applied)
	}
	if err := s.client.XGroupSetID(ctx, s.cfg.Stream, s.cfg.Group, to).Err(); err != nil {
		return fmt.Errorf("redisstream: move group %s of %s back to %s: %w", s.cfg.Group, s.cfg.Stream, to, err)
	}
	// Every entry after applied, pending ones included (XREADGROUP > hands
	// a pending entry to its new reader), now comes as a new entry. The
	// pending ones, up to last, must wait for the new entries to reach
	// them: the periodic claim would deliver those idle past ClaimMinIdle
	// (the node that left them took that long to stop, say) ahead of the
	// rewound range, and the key actors that took them first would skip
	// the range. So no claim runs until the source delivered last.
	s.startClaimed, s.tombstones = true, nil
	s.rewoundTo = last
	s.nextClaim = time.Now().Add(s.cfg.ClaimMinIdle / 2)
	s.endPending()
	return nil
}
