package kafka

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/internal/testutil"
)

// storeView plays the node's part in Applied: it records the lineage each
// partition's commit carried and answers from store, except that a
// partition the store has no offset for, whose commit carried a lineage of
// another incarnation than current, gets -1 (the store applied nothing).
type storeView struct {
	current string
	store   map[int32]int64

	mu   sync.Mutex
	seen map[int32]string
}

func (v *storeView) applied(_ context.Context, p int32, lineage string) (int64, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil {
		v.seen = map[int32]string{}
	}
	v.seen[p] = lineage
	if off, ok := v.store[p]; ok {
		return off, true, nil
	}
	if lineage != "" && lineage[:1] != v.current {
		return -1, true, nil
	}
	return 0, false, nil
}

func (v *storeView) lineages() map[int32]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.seen)
}

// deleteRecords moves partition's log start to offset (retention).
func deleteRecords(t *testing.T, brokers []string, partition int32, offset int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteRecords: error code %d", code)
	}
}

// TestKafkaSourceLineage: each commit carries Config.Lineage as the
// partitions' commit metadata, and the next assignment hands it, per
// partition, to Applied. A store restarted empty (no offset; the commit's
// lineage is of another incarnation: Applied says -1) makes the partition
// read again from its beginning; once retention moved the partition's start
// past 0, Read fails with a LostRangeError from offset 0.
func TestKafkaSourceLineage(t *testing.T) {
	brokers := testutil.StartKafka(t, 3, topic)
	produce(t, brokers, "v", 0, 30) // offsets 0..9 on each partition
	ctx := context.Background()
	lineage := "a1/1073741824/7"
	view := &storeView{current: "b"}
	cfg := Config{Name: "users", Brokers: brokers, Topic: topic, Group: "g",
		Lineage: func() string { return lineage }, Applied: view.applied}
	s := open(t, cfg)
	readN(t, s, 30)
	if err := s.Commit(ctx, positions("users", []int32{0, 1}, 9)); err != nil {
		t.Fatal(err)
	}
	lineage = "b2/2147483648/3"
	if err := s.Commit(ctx, positions("users", []int32{2}, 4)); err != nil {
		t.Fatal(err)
	}
	if got := view.lineages(); len(got) != 0 {
		t.Fatalf("Applied was asked for %v before anything was committed", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The store was restarted empty and now has incarnation b: it applied
	// partition 1 again since (offset 9), knows nothing of 0 (committed
	// under a) and of 2 (committed under b itself: not a rollback).
	view.store = map[int32]int64{1: 9}
	s2 := open(t, cfg)
	msgs := readN(t, s2, 15)
	checkOrder(t, msgs)
	if got, w := keys(msgs), want([]int32{0}, 0, 10)+","+want([]int32{2}, 5, 10); got != w {
		t.Fatalf("after the store restarted empty read %s, want %s", got, w)
	}
	noMore(t, s2, 500*time.Millisecond)
	if got, w := view.lineages(), map[int32]string{0: "a1/1073741824/7", 1: "a1/1073741824/7", 2: "b2/2147483648/3"}; !maps.Equal(got, w) {
		t.Fatalf("Applied got lineages %v, want %v (what each partition's commit carried)", got, w)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}

	// Retention took partition 0 up to offset 3: 0..2 cannot be read again.
	deleteRecords(t, brokers, 0, 3)
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
	if lost.Partition != 0 || lost.From != 0 || lost.To != 2 {
		t.Errorf("lost range %+v, want partition 0 offsets 0..2", lost)
	}
	t.Log(lost)
}
