package fleetbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NewBroker starts a kfake Kafka broker on a free loopback port; the
// benchmark runs it in a process of its own (cmd/benchfleet -broker), so
// its CPU is not the feeder's and a node never shares a process with it.
func NewBroker() (*kfake.Cluster, error) {
	return kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
}

// createTopics creates topics with partitions partitions each.
func createTopics(ctx context.Context, cl *kgo.Client, partitions int32, topics ...string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, t := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = t
		rt.NumPartitions = partitions
		rt.ReplicationFactor = 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topics %v: %w", topics, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", t.Topic, err)
		}
	}
	return nil
}

// groupMembers returns the number of members of a consumer group in the
// Stable state (0 while it rebalances).
func groupMembers(ctx context.Context, cl *kgo.Client, group string) (int, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Groups) != 1 {
		return 0, fmt.Errorf("describe group %s: %d groups in the answer", group, len(resp.Groups))
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		return 0, fmt.Errorf("describe group %s: %w", group, err)
	}
	if g.State != "Stable" {
		return 0, nil
	}
	return len(g.Members), nil
}

// msg is one input record: its table, Kafka key, the row's primary key
// and its Debezium line. A feeder picks the topic or shard stream.
type msg struct {
	table string // the topic is table-run; the shard streams table-run.i
	key   []byte // the Kafka key: table:id
	pk    []byte // the row's primary key as a compact JSON array ([42]), the shard hash's input
	jk    []byte // the row's join key as a compact JSON array, the shard hash's input when partitioned by it
	value []byte
}

// feeder writes input records to a run's partitioned source: a Kafka topic
// per table (kafkaFeeder) or a set of shard streams per table
// (redisFeeder).
type feeder interface {
	// send writes ms and calls done once, with the first error, when every
	// record is acknowledged; it may return before that.
	send(ctx context.Context, ms []msg, done func(error))
}

// kafkaFeeder produces to the topic of each record's table, keyed by table
// and primary key (so a row's changes stay in one partition, in order).
type kafkaFeeder struct {
	cl  *kgo.Client
	run int
}

func (f kafkaFeeder) send(ctx context.Context, ms []msg, done func(error)) {
	if len(ms) == 0 {
		done(nil)
		return
	}
	var left atomic.Int64
	left.Store(int64(len(ms)))
	var first atomic.Pointer[error]
	for _, m := range ms {
		f.cl.Produce(ctx, &kgo.Record{Topic: topic(m.table, f.run), Key: m.key, Value: m.value}, func(_ *kgo.Record, err error) {
			if err != nil {
				first.CompareAndSwap(nil, &err)
			}
			if left.Add(-1) == 0 {
				if p := first.Load(); p != nil {
					done(*p)
				} else {
					done(nil)
				}
			}
		})
	}
}

// produceAll writes msgs as fast as the feeder goes and waits for every
// acknowledgement.
func produceAll(ctx context.Context, f feeder, msgs []msg) error {
	errc := make(chan error, 1)
	f.send(ctx, msgs, func(err error) { errc <- err })
	if err := <-errc; err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	return nil
}

// produceAt writes the records next(i) makes, i = 0, 1, …, at rate per
// second (open loop: on a schedule, whatever the nodes do) for d, and
// returns how many it wrote and how far behind the schedule it ended.
func produceAt(ctx context.Context, f feeder, rate float64, d time.Duration, next func(i int) msg) (int, time.Duration, error) {
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	start := time.Now()
	total := int(rate * d.Seconds())
	i := 0
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i < total {
		select {
		case <-ctx.Done():
			return i, 0, ctx.Err()
		case <-tick.C:
		}
		due := min(total, int(rate*time.Since(start).Seconds()))
		var batch []msg
		for ; i < due; i++ {
			batch = append(batch, next(i))
		}
		if len(batch) == 0 {
			continue
		}
		wg.Add(1)
		f.send(ctx, batch, func(err error) {
			if err != nil {
				first.CompareAndSwap(nil, &err)
			}
			wg.Done()
		})
	}
	lag := time.Since(start) - d
	wg.Wait()
	if p := first.Load(); p != nil {
		return i, lag, fmt.Errorf("produce: %w", *p)
	}
	return i, lag, nil
}
