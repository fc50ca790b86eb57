package testutil

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StartKafka starts an in-process Kafka (franz-go's kfake: one broker) with
// topics of partitions partitions each, stopped when the test ends, and
// returns its broker addresses.
func StartKafka(t testing.TB, partitions int32, topics ...string) []string {
	t.Helper()
	_, brokers := KafkaCluster(t, kfake.SeedTopics(partitions, topics...))
	return brokers
}

// KafkaCluster starts an in-process Kafka of one broker with opts (its
// topics: kfake.SeedTopics), stopped when the test ends (after the
// cleanups registered later, such as the nodes' stops), and returns it
// (for its request controls) and its broker addresses.
func KafkaCluster(t testing.TB, opts ...kfake.Opt) (*kfake.Cluster, []string) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()
}

// KafkaClient is a client of brokers with opts, closed when the test ends.
func KafkaClient(t testing.TB, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// KafkaCommitted returns a check for WaitFor that passes once group has
// committed every partition of topics (partitions each) that holds
// records up to its end (its high watermark); its error names the first
// partition behind, as "topic/partition committed at C of E".
func KafkaCommitted(cl *kgo.Client, group string, partitions int32, topics ...string) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Group = group
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = -1
		for _, tp := range topics {
			ot := kmsg.NewOffsetFetchRequestTopic()
			ot.Topic = tp
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = tp
			for p := range partitions {
				ot.Partitions = append(ot.Partitions, p)
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp = p, -1
				lt.Partitions = append(lt.Partitions, rp)
			}
			of.Topics = append(of.Topics, ot)
			lo.Topics = append(lo.Topics, lt)
		}
		ends, err := lo.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		committed, err := of.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		at := map[string]int64{}
		for _, tp := range committed.Topics {
			for _, p := range tp.Partitions {
				at[tp.Topic+"/"+strconv.Itoa(int(p.Partition))] = p.Offset
			}
		}
		for _, tp := range ends.Topics {
			for _, p := range tp.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return err
				}
				id := tp.Topic + "/" + strconv.Itoa(int(p.Partition))
				if p.Offset > 0 && at[id] != p.Offset {
					return fmt.Errorf("%s committed at %d of %d", id, at[id], p.Offset)
				}
			}
		}
		return nil
	}
}

// KafkaStable reports an error while a transaction is open in partition 0
// of topic: its last stable offset below its end.
func KafkaStable(ctx context.Context, cl *kgo.Client, topic string) error {
	lso, err := KafkaEnd(ctx, cl, topic, 0, true)
	if err != nil {
		return err
	}
	end, err := KafkaEnd(ctx, cl, topic, 0, false)
	if err != nil {
		return err
	}
	if lso < end {
		return fmt.Errorf("%s's last stable offset is %d, its end %d: a transaction is open", topic, lso, end)
	}
	return nil
}

// KafkaEnd is the end offset of partition of topic: its high watermark,
// or with committed its last stable offset (where a read_committed
// consumer stops: before the first open transaction).
func KafkaEnd(ctx context.Context, cl *kgo.Client, topic string, partition int32, committed bool) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("list offsets of %s/%d: %d topics in the answer", topic, partition, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return 0, fmt.Errorf("list offsets of %s/%d: %w", topic, partition, err)
	}
	return p.Offset, nil
}

// ReadKafka reads the one-partition topic from its start to its end as
// KafkaEnd finds it when called — read_committed to its last stable
// offset when committed, else read_uncommitted to its high watermark —
// and returns its records without the transaction markers. It fails the
// test if that takes longer than d.
func ReadKafka(t testing.TB, brokers []string, topic string, committed bool, d time.Duration) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	recs, err := KafkaRecords(ctx, brokers, topic, committed)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// KafkaRecords is ReadKafka within ctx, returning its error.
func KafkaRecords(ctx context.Context, brokers []string, topic string, committed bool) ([]*kgo.Record, error) {
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	// Control records (transaction markers) are kept, so that every
	// offset to the end is accounted for.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	end, err := KafkaEnd(ctx, cl, topic, 0, committed)
	if err != nil {
		return nil, err
	}
	var got []*kgo.Record
	for next := int64(0); next < end; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s to %d (committed %v): at %d: %w", topic, end, committed, next, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if !r.Attrs.IsControl() {
				got = append(got, r)
			}
		})
	}
	return got, nil
}
