package kafka

import (
	"github.com/joinery/joinery/internal/testutil"

	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/formats/changelog"
)

// txnProducer is a transactional producer for WriteTxn (TxnProducer).
type txnProducer struct {
	cl      *kgo.Client
	brokers []string
}

func (p txnProducer) TxnClient() *kgo.Client { return p.cl }
func (p txnProducer) TxnBrokers() []string   { return p.brokers }

// TestSinkExactlyOnce: an exactly-once sink refuses Write; WriteTxn
// writes into the transaction given, visible once it commits and never if
// it aborts; a transaction on other brokers is refused.
func TestSinkExactlyOnce(t *testing.T) {
	brokers := testutil.StartKafka(t, 1, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := New(ctx, Config{Brokers: brokers, Topic: "out", Format: changelog.Changelog, ExactlyOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, batch); !errors.Is(err, ErrNotInTxn) {
		t.Errorf("Write of an exactly-once sink: %v, want ErrNotInTxn", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tx := txnProducer{cl, brokers}
	for _, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteTxn(ctx, tx, batch[:1]); err != nil {
			t.Fatalf("WriteTxn: %v", err)
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WriteTxn(ctx, txnProducer{cl, []string{"elsewhere:9092"}}, batch[:1]); err == nil || !strings.Contains(err.Error(), "cannot write to brokers") {
		t.Errorf("WriteTxn on other brokers: %v", err)
	}
	rc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	// Offsets: the aborted record, its marker, the committed record, its marker.
	var data []*kgo.Record
	for next := int64(0); next < 4; {
		fs := rc.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read out: at %d: %v", next, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if !r.Attrs.IsControl() {
				data = append(data, r)
			}
		})
	}
	if len(data) != 1 || data[0].Offset != 2 || string(data[0].Headers[0].Value) != batch[0].ID {
		t.Errorf("read_committed: %d records, want the committed one (offset 2, id %s)", len(data), batch[0].ID)
	}
}
