package kafka

import (
	"github.com/joinery/joinery/internal/testutil"

	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/sources"
)

// TestSourceTransact: a transactional source commits, in a transaction,
// exactly the offsets named (not everything it polled) with what the
// write function produced into it; a transaction whose write fails aborts
// it: nothing it produced is read_committed, the partitions go back to the
// committed offsets and the records after them come again with a higher
// Epoch, while a Read runs concurrently with the transactions (-race).
func TestSourceTransact(t *testing.T) {
	brokers := testutil.StartKafka(t, 3, topic)
	produce(t, brokers, "a", 0, 30) // 10 a partition
	s := open(t, Config{Brokers: brokers, Topic: topic, Group: "g", TransactionalID: "tx-a"})

	msgs := make(chan sources.Message, 100)
	ctx, cancel := context.WithCancel(context.Background())
	readDone := make(chan error, 1)
	go func() {
		for {
			ms, err := s.Read(ctx, 7)
			for _, m := range ms {
				msgs <- m
			}
			if err != nil {
				readDone <- err
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-readDone
	})
	next := func(n int) []sources.Message {
		t.Helper()
		var out []sources.Message
		for len(out) < n {
			select {
			case m := <-msgs:
				out = append(out, m)
			case <-time.After(20 * time.Second):
				t.Fatalf("read %d of %d messages", len(out), n)
			}
		}
		return out
	}
	first := next(30)
	if keys(first) != want(all, 0, 10) || first[0].Epoch != 0 {
		t.Fatalf("read %s (epoch %d), want %s at epoch 0", keys(first), first[0].Epoch, want(all, 0, 10))
	}
	write := func(v string, fail error) func(context.Context, any) error {
		return func(ctx context.Context, tx any) error {
			cl := tx.(interface{ TxnClient() *kgo.Client }).TxnClient()
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
				return err
			}
			return fail
		}
	}
	// Commit offsets 0..4 of each partition, with one record.
	if err := s.Transact(context.Background(), positions(topic, all, 4), write("committed", nil)); err != nil {
		t.Fatalf("Transact: %v", err)
	}
	// A transaction whose write fails aborts: its record is never
	// committed and 5..9 come again.
	err := s.Transact(context.Background(), positions(topic, all, 9), write("aborted", errors.New("sink down")))
	if !errors.Is(err, sources.ErrAborted) {
		t.Fatalf("Transact with a failed write: %v, want ErrAborted", err)
	}
	if s.Epoch() != 1 {
		t.Errorf("Epoch %d after one abort, want 1", s.Epoch())
	}
	// What was read before the abort (and is still queued) carries epoch 0;
	// what comes after, epoch 1, from offset 5 of each partition.
	var again []sources.Message
	for len(again) < 15 {
		m := next(1)[0]
		if m.Epoch == 1 && m.Pos.Offset < 10 { // 10 on: the transactions' own records
			again = append(again, m)
		}
	}
	if keys(again) != want(all, 5, 10) {
		t.Errorf("after the abort, read %s at epoch 1, want %s", keys(again), want(all, 5, 10))
	}
	if err := s.Transact(context.Background(), positions(topic, all, 9), write("committed again", nil)); err != nil {
		t.Fatalf("Transact: %v", err)
	}
	// A read_committed consumer sees the two committed records after the
	// input (the producer picks their partitions), not the aborted one.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(10), 1: kgo.NewOffset().At(10), 2: kgo.NewOffset().At(10)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer pcancel()
	for len(got) < 2 && pctx.Err() == nil {
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	sort.Strings(got)
	if fmt.Sprint(got) != "[committed committed again]" {
		t.Errorf("read_committed after the input: %q, want the two committed records", got)
	}
	if err := s.Commit(context.Background(), positions(topic, all, 9)); err == nil {
		t.Error("Commit of a transactional source succeeded; its offsets go in transactions")
	}
}
