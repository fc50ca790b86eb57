package redisstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/record"
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

// Config configures a Redis Streams source. The zero value of an optional
// field means its default.
type Config struct {
	// Options are the connection to the Redis server: Addr (host:port)
	// is required; Username and Password authenticate (ACL or
	// requirepass); DB defaults to 0; TLS, when not nil, connects with
	// TLS; OnError, when set, is called for each failed Redis call
	// (redisopts.Failed): the node's joinery_redis_errors_total.
	redisopts.Options
	// Name is the source name, written to Position.Source. Default: Stream.
	Name string
	// Stream is the stream key. Required.
	Stream string
	// Group is the consumer group, created (with the stream) if missing.
	// Required.
	Group string
	// Consumer is this reader's name within the group. It must be stable
	// across restarts for pending entries to be re-delivered. Required.
	Consumer string
	// Block is how long one Read waits for new entries. Default DefaultBlock.
	Block time.Duration
	// StartID is where a newly created group starts: "0" (default) reads the
	// whole stream, "$" only entries added later. Ignored when the group
	// exists.
	StartID string
	// ClaimMinIdle is how long an entry must have been pending, read but not
	// acknowledged, on another consumer of the group (presumably dead)
	// before this one claims it (XAUTOCLAIM) and delivers it. Default
	// DefaultClaimMinIdle; negative disables claiming. See Read for when
	// claims happen.
	ClaimMinIdle time.Duration
	// Lease is how long this source's lease on the stream lasts unless
	// renewed (every Lease/3): one source of the group reads at a time,
	// the others wait and take over when the holder closes or its lease
	// runs out (see lease). Default DefaultLease. Negative: no lease, every
	// consumer reads at once — which delivers entries out of offset order
	// across consumers and breaks the key actors' skip rule; only for
	// tests of the claim machinery.
	Lease time.Duration
	// OnPartitions, when set, is told when this source starts reading the
	// stream (assigned [0], once it holds the lease) and, once, that it
	// waits for another holder (assigned and revoked empty). An event-time
	// ingest declares the stream's partition in its watermarks only while
	// it reads it. Called from Read; it must not call the Source. A
	// sharded source reports each shard it takes (assigned [i]) and gives
	// up (revoked [i]), from its manager goroutine.
	OnPartitions func(assigned, revoked []int32)

	// Shards, when positive, makes the source read the shard streams
	// Stream.0 … Stream.<Shards-1> (see ShardStream) instead of Stream:
	// one source with Shards partitions, shard i being partition i, each
	// with its own lease. Open it with NewSharded (or Open). Default 0:
	// the one stream Stream, partition 0.
	Shards int
	// Members, for a sharded source, returns the names of the live members
	// of the fleet (this one included); the shards are spread over them
	// (AssignShards). nil: this source is alone and reads every shard it
	// can lease.
	Members func() []string
	// Member is this source's name among Members. Default Consumer.
	Member string
	// Expect, for a sharded source, is how many members the fleet is
	// started with (the job's cluster.expect): until that many are live
	// and registered as readers of the shards, or ExpectWait passes since
	// NewSharded, the source registers but takes no shard, so that a
	// fleet started together spreads its shards at once instead of
	// handing over what its first member took. 0: no wait.
	Expect int
	// ExpectWait bounds the wait for Expect members (0: DefaultExpectWait).
	ExpectWait time.Duration

	// Applied, when set, gives the last offset of the stream's partition
	// that the state store has applied (its committed offset; ok false:
	// none). lineage is what the group's last Commit wrote beside it
	// (Lineage, in LineageKey; "" none): the caller compares it with the
	// store's, and when the store went back in time since, may answer
	// offset -1, ok true — the store applied nothing of the stream (it was
	// restarted empty). When the group has already delivered entries past
	// the applied offset that are no longer pending — the store lost writes
	// whose entries were acknowledged (docs/operations.md, "Rollback
	// detection") — the first Read moves the group back (XGROUP SETID; to
	// 0-0 for -1) so that those entries are read again; the key actors skip
	// what they already hold. Where the stream no longer holds them
	// (trimmed or deleted), Read fails with a *LostRangeError.
	Applied func(ctx context.Context, partition int32, lineage string) (offset int64, ok bool, err error)
	// Lineage, when set, gives the state store's lineage the caller
	// committed the offsets with (persistence.Lineage's String form; ""
	// none): every Commit writes it to LineageKey after its XACKs, and the
	// next source of the group hands it to Applied.
	Lineage func() string

	// RepartitionTo, for a sharded source, is the base name of the
	// repartition streams its records are written to
	// (streamshard.RepartitionStream; see Sharded.Repartition); "" none.
	RepartitionTo string
	// TrimAcked trims the stream at every Commit up to the last entry it
	// acknowledged, which stays (XTRIM MINID): for a stream only this
	// group consumes, such as the repartition streams.
	TrimAcked bool

	// partition is the partition of the stream's positions: 0, or the
	// shard index when a sharded source opened this one.
	partition int32
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct{ name, v string }{
		{"Addr", c.Addr}, {"Stream", c.Stream}, {"Group", c.Group}, {"Consumer", c.Consumer},
	} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("redisstream: %s is required", f.name))
		}
	}
	if c.Block < 0 {
		errs = append(errs, fmt.Errorf("redisstream: Block %v is negative", c.Block))
	}
	if c.DB < 0 {
		errs = append(errs, fmt.Errorf("redisstream: DB %d is negative", c.DB))
	}
	if c.Lease > 0 && c.Lease < 30*time.Millisecond {
		errs = append(errs, fmt.Errorf("redisstream: Lease %v is below 30ms", c.Lease))
	}
	if c.Shards < 0 || c.Shards > MaxShards {
		errs = append(errs, fmt.Errorf("redisstream: Shards %d is not in 0..%d", c.Shards, MaxShards))
	}
	if c.Expect < 0 || c.ExpectWait < 0 {
		errs = append(errs, fmt.Errorf("redisstream: Expect %d and ExpectWait %v must not be negative", c.Expect, c.ExpectWait))
	}
	if c.Shards > 0 && c.Lease < 0 {
		errs = append(errs, errors.New("redisstream: a sharded source needs leases (Lease must not be negative)"))
	}
	return errors.Join(errs...)
}

// Offset converts a stream entry ID "ms-seq" into the offset ms<<20 | seq.
// It fails for malformed IDs, seq >= 2^20 and ms >= 2^43.
func Offset(id string) (int64, error) {
	msText, seqText, ok := strings.Cut(id, "-")
	if !ok {
		return 0, fmt.Errorf("redisstream: malformed entry id %q", id)
	}
	ms, err1 := strconv.ParseUint(msText, 10, 64)
	seq, err2 := strconv.ParseUint(seqText, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("redisstream: malformed entry id %q", id)
	}
	if seq > maxSeq || ms > maxMs {
		return 0, fmt.Errorf("redisstream: entry id %q out of range (seq < 2^%d, ms < 2^%d)", id, seqBits, 63-seqBits)
	}
	return int64(ms<<seqBits | seq), nil
}

// ID is the inverse of Offset.
func ID(offset int64) string {
	return strconv.FormatInt(offset>>seqBits, 10) + "-" + strconv.FormatInt(offset&maxSeq, 10)
}

// delivered is an entry handed out by Read and not yet acknowledged.
type delivered struct {
	id     string
	offset int64
}

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
	if s.cfg.TrimAcked {
		// Entries are delivered and acknowledged in stream order by the
		// one lease holder, which re-delivers its predecessors' pending
		// entries first: everything up to the last acknowledged is
		// consumed. That last one stays: it is the store's committed
		// offset, which the next reader's rewind check looks for (a
		// store that lost writes then sees its own entry gone).
		p.XTrimMinID(ctx, s.cfg.Stream, ID(a.last))
	}
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

// holdLease makes sure this source holds the stream's lease before it
// reads: it takes it when free, and otherwise waits a little (up to Block or
// a tenth of the lease) and reports false. ErrLeaseLost when another source
// took it from this one.
func (s *Source) holdLease(ctx context.Context) (bool, error) {
	held, lost := s.lease.held()
	if lost {
		return false, ErrLeaseLost
	}
	if held {
		return true, nil
	}
	ok, err := s.lease.tryAcquire(ctx, s.client, s.cfg.Consumer)
	if err != nil {
		return false, s.readErr(ctx, err)
	}
	if ok {
		if s.cfg.OnPartitions != nil {
			s.cfg.OnPartitions([]int32{0}, nil)
		}
		return true, nil
	}
	if !s.waitReported && s.cfg.OnPartitions != nil {
		s.cfg.OnPartitions(nil, nil)
	}
	s.waitReported = true
	t := time.NewTimer(max(s.cfg.Block, s.cfg.Lease/10))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-t.C:
		return false, nil
	}
}

// readLeased reads new entries with the lease checked in the same script;
// when there are none it waits up to Block for the stream to grow (a plain
// XREAD, which reads nothing for the group) and tries once more. After a
// read that found fewer than max entries (it took what there was) the next
// one waits first, from the last entry delivered: a shard that keeps up
// pays a wait and a read per batch, not an empty read besides.
func (s *Source) readLeased(ctx context.Context, max int) ([]sources.Message, error) {
	if from := s.waitFrom; from != "" {
		s.waitFrom = ""
		err := s.client.XRead(ctx, &redis.XReadArgs{Streams: []string{s.cfg.Stream, from}, Count: 1, Block: s.cfg.Block}).Err()
		if errors.Is(err, redis.Nil) {
			s.waitFrom = from
			return []sources.Message{}, nil
		}
		if err != nil {
			return nil, s.readErr(ctx, fmt.Errorf("redisstream: wait for %s: %w", s.cfg.Stream, err))
		}
	}
	for try := 0; ; try++ {
		entries, lastID, lost, err := s.lease.read(ctx, s.client, s.cfg.Stream, s.cfg.Group, s.cfg.Consumer, max)
		switch {
		case err != nil:
			return nil, s.readErr(ctx, err)
		case lost:
			return nil, ErrLeaseLost
		case len(entries) > 0:
			if len(entries) < max && !s.noWait {
				s.waitFrom = entries[len(entries)-1].ID
			}
			return s.deliver(entries)
		case try > 0 || s.noWait:
			return []sources.Message{}, nil
		}
		err = s.client.XRead(ctx, &redis.XReadArgs{Streams: []string{s.cfg.Stream, lastID}, Count: 1, Block: s.cfg.Block}).Err()
		if errors.Is(err, redis.Nil) {
			return []sources.Message{}, nil
		}
		if err != nil {
			return nil, s.readErr(ctx, fmt.Errorf("redisstream: wait for %s: %w", s.cfg.Stream, err))
		}
	}
}
