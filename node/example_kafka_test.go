package node_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/sinks/deadletter"
)

// TestNodeExampleKafkaUsersDomains runs examples/kafka-users-domains/job.yaml
// against an in-process Kafka (kfake) and a real redis-server, with only the
// addresses changed: the Debezium topic is filled from the example's
// users.jsonl and domains.jsonl (with a tombstone, a replay and two bad
// records), and the test checks the upsert topic, the Redis hash view and
// the dead-letter topic.
func TestNodeExampleKafkaUsersDomains(t *testing.T) {
	const dir = "../examples/kafka-users-domains/"
	spec, err := job.Load(dir + "job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1,
		"dbserver1.users_domains", "users_domains", "joinery-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	brokers := kc.ListenAddrs()
	rs := testutil.StartRedis(t)
	set := func(f connectors.Fields, path string, v any) {
		if err := f.Set(path, v); err != nil {
			t.Fatal(err)
		}
	}
	for i := range spec.Sources {
		set(spec.Sources[i].Conn, "kafka.brokers", brokers)
	}
	for i, sk := range spec.Sinks {
		switch sk.Type {
		case "kafka":
			set(spec.Sinks[i].Conn, "kafka.brokers", brokers)
		case "redis-hash":
			set(spec.Sinks[i].Conn, "redis.addr", rs.Addr)
		}
	}
	set(spec.DeadLetter.Conn, "kafka.brokers", brokers)
	spec.State.Redis.Addr = rs.Addr
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const topic = "dbserver1.users_domains"
	for _, file := range []string{"users.jsonl", "domains.jsonl"} {
		f, err := os.Open(dir + file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			r := &kgo.Record{Topic: topic}
			if len(sc.Bytes()) > 0 {
				r.Value = append([]byte(nil), sc.Bytes()...)
			} // else a tombstone (null value)
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}

	want := map[string]map[string]any{
		"[1,1]":    {"user_id": 1.0, "firstname": "Egor", "lastname": "Myasnikov", "domain_id": 1.0, "domain_name": "Approval"},
		"[2,null]": {"user_id": 2.0, "firstname": "Anna", "lastname": "Lisitsyna", "domain_id": nil, "domain_name": nil},
		"[3,3]":    {"user_id": 3.0, "firstname": "Mitya", "lastname": "Volk", "domain_id": 3.0, "domain_name": "Stoppage"},
	}
	n := start(t, spec)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	view := func() (map[string]map[string]any, error) {
		h, err := rc.HGetAll(ctx, "users_domains").Result()
		if err != nil {
			return nil, err
		}
		got := map[string]map[string]any{}
		for pk, row := range h {
			var m map[string]any
			if err := json.Unmarshal([]byte(row), &m); err != nil {
				return nil, err
			}
			got[pk] = m
		}
		return got, nil
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(runCtx) }()
	testutil.WaitFor(t, 60*time.Second, func() error {
		got, err := view()
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("redis view = %v", got)
		}
		if n.Stats().In.Load() < 15 {
			return fmt.Errorf("read %d records of 15", n.Stats().In.Load())
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}

	// The upsert topic, folded by key (a null value deletes), is the view.
	outs := consumeAll(t, brokers, "users_domains")
	folded := map[string]map[string]any{}
	for _, r := range outs {
		if r.Value == nil {
			delete(folded, string(r.Key))
			continue
		}
		var l struct {
			Key   json.RawMessage
			Value map[string]any
		}
		if err := json.Unmarshal(r.Value, &l); err != nil {
			t.Fatal(err)
		}
		if string(l.Key) != string(r.Key) {
			t.Errorf("record key %s, value key %s", r.Key, l.Key)
		}
		folded[string(r.Key)] = l.Value
	}
	if !reflect.DeepEqual(folded, want) {
		t.Errorf("users_domains topic folds to %v, want %v", folded, want)
	}

	var dead []string
	for _, r := range consumeAll(t, brokers, "joinery-dlq") {
		d, err := deadletter.Decode(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		dead = append(dead, fmt.Sprintf("%s:%s", d.Position, d.Reason))
	}
	wantDead := map[string]bool{"cdc/0@8:not-json": true, "cdc/0@14:unknown-op": true}
	if len(dead) != len(wantDead) || !wantDead[dead[0]] || !wantDead[dead[len(dead)-1]] {
		t.Errorf("dead letters = %v, want %v", dead, wantDead)
	}
	if st := n.Stats(); st.Tombs.Load() != 1 || st.Duplicates.Load() != 1 {
		t.Errorf("tombstones %d, duplicates %d; want 1, 1", st.Tombs.Load(), st.Duplicates.Load())
	}
}

// consumeAll reads a topic from the start until it has been quiet for a
// moment.
func consumeAll(t *testing.T, brokers []string, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if len(fs.Records()) == 0 {
			return out
		}
		out = append(out, fs.Records()...)
	}
}
