package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// DefaultTxnTimeout is the transaction timeout of a transactional source
// (Config.TxnTimeout): how long the brokers keep a transaction open before
// they abort it. It bounds a transaction of a producer that died (the
// partitions' next owner waits meanwhile: its offset fetch is refused while
// the transaction is pending, and read_committed consumers of the sink's
// topic stall at it), unless the producer comes back with the same
// transactional id, which aborts it at once. It must outlast a live
// transaction: its writes (the node bounds them to 30 s) and its end, which
// waits for a rebalance in progress to complete before it commits the
// offsets (franz-go commits no offsets during a join) — up to the group's
// RebalanceTimeout, by which the group removes a member that did not
// rejoin, one killed -9 included.
// A shorter timeout lets the brokers abort a transaction whose owner is
// alive and waiting on the rebalance, which fences its producer for good
// (PRODUCER_FENCED at its offset commit) and stops the surviving node.
const DefaultTxnTimeout = 2 * time.Minute

// txnEndTimeout bounds the end of one transaction (flush, offset commit
// after a rebalance in progress, heartbeat, EndTxn): past the group's
// RebalanceTimeout, by which the brokers complete any join, and within
// the transaction timeout. The end is not cut short by the caller's
// context: a cancelled EndTxn leaves the producer in an unknown state.
const txnEndTimeout = RebalanceTimeout + 15*time.Second

// minTxnTimeout is the shortest Config.TxnTimeout: a transaction that
// writes for txnWriteBudget and ends within txnEndTimeout is not aborted
// by the brokers.
const minTxnTimeout = txnWriteBudget + txnEndTimeout

// txnWriteBudget is the time a transaction's writes may take before its
// end within the transaction timeout (the node bounds them to 30 s).
const txnWriteBudget = 30 * time.Second

// transactional reports whether s runs Kafka transactions
// (Config.TransactionalID).
func (s *Source) transactional() bool { return s.sess != nil }

// txnOptions are the client options of a transactional source: the
// transactional producer of Config.TransactionalID, and read_committed
// fetches (inputs written in transactions are read once committed).
func txnOptions(cfg Config) []kgo.Opt {
	timeout := cfg.TxnTimeout
	if timeout == 0 {
		timeout = DefaultTxnTimeout
	}
	return []kgo.Opt{
		kgo.TransactionalID(cfg.TransactionalID),
		kgo.TransactionTimeout(timeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
	}
}

// TxnClient is the transactional producer of the transaction in progress:
// the Kafka sink and dead-letter output write into it (tx in Transact's
// write function is the Source).
func (s *Source) TxnClient() *kgo.Client { return s.client }

// TxnBrokers are the seed brokers of the transaction's cluster: a writer
// checks that it writes to the same cluster.
func (s *Source) TxnBrokers() []string { return s.cfg.Brokers }

// Epoch counts the transactions that aborted (sources.Transactional).
func (s *Source) Epoch() uint64 { return s.epoch.Load() }

var _ sources.Transactional = (*Source)(nil)

// Transact runs one Kafka transaction (sources.Transactional): it begins
// it, calls write (which produces into s.TxnClient()), and ends it with a
// commit of the offsets after upTo — of the partitions this member owns
// and delivered them during the current ownership, never backwards, as
// Commit — carried by the transaction (TxnOffsetCommit, fenced by the
// group's generation: a member the group moved on from cannot commit). A
// rebalance since the transaction began, a failed write or a refused
// offset commit aborts it: the partitions still owned go back to their
// last committed offsets (the first offset delivered where none was
// committed), Epoch grows, and the error matches sources.ErrAborted. Read
// is held while the transaction ends (franz-go's transaction end must not
// run alongside a poll).
func (s *Source) Transact(ctx context.Context, upTo []record.Position, write func(ctx context.Context, tx any) error) error {
	if !s.transactional() {
		return fmt.Errorf("kafka: source %s is not transactional", s.cfg.Name)
	}
	s.mu.Lock()
	closed := s.mu.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	began, revokes := time.Now(), s.revokes.Load()
	if err := s.sess.Begin(); err != nil {
		return fmt.Errorf("kafka: source %s: begin a transaction: %w", s.cfg.Name, err)
	}
	werr := write(ctx, s)

	// End the transaction with the poll held off: wake the poll in
	// progress, and Read does not start another while txWaiting is set.
	s.txWaiting.Add(1)
	s.mu.Lock()
	if s.mu.wake != nil {
		s.mu.wake()
	}
	s.mu.Unlock()
	s.txMu.Lock()
	s.txWaiting.Add(-1)
	defer s.txMu.Unlock()

	want := make(map[int32]int64)
	for _, p := range upTo {
		if p.Source != s.cfg.Name {
			continue
		}
		if cur, ok := want[p.Partition]; !ok || p.Offset > cur {
			want[p.Partition] = p.Offset
		}
	}
	offsets := make(map[int32]kgo.EpochOffset)
	s.mu.Lock()
	for part, off := range want {
		p := s.mu.owned[part]
		if p == nil || p.lo < 0 || off < p.lo || off > p.hi || off+1 <= p.committed {
			continue
		}
		offsets[part] = kgo.EpochOffset{Epoch: p.epochOf(off), Offset: off + 1}
	}
	s.mu.Unlock()
	var meta string
	if s.cfg.Lineage != nil {
		meta = s.cfg.Lineage()
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), txnEndTimeout)
	defer cancel()
	ectx = kgo.PreTxnCommitFnContext(ectx, func(req *kmsg.TxnOffsetCommitRequest) error {
		// Commit exactly the offsets of upTo, not everything polled.
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = s.cfg.Topic
		for _, rt := range req.Topics {
			if rt.Topic == s.cfg.Topic {
				t.TopicID = rt.TopicID
			}
		}
		m := meta
		if m == "" {
			m = req.MemberID
		}
		for part, eo := range offsets {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = part, eo.Offset, eo.Epoch, &m
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = nil
		if len(t.Partitions) > 0 {
			req.Topics = append(req.Topics, t)
		}
		return nil
	})
	committed, err := s.sess.End(ectx, kgo.TransactionEndTry(werr == nil))
	if committed && err == nil {
		s.mu.Lock()
		for part, eo := range offsets {
			if p := s.mu.owned[part]; p != nil && eo.Offset > p.committed {
				p.committed = eo.Offset
			}
		}
		if len(offsets) > 0 {
			s.progressedLocked()
		}
		s.mu.Unlock()
		return nil
	}
	// Aborted (or its end unknown): every partition still owned goes back
	// to what its group committed, so what this transaction covered is
	// read again.
	s.rewindAborted()
	s.epoch.Add(1)
	took := time.Since(began).Round(time.Millisecond)
	if err != nil {
		return fmt.Errorf("kafka: source %s: end the transaction (after %v): %w", s.cfg.Name, took, err)
	}
	why := werr
	switch {
	case why != nil:
	case s.revokes.Load() != revokes:
		why = errors.New("a rebalance took the partitions during it")
	default:
		why = errors.New("the group refused the offset commit (a rebalance moved its generation on)")
	}
	return fmt.Errorf("kafka: source %s: %w after %v: %w", s.cfg.Name, sources.ErrAborted, took, why)
}

// rewindAborted sets every owned partition that delivered records since
// its last commit back to its committed offset (the first offset it
// delivered in this ownership when it committed none), and forgets what
// was delivered: the next Read delivers those records again. txMu is held
// (no poll runs).
func (s *Source) rewindAborted() {
	set := map[int32]kgo.EpochOffset{}
	s.mu.Lock()
	for part, p := range s.mu.owned {
		if p.lo < 0 {
			continue
		}
		at := p.lo
		if p.committed >= 0 {
			at = p.committed
		}
		set[part] = kgo.EpochOffset{Epoch: -1, Offset: at}
		p.lo, p.hi, p.epochs = -1, -1, nil
	}
	s.mu.Unlock()
	if len(set) > 0 {
		s.client.SetOffsets(map[string]map[int32]kgo.EpochOffset{s.cfg.Topic: set})
	}
}
