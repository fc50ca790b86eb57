package redisstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// MaxShards bounds Config.Shards.
const MaxShards = streamshard.MaxShards

// DefaultDrain is how long a sharded source waits, after it stops reading a
// shard it hands over, for the entries it delivered from that shard to be
// committed before it releases the shard's lease anyway (what is left
// pending is claimed and re-delivered by the next holder).
const DefaultDrain = 30 * time.Second

// ShardStream is the stream key of shard i of stream: "stream.i"
// (streamshard.Stream).
func ShardStream(stream string, i int) string { return streamshard.Stream(stream, i) }

// ShardOf is the shard of a row among shards (streamshard.Of, which says
// which key a producer hashes).
func ShardOf(key []byte, shards int) int { return streamshard.Of(key, shards) }

// AssignShards assigns shards 0…shards-1 to members (streamshard.Assign):
// owner[i] is the member that should read shard i. With sources whose
// shards follow the join key, the key actors of shard i's key group are
// placed on owner[i] too (streamshard.KeyGroup).
func AssignShards(shards int, members []string) []string { return streamshard.Assign(shards, members) }

// FairShare is the most shards one of members live members reads:
// ceil(shards/members) (streamshard.FairShare).
func FairShare(shards, members int) int { return streamshard.FairShare(shards, members) }

// DefaultExpectWait is how long a sharded source with Config.Expect waits
// at most for the expected members before it takes shards.
const DefaultExpectWait = 5 * time.Second

// expectEvery is the rebalance period while a source waits for the
// expected members: it takes its shards at most this long after the last
// one registered.
const expectEvery = 50 * time.Millisecond

// Open opens the source cfg describes: New for one stream, NewSharded when
// cfg.Shards is set.
func Open(ctx context.Context, cfg Config) (sources.Source, error) {
	if cfg.Shards > 0 {
		return NewSharded(ctx, cfg)
	}
	return New(ctx, cfg)
}

// Sharded reads the shard streams of a sharded Redis Streams source (see
// Config.Shards): shard i is partition i. It reads the shards
// AssignShards gives this member, taking each one's lease as soon as it is
// free, plus orphans — shards whose lease stayed free for a whole lease
// period, their owner gone or not yet aware of them — up to its fair share.
// A shard it holds but no longer owns (a member joined) it hands over: it
// stops reading it, waits for what it delivered from it to be committed
// (up to DefaultDrain), and releases the lease, so the owner takes it at
// once. A shard whose lease it lost (it was paused past the lease) it drops.
//
// A manager goroutine registers the source and rebalances every
// min(Lease/3, 250ms), whether or not the caller reads (an ingest stalled
// on a dead node's keys keeps its registration and hands shards over).
// One goroutine, the pump, reads every held shard (joint.go: the shards
// past their start are read together, one round trip for all, and one
// XREAD waits on all of them) and hands their batches to Read, a round's
// worth buffered; Read returns the batches of every shard that has one
// ready, up to max entries: while the caller works, the shards' entries
// wait in Redis and the next round takes them all, so the batches grow
// with the load.
// Config.OnPartitions is called from the manager goroutine. Read and
// Commit may be called from different goroutines; Read is not called
// concurrently with itself.
type Sharded struct {
	cfg    Config
	client *redis.Client
	every  time.Duration // rebalance period
	drain  time.Duration

	items  chan shardItem // the pump's batches, a round's worth (one per shard) buffered
	next   *shardItem     // Read alone: an item taken from items and not returned yet
	max    atomic.Int64   // the max of the last Read, for the readers
	errs   chan error     // the manager's errors, for Read
	stop   chan struct{}  // closed by Close: the manager and the pump stop
	done   chan struct{}  // closed when the manager returned
	pumped chan struct{}  // closed when the pump (joint.go) returned
	taken  chan struct{}  // a shard was taken: the pump reads it at once

	mu struct {
		sync.Mutex
		shards map[int]*heldShard // held shards
		closed bool
	}
	freeSince map[int]time.Time // manager alone: when an unowned shard's lease was first seen free
	expectBy  time.Time         // manager alone: until when the source waits for Config.Expect members (zero: it no longer waits)
	closeOnce sync.Once
}

// heldShard is one shard this source holds the lease of.
type heldShard struct {
	i        int
	src      *Source
	stop     chan struct{} // closed (halt) to stop reading the shard
	halted   sync.Once
	done     chan struct{} // closed (finish) once the pump no longer reads the shard
	finished sync.Once
	draining time.Time   // when the hand-over started; zero while reading (Sharded.mu)
	lost     atomic.Bool // the pump saw ErrLeaseLost

	// The pump alone: after an error, when the shard is read again.
	retryAt time.Time
	retries int
}

// halt stops reading h (idempotent).
func (h *heldShard) halt() { h.halted.Do(func() { close(h.stop) }) }

// finish says the pump no longer reads h (idempotent).
func (h *heldShard) finish() { h.finished.Do(func() { close(h.done) }) }

type shardItem struct {
	shard int
	msgs  []sources.Message
	err   error
}

var _ sources.Source = (*Sharded)(nil)

// NewSharded connects, creates the shard streams and their group when
// missing, and returns a source reading the shards. cfg.Shards must be
// positive. It does not write into cfg.
func NewSharded(ctx context.Context, cfg Config) (*Sharded, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Shards <= 0 {
		return nil, fmt.Errorf("redisstream: NewSharded of %s: Shards must be positive", cfg.Stream)
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Stream
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Block == 0 {
		cfg.Block = DefaultBlock
	}
	if cfg.Member == "" {
		cfg.Member = cfg.Consumer
	}
	if cfg.StartID == "" {
		cfg.StartID = "0"
	}
	client := newClient(cfg)
	for i := range cfg.Shards {
		if err := createGroup(ctx, client, ShardStream(cfg.Stream, i), cfg.Group, cfg.StartID); err != nil {
			_ = client.Close()
			return nil, err
		}
	}
	s := &Sharded{cfg: cfg, client: client, every: min(max(cfg.Lease/3, 10*time.Millisecond), 250*time.Millisecond),
		drain: DefaultDrain, items: make(chan shardItem, cfg.Shards), errs: make(chan error, 1),
		stop: make(chan struct{}), done: make(chan struct{}), pumped: make(chan struct{}), taken: make(chan struct{}, 1),
		freeSince: map[int]time.Time{}}
	s.mu.shards = map[int]*heldShard{}
	s.max.Store(512)
	if cfg.Expect > 1 {
		wait := cfg.ExpectWait
		if wait == 0 {
			wait = DefaultExpectWait
		}
		s.expectBy = time.Now().Add(wait)
	}
	go s.manage()
	go s.pump()
	return s, nil
}

// manage rebalances every s.every until Close. An error (Redis
// unreachable, say) is handed to Read, once, and the next round retries.
func (s *Sharded) manage() {
	defer close(s.done)
	ctx, cancel := s.stopContext()
	defer cancel()
	t := time.NewTimer(s.every)
	defer t.Stop()
	for {
		s.finishDrains()
		if err := s.rebalance(ctx); err != nil && ctx.Err() == nil {
			if transient(err) {
				err = sources.Transient(err)
			}
			select {
			case s.errs <- err:
			default: // Read has not taken the last one yet
			}
		}
		next := s.every
		if !s.expectBy.IsZero() {
			// Waiting for the expected members: notice the last one
			// soon, at the cost of a registration per round.
			next = min(next, expectEvery)
		}
		t.Reset(next)
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// stopContext is a context that ends at Close.
func (s *Sharded) stopContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Held returns the shards this source holds the lease of, reading or
// handing over, in order.
func (s *Sharded) Held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, 0, len(s.mu.shards))
	for i := range s.mu.shards {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// ReadersKey is the sorted set where the sharded sources of stream's group
// register (member -> until when, in Redis server ms): the members that
// read the shards, among which they are spread.
func ReadersKey(stream, group string) string {
	return "{" + stream + "}:joinery:readers:" + stream + ":" + group
}

// registerScript registers ARGV[1] as a reader for ARGV[2] ms (Redis's
// clock, so members' clocks do not matter), drops the expired ones and
// returns the live readers.
var registerScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], 10 * tonumber(ARGV[2]))
return redis.call('ZRANGE', KEYS[1], 0, -1)
`)

// members registers this member as a reader for a lease period and
// returns the fleet the shards are spread over: the registered readers
// (a node that does not run this source never registers) that Config.Members
// reports live, this member included.
func (s *Sharded) members(ctx context.Context) ([]string, error) {
	readers, err := registerScript.Run(ctx, s.client, []string{ReadersKey(s.cfg.Stream, s.cfg.Group)},
		s.cfg.Member, s.cfg.Lease.Milliseconds()).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("redisstream: register reader of %s: %w", s.cfg.Stream, err)
	}
	if s.cfg.Members != nil {
		live := s.cfg.Members()
		readers = slices.DeleteFunc(readers, func(m string) bool { return !slices.Contains(live, m) })
	}
	if !slices.Contains(readers, s.cfg.Member) {
		readers = append(readers, s.cfg.Member)
	}
	return dedup(readers), nil
}

// Read returns the next batches of the held shards that have one ready,
// up to max entries (at least one shard's batch), each shard's in its
// stream order (so offsets grow strictly per partition), or an empty slice
// and a nil error when none arrived within Config.Block. Errors of a shard
// or of the rebalancing (a transient one marked sources.Transient) are
// returned as they come, never with entries; ctx.Err() when ctx ends,
// ErrClosed after Close.
func (s *Sharded) Read(ctx context.Context, max int) ([]sources.Message, error) {
	if max <= 0 {
		max = 1
	}
	s.max.Store(int64(max))
	if s.isClosed() {
		return nil, ErrClosed
	}
	it, ok := s.ready()
	if !ok {
		t := time.NewTimer(s.cfg.Block)
		defer t.Stop()
		select {
		case it = <-s.items:
		case err := <-s.errs:
			return nil, err
		case <-t.C:
			return []sources.Message{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	msgs := it.msgs
	for len(msgs) < max {
		more, ok := s.ready()
		if !ok {
			break
		}
		if more.err != nil || len(msgs)+len(more.msgs) > max {
			s.next = &more // for the next Read
			break
		}
		msgs = append(msgs, more.msgs...)
	}
	return msgs, nil
}

// ready returns the item a shard reader has ready, without waiting (the
// one the last Read left first).
func (s *Sharded) ready() (shardItem, bool) {
	if it := s.next; it != nil {
		s.next = nil
		return *it, true
	}
	select {
	case it := <-s.items:
		return it, true
	default:
		return shardItem{}, false
	}
}

// rebalance compares the held shards with this member's assignment (once
// Config.Expect members are there, or the wait for them is over): it
// takes the free leases of the shards it owns (announcing that it waits
// for those held by others), hands over a shard it holds but does not own
// once its owner waits for it, and takes, up to its fair share, orphans:
// shards whose lease stayed free for a whole lease period.
func (s *Sharded) rebalance(ctx context.Context) error {
	members, err := s.members(ctx)
	if err != nil {
		return err
	}
	if !s.expectBy.IsZero() {
		if len(members) < s.cfg.Expect && time.Now().Before(s.expectBy) {
			return nil // registered; the expected members are not all there yet
		}
		s.expectBy = time.Time{}
	}
	owner := AssignShards(s.cfg.Shards, members)
	limit := FairShare(s.cfg.Shards, len(members))
	s.mu.Lock()
	held := make(map[int]bool, len(s.mu.shards))
	var foreign []*heldShard // held, reading, owned by another member
	for i, h := range s.mu.shards {
		held[i] = true
		if h.draining.IsZero() && owner[i] != s.cfg.Member {
			foreign = append(foreign, h)
		}
	}
	s.mu.Unlock()
	if len(foreign) > 0 {
		waiting, err := s.waiters(ctx, foreign)
		if err != nil {
			return err
		}
		for k, h := range foreign {
			if waiting[k] == owner[h.i] {
				s.handOver(h)
			}
		}
	}
	var orphans []int
	var blocked []int // owned, held by another member
	for i := range s.cfg.Shards {
		if held[i] {
			continue
		}
		if owner[i] != s.cfg.Member {
			orphans = append(orphans, i)
			continue
		}
		ok, err := s.take(ctx, i)
		if err != nil {
			return err
		}
		if !ok {
			blocked = append(blocked, i)
		}
	}
	if err := s.wait(ctx, blocked); err != nil {
		return err
	}
	if len(orphans) == 0 || s.readingCount() >= limit {
		return nil
	}
	free, err := s.freeLeases(ctx, orphans)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, i := range orphans {
		if !free[i] {
			delete(s.freeSince, i)
			continue
		}
		since, seen := s.freeSince[i]
		if !seen {
			s.freeSince[i] = now
			continue
		}
		if now.Sub(since) < s.cfg.Lease || s.readingCount() >= limit {
			continue
		}
		if ok, err := s.take(ctx, i); err != nil {
			return err
		} else if ok {
			delete(s.freeSince, i)
		}
	}
	return nil
}

func dedup(ms []string) []string { return streamshard.Dedup(ms) }

// waitKey names the member waiting for the lease of shard stream (in the
// stream's hash slot, as the lease).
func (s *Sharded) waitKey(i int) string {
	return LeaseKey(ShardStream(s.cfg.Stream, i), s.cfg.Group) + ":wait"
}

// wait announces that this member waits for the leases of shards, for a
// lease period: their holders hand them over.
func (s *Sharded) wait(ctx context.Context, shards []int) error {
	if len(shards) == 0 {
		return nil
	}
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, i := range shards {
			p.Set(ctx, s.waitKey(i), s.cfg.Member, s.cfg.Lease)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstream: announce wait for shards of %s: %w", s.cfg.Stream, err)
	}
	return nil
}

// waiters returns, for each of hs, the member waiting for its lease ("" none).
func (s *Sharded) waiters(ctx context.Context, hs []*heldShard) ([]string, error) {
	cmds := make([]*redis.StringCmd, len(hs))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, h := range hs {
			cmds[k] = p.Get(ctx, s.waitKey(h.i))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstream: read waiters for shards of %s: %w", s.cfg.Stream, err)
	}
	out := make([]string, len(hs))
	for k, c := range cmds {
		out[k] = c.Val()
	}
	return out, nil
}

func (s *Sharded) readingCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.mu.shards {
		if h.draining.IsZero() {
			n++
		}
	}
	return n
}

// freeLeases reports which of shards have no lease holder, in one round trip.
func (s *Sharded) freeLeases(ctx context.Context, shards []int) (map[int]bool, error) {
	cmds := make([]*redis.IntCmd, len(shards))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, i := range shards {
			cmds[k] = p.Exists(ctx, LeaseKey(ShardStream(s.cfg.Stream, i), s.cfg.Group))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redisstream: check leases of %s: %w", s.cfg.Stream, err)
	}
	free := make(map[int]bool, len(shards))
	for k, i := range shards {
		free[i] = cmds[k].Val() == 0
	}
	return free, nil
}

// take acquires shard i's lease if it is free and starts reading the shard.
func (s *Sharded) take(ctx context.Context, i int) (bool, error) {
	cfg := s.cfg
	cfg.Stream = ShardStream(s.cfg.Stream, i)
	cfg.Shards, cfg.Members, cfg.OnPartitions = 0, nil, nil
	cfg.partition = int32(i)
	src := newWith(cfg, s.client)
	src.shared, src.noWait = true, true // the pump waits for every shard at once
	src.cfg.Name = s.cfg.Name
	ok, err := src.lease.tryAcquire(ctx, s.client, s.cfg.Consumer)
	if err != nil || !ok {
		return false, err
	}
	h := &heldShard{i: i, src: src, stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		_ = src.Close()
		return false, ErrClosed
	}
	s.mu.shards[i] = h
	s.mu.Unlock()
	if s.cfg.OnPartitions != nil {
		s.cfg.OnPartitions([]int32{int32(i)}, nil)
	}
	select {
	case s.taken <- struct{}{}:
	default:
	}
	return true, nil
}

// handOver stops reading h; finishDrains releases its lease once what was
// delivered from it is committed.
func (s *Sharded) handOver(h *heldShard) {
	s.mu.Lock()
	if !h.draining.IsZero() {
		s.mu.Unlock()
		return
	}
	h.draining = time.Now()
	s.mu.Unlock()
	h.halt()
}

// finishDrains releases the leases of the shards handed over whose
// delivered entries are all committed (or that waited DefaultDrain), and
// drops the shards whose lease another member took.
func (s *Sharded) finishDrains() {
	s.mu.Lock()
	var done []*heldShard
	for i, h := range s.mu.shards {
		if h.draining.IsZero() && !h.lost.Load() {
			continue
		}
		select {
		case <-h.done:
		default:
			continue
		}
		if h.lost.Load() || h.src.unackedCount() == 0 || time.Since(h.draining) > s.drain {
			done = append(done, h)
			delete(s.mu.shards, i)
		}
	}
	s.mu.Unlock()
	for _, h := range done {
		s.release(h)
	}
}

// release closes h's source, which releases the lease if still held, and
// reports the shard revoked.
func (s *Sharded) release(h *heldShard) {
	_ = h.src.Close()
	if s.cfg.OnPartitions != nil {
		s.cfg.OnPartitions(nil, []int32{int32(h.i)})
	}
}

// Commit acknowledges, per shard, every entry delivered up to the offset
// committed for the shard's partition (see Source.Commit), every shard's in
// one round trip. Positions of other sources, and of shards this source no
// longer holds, are ignored: their entries stay pending for the shard's
// next holder to re-deliver.
func (s *Sharded) Commit(ctx context.Context, upTo []record.Position) error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	byShard := map[int]*Source{}
	offset := map[int]int64{}
	for _, p := range upTo {
		if p.Source != s.cfg.Name {
			continue
		}
		if p.Partition < 0 || int(p.Partition) >= s.cfg.Shards {
			s.mu.Unlock()
			return fmt.Errorf("redisstream: commit %v: source %s has partitions 0..%d", p, s.cfg.Name, s.cfg.Shards-1)
		}
		i := int(p.Partition)
		if h := s.mu.shards[i]; h != nil {
			byShard[i] = h.src
			if o, ok := offset[i]; !ok || p.Offset > o {
				offset[i] = p.Offset
			}
		}
	}
	s.mu.Unlock()
	// Each shard's commits are serialised (commitMu, taken in shard order).
	order := slices.Sorted(maps.Keys(byShard))
	var acks []ack
	for _, i := range order {
		src := byShard[i]
		src.commitMu.Lock()
		defer src.commitMu.Unlock()
		a, err := src.prepareAck(offset[i])
		if errors.Is(err, ErrClosed) {
			continue // released meanwhile: its entries stay pending
		}
		if err != nil {
			return err
		}
		if a.n > 0 {
			acks = append(acks, a)
		}
	}
	if len(acks) == 0 {
		return nil
	}
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, a := range acks {
			a.queue(ctx, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstream: ack entries of %d shards of %s: %w", len(acks), s.cfg.Stream, err)
	}
	for _, a := range acks {
		a.s.acked(a.n)
	}
	return nil
}

func (s *Sharded) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

// Close stops every reader, releases every lease (entries delivered and
// not committed stay pending, for the next holder) and closes the
// connection pool. It is idempotent.
func (s *Sharded) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.mu.closed = true
		held := s.mu.shards
		s.mu.shards = map[int]*heldShard{}
		s.mu.Unlock()
		close(s.stop)
		<-s.done
		s.mu.Lock()
		for _, h := range s.mu.shards { // taken while the manager stopped
			held[h.i] = h
		}
		s.mu.shards = map[int]*heldShard{}
		s.mu.Unlock()
		for _, h := range held {
			h.halt()
		}
		<-s.pumped
		for _, h := range held {
			h.finish()
			_ = h.src.Close()
		}
		// Leave the readers at once, so the others take the shards over
		// without waiting for the registration to lapse.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.client.ZRem(ctx, ReadersKey(s.cfg.Stream, s.cfg.Group), s.cfg.Member).Err()
		cancel()
		if err = s.client.Close(); err != nil {
			err = fmt.Errorf("redisstream: close: %w", err)
		}
	})
	return err
}
