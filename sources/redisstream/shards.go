package redisstream

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/streamshard"
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
