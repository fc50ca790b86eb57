package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/sources"
)

// ErrClosed is returned by Read and Commit after Close.
var ErrClosed = errors.New("kafka: source closed")

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
		// progress is closed (and replaced) when a commit moves an owned
		// partition's committed offset, and at Close: a revoke waits on it.
		progress chan struct{}
		// revoking, when set (tests), is called when a revoke starts
		// waiting for the commits of the partitions it takes away.
		revoking func(parts []int32)
	}
	// sess is the transact session of a transactional source
	// (Config.TransactionalID; txn.go), whose client is client; nil
	// otherwise. txMu is held by Read across a poll and by Transact across
	// a transaction's end, which must not overlap; txWaiting counts the
	// ends waiting for it (Read polls no more meanwhile). epoch counts the
	// aborted transactions (Message.Epoch); revokes counts the revokes
	// and losses of partitions (an abort names a rebalance by it).
	sess      *kgo.GroupTransactSession
	txMu      sync.Mutex
	txWaiting atomic.Int32
	epoch     atomic.Uint64
	revokes   atomic.Uint64
	// stop ends expect at Close, which waits for expectDone (nil: no
	// expect goroutine).
	stop       chan struct{}
	expectDone chan struct{}
	closeOnce  sync.Once
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
	s := &Source{cfg: cfg, ready: make(chan struct{}), stop: make(chan struct{})}
	s.mu.owned = make(map[int32]*owned)
	s.mu.progress = make(chan struct{})
	// Waiting for Config.Expect members: the client consumes no topic, so
	// it does not join the group, until expect adds Topic.
	hold := cfg.Expect > 1 && cfg.Members != nil
	opts := ClientOptions(cfg.Brokers, cfg.ClientID, cfg.TLS, cfg.SASL)
	if !hold {
		opts = append(opts, kgo.ConsumeTopics(cfg.Topic))
	}
	opts = append(opts,
		kgo.ConsumerGroup(cfg.Group),
		kgo.RebalanceTimeout(RebalanceTimeout), // Config.RevokeWait is checked against it
		kgo.SessionTimeout(SessionTimeout),
		kgo.ConsumeResetOffset(reset),
		kgo.DisableAutoCommit(),
		// Read records what it delivered before a revoke can run: polls and
		// rebalance callbacks exclude each other until AllowRebalance.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
	)
	if cfg.KeyGroups {
		opts = append(opts, kgo.Balancers(KeyGroupBalancer(cfg.Member)))
	}
	if cfg.Applied != nil {
		opts = append(opts, kgo.OnOffsetsFetched(s.fetched), kgo.AdjustFetchOffsetsFn(s.rewind))
	}
	var client *kgo.Client
	var err error
	if cfg.TransactionalID != "" {
		opts = append(opts, txnOptions(cfg)...)
		if s.sess, err = kgo.NewGroupTransactSession(append(opts, extra...)...); err == nil {
			client = s.sess.Client()
		}
	} else {
		client, err = kgo.NewClient(append(opts, extra...)...)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: client: %w", err)
	}
	if err := client.Ping(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("kafka: connect to %v: %w", cfg.Brokers, err)
	}
	if s.sess != nil {
		// Fence the previous incarnation of the transactional id now, as
		// Kafka Streams' initTransactions does: InitProducerID aborts a
		// transaction it left open (killed mid-transaction), which
		// otherwise holds every read_committed consumer of the outputs at
		// its first record until the brokers time it out — or until this
		// incarnation first writes, which waits for the group to give it
		// partitions (a dead member's session timeout).
		if _, _, err := client.ProducerID(ctx); err != nil {
			client.Close()
			return nil, fmt.Errorf("kafka: source %s: fence the previous incarnation of transactional id %s: %w", cfg.Name, cfg.TransactionalID, err)
		}
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
	if hold {
		s.expectDone = make(chan struct{})
		go s.expect()
	}
	return s, nil
}

// expectEvery is how often a source waiting for Config.Expect members
// looks at Members.
const expectEvery = 50 * time.Millisecond

// expect joins the group (adds Topic to the client's consumed topics) once
// Config.Members lists Config.Expect members or Config.ExpectWait has
// passed, unless Close comes first. Close waits for it.
func (s *Source) expect() {
	defer close(s.expectDone)
	wait := s.cfg.ExpectWait
	if wait == 0 {
		wait = DefaultExpectWait
	}
	by := time.Now().Add(wait)
	t := time.NewTicker(expectEvery)
	defer t.Stop()
	for len(s.cfg.Members()) < s.cfg.Expect && time.Now().Before(by) {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
	s.client.AddConsumeTopics(s.cfg.Topic)
}

// Close leaves the group (its partitions are reassigned to the other members
// at once, from the committed offsets) and closes the client. Uncommitted
// records are delivered again to the partitions' next owners. It is
// idempotent.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.mu.closed = true
		s.progressedLocked() // a revoke waiting for commits gives up: none will come
		s.mu.Unlock()
		close(s.stop)
		if s.expectDone != nil {
			<-s.expectDone // it no longer adds the topic to a closed client
		}
		s.client.CloseAllowingRebalance()
	})
	return nil
}
