package redisstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// delivered is an entry handed out by Read and not yet acknowledged.
type delivered struct {
	id     string
	offset int64
}

// Read returns up to max entries in stream order; the caller owns their
// Values. Offsets grow strictly across the Reads of one Source.
//
// The first Read claims (XAUTOCLAIM) every entry pending longer than
// Config.ClaimMinIdle on other consumers of the group, so that the first
// calls re-deliver, in ID order, this consumer's pending entries (read before
// a restart but never acknowledged) together with the claimed ones. After
// that Read waits up to Config.Block for new entries and returns an empty
// slice and a nil error when none arrive, so the caller can check its
// context. Every ClaimMinIdle/2 it first claims entries pending longer than
// ClaimMinIdle on other consumers, and delivers them before new entries; to
// keep offsets growing, these periodic claims take only entries after the
// last one this source delivered (older ones stay pending for the next
// consumer that starts). It returns ctx.Err() when ctx ends and ErrClosed
// after Close. It never returns io.EOF.
func (s *Source) Read(ctx context.Context, max int) ([]sources.Message, error) {
	if max <= 0 {
		max = 1
	}
	if s.isClosed() {
		return nil, ErrClosed
	}
	if s.lease != nil {
		if ok, err := s.holdLease(ctx); !ok || err != nil {
			return []sources.Message{}, err
		}
	}
	if len(s.queue) > 0 {
		n := min(max, len(s.queue))
		entries := s.queue[:n:n]
		s.queue = s.queue[n:]
		return s.deliver(entries)
	}
	if !s.rewound {
		if err := s.rewind(ctx); err != nil {
			return nil, s.readErr(ctx, err)
		}
		s.rewound = true
	}
	if !s.startClaimed && (s.cfg.ClaimMinIdle > 0 || s.lease != nil) {
		if err := s.claimAtStart(ctx); err != nil {
			return nil, s.readErr(ctx, err)
		}
		s.startClaimed = true
		s.nextClaim = time.Now().Add(s.cfg.ClaimMinIdle / 2)
	}
	if s.rewoundTo >= 0 && s.delivered && s.lastOffset >= s.rewoundTo {
		s.rewoundTo = -1 // the new entries reached where the group was before the rewind
	}
	if s.pendingDone && s.rewoundTo < 0 && s.cfg.ClaimMinIdle > 0 && !time.Now().Before(s.nextClaim) {
		entries, err := s.claim(ctx, max)
		if err != nil {
			return nil, s.readErr(ctx, err)
		}
		if len(entries) > 0 {
			s.queue = entries
			return s.Read(ctx, max)
		}
	}
	args := &redis.XReadGroupArgs{
		Group:    s.cfg.Group,
		Consumer: s.cfg.Consumer,
		Count:    int64(max),
		Block:    -1, // pending reads never block
	}
	if s.pendingDone && s.lease != nil {
		return s.readLeased(ctx, max)
	}
	if s.pendingDone {
		args.Streams = []string{s.cfg.Stream, ">"}
		args.Block = s.cfg.Block
	} else {
		args.Streams = []string{s.cfg.Stream, s.pendingFrom}
	}
	streams, err := s.client.XReadGroup(ctx, args).Result()
	if errors.Is(err, redis.Nil) {
		if !s.pendingDone {
			s.endPending()
			return s.Read(ctx, max)
		}
		return []sources.Message{}, nil
	}
	if err != nil {
		return nil, s.readErr(ctx, fmt.Errorf("redisstream: read %s: %w", s.cfg.Stream, err))
	}
	var entries []redis.XMessage
	for _, st := range streams {
		entries = append(entries, st.Messages...)
	}
	if !s.pendingDone && len(entries) == 0 {
		s.endPending()
		return s.Read(ctx, max)
	}
	if !s.pendingDone {
		s.pendingFrom = entries[len(entries)-1].ID
		// Tombstones of entries deleted while pending go in ID order.
		last, err := Offset(s.pendingFrom)
		if err != nil {
			return nil, err
		}
		n := 0
		for n < len(s.tombstones) && s.tombstones[n].offset < last {
			n++
		}
		entries = mergeTombstones(entries, s.tombstones[:n])
		s.tombstones = s.tombstones[n:]
		s.queue = entries
		return s.Read(ctx, max)
	}
	return s.deliver(entries)
}

// endPending ends the re-read of pending entries: tombstones left are
// delivered next.
func (s *Source) endPending() {
	s.pendingDone = true
	s.queue = mergeTombstones(nil, s.tombstones)
	s.tombstones = nil
}

// mergeTombstones merges entries (in ID order) with entries deleted from the
// stream (in ID order), delivered with a nil Value.
func mergeTombstones(entries []redis.XMessage, gone []delivered) []redis.XMessage {
	if len(gone) == 0 {
		return entries
	}
	out := make([]redis.XMessage, 0, len(entries)+len(gone))
	i := 0
	for _, e := range entries {
		off, err := Offset(e.ID)
		for err == nil && i < len(gone) && gone[i].offset < off {
			out = append(out, redis.XMessage{ID: gone[i].id})
			i++
		}
		if err == nil && i < len(gone) && gone[i].offset == off {
			i++
		}
		out = append(out, e)
	}
	for ; i < len(gone); i++ {
		out = append(out, redis.XMessage{ID: gone[i].id})
	}
	return out
}

// tombstonesOf converts the deleted IDs an XAUTOCLAIM reported (in ID
// order); malformed IDs are dropped, deliver would reject them anyway.
func tombstonesOf(ids []string) []delivered {
	var out []delivered
	for _, id := range ids {
		if off, err := Offset(id); err == nil {
			out = append(out, delivered{id: id, offset: off})
		}
	}
	return out
}

// readErr prefers ctx.Err() and ErrClosed to err, and marks err transient
// (sources.Transient) when Redis is unreachable or not serving yet.
func (s *Source) readErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if s.isClosed() {
		return ErrClosed
	}
	if transient(err) {
		return sources.Transient(err)
	}
	return err
}

// transient reports whether err says Redis is unreachable (a network error,
// a closed or refused connection, no free connection) or not serving yet
// (loading its data, busy with a script, a failover under way): retrying
// the same call later may succeed.
func transient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// claimAtStart moves every entry pending longer than ClaimMinIdle on other
// consumers into this consumer's pending list; the pending re-read that
// follows delivers them in ID order with this consumer's own pending
// entries. XAUTOCLAIM drops the entries deleted from the stream from the
// group's pending list (Redis 7) and reports them: they become tombstones,
// delivered in ID order with a nil Value, as a pending re-read delivers them.
func (s *Source) claimAtStart(ctx context.Context) error {
	start := "0-0"
	minIdle := s.cfg.ClaimMinIdle
	if s.lease != nil {
		minIdle = 0 // the lease holder claims whatever its predecessors left pending
	}
	for {
		_, next, gone, err := s.client.XAutoClaimWithDeleted(ctx, &redis.XAutoClaimArgs{
			Stream: s.cfg.Stream, Group: s.cfg.Group, Consumer: s.cfg.Consumer,
			MinIdle: minIdle, Start: start, Count: claimCount,
		}).Result()
		if err != nil {
			return fmt.Errorf("redisstream: claim idle entries of %s: %w", s.cfg.Stream, err)
		}
		s.tombstones = append(s.tombstones, tombstonesOf(gone)...)
		if next == "0-0" {
			return nil
		}
		start = next
	}
}

// claim runs or continues a periodic claim scan of the entries after the
// last delivered one and returns up to max claimed entries, in ID order. When
// the scan reaches the end of the group's pending list, the next one starts
// ClaimMinIdle/2 later.
func (s *Source) claim(ctx context.Context, max int) ([]redis.XMessage, error) {
	start := "0-0"
	if s.delivered {
		start = ID(s.lastOffset + 1)
	}
	if s.claimFrom != "" {
		if from, err := Offset(s.claimFrom); err == nil && (!s.delivered || from > s.lastOffset) {
			start = s.claimFrom
		}
	}
	for {
		entries, next, gone, err := s.client.XAutoClaimWithDeleted(ctx, &redis.XAutoClaimArgs{
			Stream: s.cfg.Stream, Group: s.cfg.Group, Consumer: s.cfg.Consumer,
			MinIdle: s.cfg.ClaimMinIdle, Start: start, Count: int64(max),
		}).Result()
		if err != nil {
			return nil, fmt.Errorf("redisstream: claim idle entries of %s: %w", s.cfg.Stream, err)
		}
		entries = mergeTombstones(entries, tombstonesOf(gone))
		if next == "0-0" {
			s.claimFrom = ""
			s.nextClaim = time.Now().Add(s.cfg.ClaimMinIdle / 2)
			return entries, nil
		}
		s.claimFrom = next
		if len(entries) > 0 {
			return entries, nil
		}
		start = next
	}
}

// deliver converts entries (in ID order, after every entry delivered so far)
// to messages and records them as unacknowledged.
func (s *Source) deliver(entries []redis.XMessage) ([]sources.Message, error) {
	out := make([]sources.Message, 0, len(entries))
	ds := make([]delivered, 0, len(entries))
	for _, e := range entries {
		off, err := Offset(e.ID)
		if err != nil {
			return nil, err
		}
		var v []byte
		switch x := e.Values[streamshard.ValueField].(type) {
		case string:
			v = []byte(x)
		case []byte:
			v = append([]byte(nil), x...)
		}
		out = append(out, sources.Message{
			Pos:   record.Position{Source: s.cfg.Name, Partition: s.cfg.partition, Offset: off},
			Value: v,
		})
		ds = append(ds, delivered{id: e.ID, offset: off})
	}
	if n := len(ds); n > 0 {
		s.delivered, s.lastOffset = true, ds[n-1].offset
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	s.mu.unacked = append(s.mu.unacked, ds...)
	return out, nil
}
