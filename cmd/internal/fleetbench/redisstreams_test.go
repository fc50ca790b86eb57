package fleetbench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources/redisstream"
)

func TestParseSources(t *testing.T) {
	for in, want := range map[string][]string{
		"kafka":               {SourceKafka},
		"redis-streams":       {SourceRedisStreams},
		"both":                {SourceKafka, SourceRedisStreams},
		"redis-streams,kafka": {SourceRedisStreams, SourceKafka},
		"kafka, both":         {SourceKafka, SourceRedisStreams},
	} {
		got, err := ParseSources(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseSources(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "redis-stream", "kafka,pulsar"} {
		if _, err := ParseSources(bad); err == nil || !strings.Contains(err.Error(), "unknown source") {
			t.Errorf("ParseSources(%q): err %v, want unknown source", bad, err)
		}
	}
}

func TestLeasesSpread(t *testing.T) {
	names := []string{"n1", "n2", "n3"}
	want := redisstream.AssignShards(12, names)
	if err := leasesSpread(want, names); err != nil {
		t.Fatalf("the assignment itself: %v", err)
	}
	// n1 still holds one of n2's shards; one lease is free.
	held := slices.Clone(want)
	i := slices.Index(held, "n2")
	held[i] = "n1"
	j := slices.Index(held, "n3")
	held[j] = ""
	err := leasesSpread(held, names)
	if err == nil || !strings.Contains(err.Error(), "2 of 12 shards") || !strings.Contains(err.Error(), "free 1") {
		t.Fatalf("err %v, want 2 of 12 shards off, 1 free", err)
	}
}

// TestRedisFeeder writes a workload's input with the feeder to a real
// redis-server and reads the shard streams back: every record is in the
// shard stream of its row's primary key (streamshard's hash, the rule of
// docs/guides/producers.md), as the entry field "value", every row's
// changes in one shard in input order; then it opens two real sharded
// sources as nodes n1 and n2 and waits, as the benchmark does, until
// their leases are spread.
func TestRedisFeeder(t *testing.T) {
	r := testutil.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()
	ctx := context.Background()
	w, err := newWorkload("cdc", Config{Users: 40, Domains: 120, Changes: 1200})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := inputs(w, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) <= 1000 {
		t.Fatalf("%d records: want more than one pipeline of 1000", len(msgs))
	}
	const shards, run = 4, 7
	if err := produceAll(ctx, redisFeeder{rdb: rdb, run: run, shards: shards}, msgs); err != nil {
		t.Fatal(err)
	}
	total := 0
	used := 0
	for _, table := range []string{w.left, w.right} {
		for i := range shards {
			es, err := rdb.XRange(ctx, streamshard.Stream(topic(table, run), i), "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(es) > 0 {
				used++
			}
			var want []string // this shard's records of table, in input order
			for _, m := range msgs {
				if m.table == table && streamshard.Of(m.pk, shards) == i {
					want = append(want, string(m.value))
				}
			}
			var got []string
			for _, e := range es {
				v, _ := e.Values["value"].(string)
				var env struct{ Source struct{ Table string } }
				if err := json.Unmarshal([]byte(v), &env); err != nil || env.Source.Table != table {
					t.Fatalf("shard %d of %s: entry %v (%v)", i, table, e.Values, err)
				}
				got = append(got, v)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("shard %d of %s: %d entries, want %d in input order", i, table, len(got), len(want))
			}
			total += len(es)
		}
	}
	if total != len(msgs) || used != 2*shards {
		t.Fatalf("%d entries in %d shard streams, want %d in %d", total, used, len(msgs), 2*shards)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	// Two nodes' sharded sources: the leases spread over n1 and n2.
	members := func() []string { return []string{"n1", "n2"} }
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, name := range []string{"n1", "n2"} {
		for _, table := range []string{w.left, w.right} {
			src, err := redisstream.NewSharded(ctx, redisstream.Config{Options: redisopts.Options{Addr: r.Addr}, Stream: topic(table, run), Group: group(table, run),
				Consumer: name, Shards: shards, Members: members, Lease: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
		}
		if name == "n1" {
			// n1 alone: it may take every lease, which is not spread yet.
			testutil.WaitFor(t, 10*time.Second, func() error {
				hs, err := leaseHolders(ctx, rdb, topic(w.left, run), group(w.left, run), shards)
				if err != nil {
					return err
				}
				if slices.Contains(hs, "") {
					return fmt.Errorf("holders %v", hs)
				}
				return nil
			})
			if err := leasesSpread(must(leaseHolders(ctx, rdb, topic(w.left, run), group(w.left, run), shards)), []string{"n1", "n2"}); err == nil {
				t.Fatal("n1 alone holds n2's shards: want the leases not spread")
			}
		}
	}
	if err := waitLeases(wctx, rdb, w, run, shards, 2, SourceRedisStreams); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{w.left, w.right} {
		hs := must(leaseHolders(ctx, rdb, topic(table, run), group(table, run), shards))
		if !slices.Equal(hs, redisstream.AssignShards(shards, []string{"n1", "n2"})) {
			t.Fatalf("%s: holders %v after waitLeases", table, hs)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestKafkaFeeder writes records with the Kafka feeder to a kfake broker
// and reads them back: each in its table's topic of the run, keyed by
// table and primary key, a row's changes in one partition in order.
func TestKafkaFeeder(t *testing.T) {
	kc, err := NewBroker()
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w, err := newWorkload("cdc", Config{Users: 20, Domains: 60, Changes: 200})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := inputs(w, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := createTopics(ctx, cl, 4, topic(w.left, 2), topic(w.right, 2)); err != nil {
		t.Fatal(err)
	}
	if err := produceAll(ctx, kafkaFeeder{cl: cl, run: 2}, msgs); err != nil {
		t.Fatal(err)
	}
	// The open-loop path: 40 records at 400/s.
	sent, _, err := produceAt(ctx, kafkaFeeder{cl: cl, run: 2}, 400, 100*time.Millisecond, func(i int) msg { return msgs[i] })
	if err != nil || sent != 40 {
		t.Fatalf("produceAt: %d sent, %v; want 40", sent, err)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.ConsumeTopics(topic(w.left, 2), topic(w.right, 2)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	type row struct{ topic, key string }
	got := map[row][]string{}
	part := map[row]int32{}
	n := 0
	for n < len(msgs)+sent && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			k := row{r.Topic, string(r.Key)}
			if p, ok := part[k]; ok && p != r.Partition {
				t.Errorf("%s %s in partitions %d and %d", r.Topic, r.Key, p, r.Partition)
			}
			part[k] = r.Partition
			got[k] = append(got[k], string(r.Value))
			n++
		})
	}
	want := map[row][]string{}
	for _, m := range append(slices.Clone(msgs), msgs[:sent]...) {
		k := row{topic(m.table, 2), string(m.key)}
		want[k] = append(want[k], string(m.value))
	}
	if n != len(msgs)+sent || len(got) != len(want) {
		t.Fatalf("%d records of %d rows read, want %d of %d", n, len(got), len(msgs)+sent, len(want))
	}
	for k, vs := range want {
		if !slices.Equal(got[k], vs) {
			t.Fatalf("%v: %d records, want %d in order", k, len(got[k]), len(vs))
		}
	}
}
