package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/joinery/joinery/connopts/kafkaopts"
)

// Start offsets accepted in Config.StartOffset.
const (
	StartCommitted = "committed"
	StartEarliest  = "earliest"
	StartLatest    = "latest"
)

// DefaultClientID is the Kafka client id when Config.ClientID is empty.
const DefaultClientID = kafkaopts.DefaultClientID

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
	// whose records the group had already acknowledged (docs/operations/recovery.md,
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
	// the partition Kafka's default partitioner puts its key in (otherwise
	// Read delivers it with a sources.Reject carrying a *MisplacedError:
	// dead-lettered, never joined). All members of Group must set it.
	KeyGroups bool
	// Member is this member's Joinery member name, carried in its group
	// metadata for KeyGroupBalancer. Default: the group member ID.
	Member string
	// PartitionKey, with KeyGroups, is the record key template of a join
	// key (kafka.partition_key): a record whose key it does not write
	// (OfTemplate) is delivered with a sources.Reject carrying a
	// *MisplacedError naming it. "": not checked.
	PartitionKey string
	// RevokeWait bounds how long a revoke (a rebalance taking partitions
	// from this member) waits for the records already delivered from them
	// to be committed — the caller's batches in flight to complete and
	// Commit them — before the partitions are released, so that their new
	// owner resumes after them instead of reading them again. Past it the
	// partitions are released with what was committed, and the rest is
	// read again by the new owner (at least once). The group's rebalance
	// waits meanwhile, so it must be under the group's RebalanceTimeout
	// (past that the group removes the member); keep it well under.
	// 0: DefaultRevokeWait. Lost partitions (session expired, fenced)
	// cannot be committed and are released at once.
	RevokeWait time.Duration
	// OnRevokeTimeout, when set, is told the partitions a revoke released
	// when RevokeWait ran out before every record delivered from them was
	// committed (their new owner reads the rest again), so the caller can
	// log it; it is called on the rebalance's goroutine and must not block.
	OnRevokeTimeout func(partitions []int32, waited time.Duration)
	// TransactionalID, when set, makes the source transactional
	// (sources.Transactional, Transact): its offsets are committed only in
	// Kafka transactions of this transactional id, which also carry the
	// outputs written into them, and it reads read_committed. One id per
	// reader of the group (the node and source names): a restarted reader
	// with the same id fences its previous incarnation's producer.
	TransactionalID string
	// TxnTimeout is the transaction timeout; 0: DefaultTxnTimeout. It
	// must be at least 75 s (the writes' 30 s and the end's bound, past
	// the RebalanceTimeout): see DefaultTxnTimeout.
	TxnTimeout time.Duration
	// Members returns the names of the live members of the fleet (this one
	// included), for Expect. nil: no wait.
	Members func() []string
	// Expect is how many members the fleet is started with (the job's
	// cluster.expect): until Members lists that many, or ExpectWait passes
	// since New, the source does not join Group — it reads nothing and is
	// assigned nothing — so that a fleet started together forms its group
	// with every member at once, instead of the first member being
	// assigned every partition and handing them over as the others join.
	// 0 or 1: no wait.
	Expect int
	// ExpectWait bounds the wait for Expect members (0: DefaultExpectWait).
	ExpectWait time.Duration
}

// DefaultExpectWait is Config.ExpectWait's default, cluster.expect_wait's.
const DefaultExpectWait = 5 * time.Second

// DefaultRevokeWait is Config.RevokeWait's default.
const DefaultRevokeWait = 10 * time.Second

// RebalanceTimeout is the rebalance timeout the source joins its group
// with: how long the group waits for a member to rejoin during a
// rebalance, its revoke included, before it removes the member.
// Config.RevokeWait must be under it. It is under SessionTimeout, so a
// rebalance that waits for a member that died ends (its timer removes
// the member) before the session of any member waiting in it runs out:
// a coordinator that expires members awaiting a join by their session —
// kfake does; Kafka keeps them — would otherwise drop the live members
// of a rebalance that waits out a dead one, leave their joins
// unanswered until the client gives up on them (RebalanceTimeout plus the
// request overhead), and start the next rebalance over their stale
// member ids (TestRebalanceUnderSession). It also bounds the wait for a
// member killed in the middle of a rebalance.
const RebalanceTimeout = 30 * time.Second

// SessionTimeout is the group session timeout the source joins with
// (franz-go's and Kafka's default): a member that sends no heartbeat for
// that long is removed and its partitions move.
const SessionTimeout = 45 * time.Second

// ValidateRevokeWait checks a Config.RevokeWait (kafka.revoke_wait): not
// negative, and under RebalanceTimeout.
func ValidateRevokeWait(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("must not be negative (got %v)", d)
	case d >= RebalanceTimeout:
		return fmt.Errorf("must be under the consumer group's rebalance timeout %v (got %v): a revoke that waits longer gets the member removed from the group", RebalanceTimeout, d)
	}
	return nil
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
	if err := ValidateRevokeWait(c.RevokeWait); err != nil {
		errs = append(errs, fmt.Errorf("kafka: RevokeWait %w", err))
	}
	if c.Expect < 0 || c.ExpectWait < 0 {
		errs = append(errs, fmt.Errorf("kafka: Expect %d and ExpectWait %v must not be negative", c.Expect, c.ExpectWait))
	}
	if c.TxnTimeout != 0 && c.TxnTimeout < minTxnTimeout {
		errs = append(errs, fmt.Errorf("kafka: TxnTimeout %v is under %v: the brokers would abort a transaction whose end waits for a rebalance (DefaultTxnTimeout)", c.TxnTimeout, minTxnTimeout))
	}
	if err := c.SASL.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
