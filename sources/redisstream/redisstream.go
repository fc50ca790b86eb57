package redisstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/sources"
)

// DefaultBlock is how long Read waits for new entries when Config.Block is 0.
const DefaultBlock = 200 * time.Millisecond

// DefaultClaimMinIdle is how long an entry must have been pending on another
// consumer before this one claims it, when Config.ClaimMinIdle is 0.
const DefaultClaimMinIdle = 30 * time.Second

const (
	seqBits = 20
	maxSeq  = 1<<seqBits - 1
	maxMs   = 1<<(63-seqBits) - 1
	// ackChunk bounds the IDs of one XACK command.
	ackChunk = 1000
	// claimCount bounds the entries of one XAUTOCLAIM at start.
	claimCount = 1000
)

// ErrClosed is returned by Read and Commit after Close.
var ErrClosed = errors.New("redisstream: source closed")

// Source reads a Redis stream through a consumer group. Read and Commit may
// be called from different goroutines; Read is not called concurrently with
// itself.
type Source struct {
	cfg    Config
	client *redis.Client
	shared bool   // client belongs to a sharded source: Close leaves it open
	noWait bool   // Read never waits for new entries (a sharded source's pump waits for all its shards)
	lease  *lease // nil: no lease (Config.Lease negative)

	// State touched by Read alone.
	rewound      bool             // the check against the store's offset ran (rewind.go)
	startClaimed bool             // the claim at start ran
	pendingDone  bool             // this consumer's pending entries have been re-read
	pendingFrom  string           // next ID to re-read pending entries from
	delivered    bool             // lastOffset is set
	lastOffset   int64            // offset of the last entry delivered
	claimFrom    string           // where a periodic claim scan resumes; "" none
	nextClaim    time.Time        // when the next periodic claim scan starts
	rewoundTo    int64            // after a rewind: the group's last delivered offset before it; -1 none
	tombstones   []delivered      // deleted pending entries found at start
	queue        []redis.XMessage // entries to deliver before reading more
	waitFrom     string           // readLeased: wait for entries after this ID before reading; "" read first
	waitReported bool             // OnPartitions was told this source waits

	commitMu sync.Mutex // serialises Commit
	mu       struct {
		sync.Mutex
		unacked []delivered // in delivery (= stream) order
		closed  bool
	}
	closeOnce sync.Once
}

var _ sources.Source = (*Source)(nil)

// New connects, creates the stream and the group if missing (XGROUP CREATE …
// MKSTREAM) and returns a source. It does not write into cfg. A sharded
// config (Shards > 0) is an error here: use NewSharded or Open.
func New(ctx context.Context, cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Shards > 0 {
		return nil, fmt.Errorf("redisstream: %s has %d shards: open it with NewSharded", cfg.Stream, cfg.Shards)
	}
	client := newClient(cfg)
	src, err := newOn(ctx, cfg, client)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	return src, nil
}

func newClient(cfg Config) *redis.Client {
	return cfg.Client()
}

// newOn is New on an existing client, which the source does not close.
func newOn(ctx context.Context, cfg Config, client *redis.Client) (*Source, error) {
	if cfg.Name == "" {
		cfg.Name = cfg.Stream
	}
	if cfg.Block == 0 {
		cfg.Block = DefaultBlock
	}
	if cfg.StartID == "" {
		cfg.StartID = "0"
	}
	if cfg.ClaimMinIdle == 0 {
		cfg.ClaimMinIdle = DefaultClaimMinIdle
	}
	if err := createGroup(ctx, client, cfg.Stream, cfg.Group, cfg.StartID); err != nil {
		return nil, err
	}
	return newWith(cfg, client), nil
}

// newWith makes a source of cfg (defaults applied, group created) on client.
func newWith(cfg Config, client *redis.Client) *Source {
	if cfg.Block == 0 {
		cfg.Block = DefaultBlock
	}
	if cfg.ClaimMinIdle == 0 {
		cfg.ClaimMinIdle = DefaultClaimMinIdle
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	src := &Source{cfg: cfg, client: client, pendingFrom: "0", rewoundTo: -1}
	if cfg.Lease > 0 {
		src.lease = &lease{ttl: cfg.Lease}
		src.lease.key, src.lease.epochKey = leaseKeys(cfg.Stream, cfg.Group)
	}
	return src
}

// createGroup creates stream and its group when missing.
func createGroup(ctx context.Context, client *redis.Client, stream, group, startID string) error {
	err := client.XGroupCreateMkStream(ctx, stream, group, startID).Err()
	// Redis reports an existing group only by the error text "BUSYGROUP
	// Consumer Group name already exists"; redis.HasErrorPrefix checks that
	// prefix on a typed Redis error reply, not on arbitrary error text.
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return fmt.Errorf("redisstream: create group %s on %s: %w", group, stream, err)
	}
	return nil
}

func (s *Source) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

// Close closes the connection pool. Unacknowledged entries stay pending in
// the group and are re-delivered when a source with the same Consumer name
// starts. It is idempotent.
func (s *Source) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.mu.closed = true
		s.mu.Unlock()
		if s.lease != nil {
			s.lease.release(s.client)
		}
		if !s.shared {
			err = s.client.Close()
		}
	})
	if err != nil {
		return fmt.Errorf("redisstream: close: %w", err)
	}
	return nil
}
