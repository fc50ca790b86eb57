package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
)

var batch = []record.Output{
	{ID: "u/0@1/1/0/0", Kind: record.Insert, PK: "[1,null]", Row: record.Row{"id": json.Number("1"), "d": nil}},
	{ID: "d/0@1/1/0/0", Kind: record.UpdateBefore, PK: "[1,null]", Row: record.Row{"id": json.Number("1"), "d": nil}},
	{ID: "d/0@1/1/0/1", Kind: record.UpdateAfter, PK: "[1,7]", Row: record.Row{"id": json.Number("1"), "d": "x.org"}},
	{ID: "d/0@2/1/0/0", Kind: record.Delete, PK: "[1,7]", Row: record.Row{"id": json.Number("1"), "d": "x.org"}},
}

// consume reads n records of topic from the start.
func consume(t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, fs.Records()...)
	}
	if len(out) != n {
		t.Fatalf("consumed %d records, want %d", len(out), n)
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestKafkaSinkConfigValidate(t *testing.T) {
	err := Config{Format: 9, SASL: &SASL{Mechanism: "plain"}}.Validate()
	for _, f := range []string{"Brokers", "Topic", "Format", "SASL.User", "SASL.Password"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate error %v does not name %s", err, f)
		}
	}
}

func TestKafkaSinkChangelog(t *testing.T) {
	brokers := testutil.StartKafka(t, 1, "out")
	ctx := context.Background()
	s, err := New(ctx, Config{Brokers: brokers, Topic: "out"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rs := consume(t, brokers, "out", len(batch))
	for i, r := range rs {
		if string(r.Key) != batch[i].PK || header(r, IDHeader) != batch[i].ID {
			t.Fatalf("record %d key %s id %s, want %s %s", i, r.Key, header(r, IDHeader), batch[i].PK, batch[i].ID)
		}
		o, err := changelog.DecodeChangelog(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(o, batch[i]) {
			t.Fatalf("record %d = %#v, want %#v", i, o, batch[i])
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, batch); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestKafkaSinkUpsertTombstones(t *testing.T) {
	brokers := testutil.StartKafka(t, 1, "out")
	ctx := context.Background()
	s, err := New(ctx, Config{Brokers: brokers, Topic: "out", Format: changelog.Upsert})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	rs := consume(t, brokers, "out", 3) // -U is not produced
	var got []string
	for _, r := range rs {
		if r.Value == nil {
			got = append(got, fmt.Sprintf("%s %s tombstone", header(r, IDHeader), r.Key))
			continue
		}
		id, key, value, err := changelog.DecodeUpsert(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if id != header(r, IDHeader) || key != string(r.Key) {
			t.Fatalf("value id %s key %s, record id %s key %s", id, key, header(r, IDHeader), r.Key)
		}
		got = append(got, fmt.Sprintf("%s %s %v", id, key, value["d"]))
	}
	w := []string{"u/0@1/1/0/0 [1,null] <nil>", "d/0@1/1/0/1 [1,7] x.org", "d/0@2/1/0/0 [1,7] tombstone"}
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("got %q, want %q", got, w)
	}
}

func TestKafkaSinkBadOutputAndNoBroker(t *testing.T) {
	brokers := testutil.StartKafka(t, 1, "out")
	ctx := context.Background()
	s, err := New(ctx, Config{Brokers: brokers, Topic: "out"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bad := []record.Output{batch[0], {ID: "x", Kind: record.Insert, PK: "[1,"}}
	if err := s.Write(ctx, bad); err == nil {
		t.Fatal("Write of an invalid PK succeeded")
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	if _, err := New(cctx, Config{Brokers: []string{addr}, Topic: "out"}); err == nil {
		t.Fatal("New without a broker succeeded")
	}
}

// TestKafkaSinkBrokerGoneMidWrite: a Write whose broker went away returns
// once its context ends, and Close returns, though the produce request may
// already be on its way (an idempotent producer cannot fail such a record by
// itself: it waits for the broker forever).
func TestKafkaSinkBrokerGoneMidWrite(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := New(ctx, Config{Brokers: c.ListenAddrs(), Topic: "out"})
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	if err := s.Write(ctx, batch); err != nil {
		c.Close()
		t.Fatal(err)
	}
	c.Close() // the broker goes away
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Write(wctx, batch) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Write without a broker succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Write without a broker did not return 9 s after its context ended")
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return after a Write without a broker")
	}
}
