package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/connopts/kafkaopts"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// Start offsets accepted in Config.StartOffset.
const (
	StartCommitted = "committed"
	StartEarliest  = "earliest"
	StartLatest    = "latest"
)

// DefaultClientID is the Kafka client id when Config.ClientID is empty.
const DefaultClientID = kafkaopts.DefaultClientID

// ErrClosed is returned by Read and Commit after Close.
var ErrClosed = errors.New("kafka: source closed")

// Config configures a Kafka source. The zero value of an optional field means
// its default.
type Config struct {
	// Name is the source name, written to Position.Source. Default: Topic.
	Name string
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string
	// Topic is the topic read. Required.
	Topic string
	// Group is the consumer group. Required.
	Group string
	// StartOffset is where a partition without a committed offset in Group
	// starts: "committed" (default) and "earliest" start at its first
	// record, "latest" at its end (only records produced later). A committed
	// offset always wins, so a restart or a rebalance never skips or re-reads
	// committed records; to read a topic again, use a new Group.
	StartOffset string
	// ClientID is the Kafka client id. Default DefaultClientID.
	ClientID string
	// TLS, when set, connects with TLS. It is cloned, not retained.
	TLS *tls.Config
	// SASL, when set, authenticates with SASL/PLAIN or SCRAM.
	SASL *SASL
	// OnPartitions, when set, is told of this member's assignment of Topic:
	// after each rebalance, the partitions it gains (assigned, possibly none:
	// the first call tells a member that got no partition so), and when it
	// gives partitions up, those (revoked, or lost with the group session). An event-time
	// ingest declares the assigned partitions in its watermarks, so that each
	// holds the watermark back from its assignment rather than from its first
	// record, and removes the revoked ones. It is called from the client's
	// group goroutine, never concurrently with itself, for assigned
	// partitions before any of their records is fetched, and not after Close
	// (the leaving member's partitions are not reported revoked: its watermark
	// stays as it was). It must not call the Source; it must not block long
	// (the group waits for it). The slices are sorted.
	OnPartitions func(assigned, revoked []int32)
	// Applied, when set, gives the last offset of a partition that the state
	// store has applied (its committed offset; ok false: none). lineage is
	// what the group's commit of the partition carried (Lineage; "" none):
	// the caller compares it with the store's, and when the store went
	// back in time since, may answer offset -1, ok true — the store applied
	// nothing of the partition (it was restarted empty). When the group's
	// committed position is past the applied offset — the store lost writes
	// whose records the group had already acknowledged (docs/operations.md,
	// "Rollback detection") — the partition is read again from the record
	// after it (from its beginning, for -1), so the lost range is applied
	// again; the key actors skip what they already hold. Where the topic no
	// longer holds that record (retention), Read fails with a
	// *LostRangeError.
	Applied func(ctx context.Context, partition int32, lineage string) (offset int64, ok bool, err error)
	// Lineage, when set, gives the state store's lineage the caller
	// committed the offsets with (persistence.Lineage's String form; ""
	// none): every Commit writes it as the commit metadata of each
	// partition it commits, and the next assignment of the partition hands
	// it to Applied.
	Lineage func() string
	// KeyGroups reads Topic as co-partitioned with the join
	// (sources[].partitioned_by: join_key): the group's partitions are
	// assigned by KeyGroupBalancer, partition p to the owner of key group p
	// among the members' Member names, and every record is checked to be in
	// the partition Kafka's default partitioner puts its key in (Read fails
	// with a *MisplacedError otherwise). All members of Group must set it.
	KeyGroups bool
	// Member is this member's Joinery member name, carried in its group
	// metadata for KeyGroupBalancer. Default: the group member ID.
	Member string
	// PartitionKey, with KeyGroups, is the record key template of a join
	// key (kafka.partition_key): a record whose key it does not write
	// (OfTemplate) fails Read with a *MisplacedError naming it. "": not
	// checked.
	PartitionKey string
}

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

// Validate reports every problem with c at once, naming each field.
func (c Config) Validate() error {
	var errs []error
	if err := ValidateBrokers(c.Brokers); err != nil {
		errs = append(errs, err)
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("kafka: Topic is required"))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("kafka: Group is required"))
	}
	switch c.StartOffset {
	case "", StartCommitted, StartEarliest, StartLatest:
	default:
		errs = append(errs, fmt.Errorf("kafka: StartOffset %q is not committed, earliest or latest", c.StartOffset))
	}
	if err := c.SASL.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// epochAt says that the delivered records of a partition from offset from on
// were written under leader epoch epoch.
type epochAt struct {
	from  int64
	epoch int32
}

// owned is what this member knows of a partition during one ownership: from
// its assignment until it is revoked or lost.
type owned struct {
	lo, hi    int64     // first and last offsets delivered; lo < 0 when none
	epochs    []epochAt // leader epoch changes among delivered records
	committed int64     // last offset committed (as next offset); -1 none
}

func (p *owned) epochOf(offset int64) int32 {
	e := int32(-1)
	for _, x := range p.epochs {
		if x.from > offset {
			break
		}
		e = x.epoch
	}
	return e
}

// Source reads one Kafka topic as a member of a consumer group. Read and
// Commit may be called from different goroutines; Read is not called
// concurrently with itself.
type Source struct {
	cfg    Config
	client *kgo.Client
	ready  chan struct{} // closed once client is set: the group may call rewind before New returns

	// commitMu is held across a commit round trip and by the revoke and
	// lost callbacks, so a partition is never committed after this member
	// learnt it lost it. Lock order: commitMu, then mu.
	commitMu sync.Mutex
	// partitions is Topic's partition count with KeyGroups (0 without).
	partitions int
	mu         struct {
		sync.Mutex
		owned   map[int32]*owned // partitions currently assigned
		meta    map[int32]string // the group's commit metadata of the partitions being assigned
		closed  bool
		readErr error  // a fetch error held back while records were returned
		wake    func() // ends the poll in progress (a rewind's error is held)
	}
	closeOnce sync.Once
}

var _ sources.Source = (*Source)(nil)

// New checks cfg, connects (a metadata request to the seed brokers must
// succeed within ctx) and joins Group. It does not write into cfg.
func New(ctx context.Context, cfg Config) (*Source, error) {
	return newSource(ctx, cfg)
}

// newSource is New with extra franz-go options, for tests.
func newSource(ctx context.Context, cfg Config, extra ...kgo.Opt) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Topic
	}
	if cfg.ClientID == "" {
		cfg.ClientID = DefaultClientID
	}
	reset := kgo.NewOffset().AtStart()
	if cfg.StartOffset == StartLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	s := &Source{cfg: cfg, ready: make(chan struct{})}
	s.mu.owned = make(map[int32]*owned)
	opts := append(ClientOptions(cfg.Brokers, cfg.ClientID, cfg.TLS, cfg.SASL),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeResetOffset(reset),
		kgo.DisableAutoCommit(),
		// Read records what it delivered before a revoke can run: polls and
		// rebalance callbacks exclude each other until AllowRebalance.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onRevoked),
	)
	if cfg.KeyGroups {
		opts = append(opts, kgo.Balancers(KeyGroupBalancer(cfg.Member)))
	}
	if cfg.Applied != nil {
		opts = append(opts, kgo.OnOffsetsFetched(s.fetched), kgo.AdjustFetchOffsetsFn(s.rewind))
	}
	client, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: client: %w", err)
	}
	if err := client.Ping(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("kafka: connect to %v: %w", cfg.Brokers, err)
	}
	if cfg.KeyGroups {
		counts, err := topicPartitions(ctx, client, []string{cfg.Topic})
		if err != nil {
			client.Close()
			return nil, fmt.Errorf("kafka: source %s: %w", cfg.Name, err)
		}
		s.partitions = counts[cfg.Topic]
	}
	s.client = client
	close(s.ready) // the group's callbacks may use s.client from here on
	return s, nil
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

// onRevoked runs for revoked and for lost partitions: they are no longer
// committed by this member. It waits for a commit in flight.
func (s *Source) onRevoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
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

// Read blocks until records are available and returns up to max of them, in
// offset order within each partition; the caller owns their Values (nil for
// a record with a null value). It returns ctx.Err() when ctx ends and
// ErrClosed after Close. Retryable broker errors are retried by the client;
// other fetch errors are returned (after the records fetched with them). It
// never returns io.EOF.
func (s *Source) Read(ctx context.Context, max int) ([]sources.Message, error) {
	if max <= 0 {
		max = 1
	}
	for {
		s.mu.Lock()
		closed, held := s.mu.closed, s.mu.readErr
		s.mu.readErr = nil
		s.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		if held != nil {
			return nil, held
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pctx, wake := context.WithCancel(ctx)
		s.mu.Lock()
		s.mu.wake = wake
		s.mu.Unlock()
		fetches := s.client.PollRecords(pctx, max) // woken early by a rewind's error
		wake()
		msgs, err := s.take(ctx, fetches)
		s.client.AllowRebalance()
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
	}
}

// take converts polled records to messages and notes, per owned partition,
// what was delivered. It runs before AllowRebalance, so no revoke interleaves.
func (s *Source) take(ctx context.Context, fetches kgo.Fetches) ([]sources.Message, error) {
	var fetchErr error
	closed := false
	fetches.EachError(func(topic string, partition int32, err error) {
		var loss *kgo.ErrDataLoss
		switch {
		case errors.Is(err, kgo.ErrClientClosed):
			closed = true
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			// ctx ended: reported below.
		case errors.As(err, &loss), kerr.IsRetriable(err):
			// Informational or retried by the client.
		default:
			if fetchErr == nil {
				fetchErr = fmt.Errorf("kafka: fetch %s/%d: %w", topic, partition, err)
			}
		}
	})
	msgs := make([]sources.Message, 0, fetches.NumRecords())
	var misplaced error
	s.mu.Lock()
	defer s.mu.Unlock()
	fetches.EachRecord(func(r *kgo.Record) {
		if misplaced != nil {
			return // not delivered: read again after the error is dealt with
		}
		if s.partitions > 0 {
			if want := Partition(r.Key, s.partitions); want != int(r.Partition) {
				misplaced = &MisplacedError{Source: s.cfg.Name, Topic: r.Topic, Partition: r.Partition, Want: int32(want),
					Offset: r.Offset, Partitions: s.partitions, Key: r.Key}
				return
			}
			if t := s.cfg.PartitionKey; t != "" && !OfTemplate(t, r.Key) {
				misplaced = &MisplacedError{Source: s.cfg.Name, Topic: r.Topic, Partition: r.Partition, Want: r.Partition,
					Offset: r.Offset, Partitions: s.partitions, Key: r.Key, Template: t}
				return
			}
		}
		msgs = append(msgs, sources.Message{
			Pos:   record.Position{Source: s.cfg.Name, Partition: r.Partition, Offset: r.Offset},
			Value: r.Value,
		})
		p := s.mu.owned[r.Partition]
		if p == nil {
			return // polled across a loss: delivered, never committed here
		}
		if p.lo < 0 {
			p.lo = r.Offset
		}
		p.hi = r.Offset
		if n := len(p.epochs); n == 0 || p.epochs[n-1].epoch != r.LeaderEpoch {
			p.epochs = append(p.epochs, epochAt{from: r.Offset, epoch: r.LeaderEpoch})
		}
	})
	if misplaced != nil && fetchErr == nil {
		fetchErr = misplaced
	}
	switch {
	case closed || s.mu.closed:
		if len(msgs) == 0 {
			return nil, ErrClosed
		}
	case len(msgs) == 0 && ctx.Err() != nil:
		return nil, ctx.Err()
	case fetchErr != nil && len(msgs) > 0:
		s.mu.readErr = fetchErr
	case fetchErr != nil:
		return nil, fetchErr
	}
	return msgs, nil
}

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
// other sources are ignored. A failed commit leaves the offsets uncommitted;
// a later Commit retries them.
func (s *Source) Commit(ctx context.Context, upTo []record.Position) error {
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
	s.mu.Unlock()
	if len(errs) > 0 {
		return fmt.Errorf("kafka: commit %s: %w", s.cfg.Topic, errors.Join(errs...))
	}
	return nil
}

// Close leaves the group (its partitions are reassigned to the other members
// at once, from the committed offsets) and closes the client. Uncommitted
// records are delivered again to the partitions' next owners. It is
// idempotent.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.mu.closed = true
		s.mu.Unlock()
		s.client.CloseAllowingRebalance()
	})
	return nil
}
