package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources"
)

// TestKafkaSourceRewindsToTheStore: a state store that lost writes (its
// applied offset is behind what the group committed) makes the source read
// again from the record after the store's offset; a partition the store is
// not behind on, or knows nothing of, starts at the group's position. When
// the topic no longer holds the first lost record, Read fails with a
// LostRangeError naming the partition and the lost offsets.
func TestKafkaSourceRewindsToTheStore(t *testing.T) {
	brokers := testutil.StartKafka(t, 3, topic)
	produce(t, brokers, "v", 0, 30) // offsets 0..9 on each partition
	cfg := Config{Name: "users", Brokers: brokers, Topic: topic, Group: "g"}
	s := open(t, cfg)
	readN(t, s, 30)
	ctx := context.Background()
	if err := s.Commit(ctx, positions("users", all, 9)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	store := map[int32]int64{0: 3, 2: 12} // partition 0 lost 4..9; 1 unknown; 2 ahead
	cfg.Applied = func(_ context.Context, p int32, _ string) (int64, bool, error) {
		off, ok := store[p]
		return off, ok, nil
	}
	s2 := open(t, cfg)
	msgs := readN(t, s2, 6)
	checkOrder(t, msgs)
	if got := keys(msgs); got != want([]int32{0}, 4, 10) {
		t.Fatalf("after the store went back read %s, want partition 0 offsets 4..9", got)
	}
	noMore(t, s2, 500*time.Millisecond)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}

	// Retention took partition 0 up to offset 6: 4 and 5 cannot be read again.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 6
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	if _, err := req.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	s3 := open(t, cfg)
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var lost *LostRangeError
	for {
		msgs, err := s3.Read(rctx, 100)
		if errors.As(err, &lost) {
			break
		}
		if err != nil {
			t.Fatalf("Read = %v, want a LostRangeError", err)
		}
		for _, m := range msgs {
			if m.Pos.Partition == 0 {
				t.Fatalf("read %v from the partition whose lost range is gone", m.Pos)
			}
		}
	}
	if lost.Partition != 0 || lost.From != 4 || lost.To != 5 || lost.Source != "users" {
		t.Errorf("lost range %+v, want users partition 0 offsets 4..5", lost)
	}
	if !errors.Is(lost, sources.ErrLostRange) {
		t.Errorf("%v does not match sources.ErrLostRange", lost)
	}
	t.Log(lost)
}
