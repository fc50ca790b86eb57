package redisstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/joinery/joinery/connopts/redisopts"
)

// Config configures a Redis Streams source. The zero value of an optional
// field means its default.
type Config struct {
	// Options are the connection to the Redis server: Addr (host:port)
	// is required; Username and Password authenticate (ACL or
	// requirepass); DB defaults to 0; TLS, when not nil, connects with
	// TLS; OnRedisError, when set, is called for each failed Redis call
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
	// whose entries were acknowledged (docs/operations/recovery.md, "Rollback
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
	// KeptFloor, for a TrimAcked source, bounds each trim by where Applied
	// would start the partition's next reader: the stream keeps the
	// entries from offset on (and is not trimmed while ok is false), so a
	// store whose applied offsets lag its commits (the replay floors of a
	// Redis Cluster store, persistence.FloorStore) never finds the entries
	// after its offset trimmed, a lost range though it lost nothing
	// (docs/guides/producers.md). nil: trimmed up to the last entry
	// acknowledged.
	KeptFloor func(partition int32) (offset int64, ok bool)

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
