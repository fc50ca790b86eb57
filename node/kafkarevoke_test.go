package node_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/sources/kafka"
)

// drainTimeout is node's: how long a stopping source completes what it sent.
const drainTimeout = 20 * time.Second

// TestNodeKafkaRevokeTimeoutsCounted: one node reads a 2-partition Kafka
// topic (kfake) with kafka.revoke_wait: 300ms and writes its outputs to a
// Kafka topic; once it has read a record of each partition, a second
// consumer joins its group, which takes a partition from the node. When
// the node's sink is stalled (kfake holds its produce requests), what it
// read cannot be committed: the revoke's wait runs out after revoke_wait —
// well before the 10s default — and joinery_source_revoke_timeouts_total
// counts it. When everything read was committed before, the revoke finds
// nothing to wait for and the counter stays 0.
func TestNodeKafkaRevokeTimeoutsCounted(t *testing.T) {
	const (
		partitions = 2
		revokeWait = 300 * time.Millisecond
	)
	for _, tc := range []struct {
		name  string
		stall bool // the sink's writes are held from the start until the rebalance is over
		want  float64
	}{
		{"everything read committed: no timeout", false, 0},
		{"sink stalled: revoke_wait runs out", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc, brokers := testutil.KafkaCluster(t, kfake.SeedTopics(partitions, "cdc"), kfake.SeedTopics(1, "out")) // stopped after the node
			prod := testutil.KafkaClient(t, brokers, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			// While stalled, produce requests to the sink's topic (named by
			// ID in recent versions) sleep until released.
			out := topicID(t, prod, "out")
			var stalled atomic.Bool
			var sleeping atomic.Int32
			release := make(chan struct{})
			stalled.Store(tc.stall)
			kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
				for _, tp := range req.(*kmsg.ProduceRequest).Topics {
					if (tp.Topic == "out" || tp.TopicID == out) && stalled.Load() {
						sleeping.Add(1)
						kc.SleepControl(func() { <-release })
						break
					}
				}
				return nil, nil, false // then handled by the cluster
			})
			// A user insert in each partition, read before the second member joins.
			for p := range int32(partitions) {
				v := fmt.Appendf(nil, `{"op":"c","after":{"id":%d,"firstname":"f","lastname":"l"},"source":{"table":"users"}}`, p)
				if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: "cdc", Partition: p, Value: v}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			n := start(t, parse(t, t.TempDir(), "name: krevoke\n"+joinYAML+fmt.Sprintf(`sources: [{name: cdc, type: kafka, kafka: {brokers: [%[1]q], topic: cdc, group: g, revoke_wait: %[2]s}, tables: {users: left, domains: right}}]
sinks: [{type: kafka, kafka: {brokers: [%[1]q], topic: out}}]
`, brokers[0], revokeWait)))
			runAll(t, []*node.Node{n})
			unstall := sync.OnceFunc(func() { stalled.Store(false); close(release) })
			t.Cleanup(unstall) // before the node stops: it completes what it read
			if tc.stall {
				testutil.WaitFor(t, 30*time.Second, func() error {
					if in, s := n.Stats().In.Load(), sleeping.Load(); in != partitions || s == 0 {
						return fmt.Errorf("the node read %d of %d records; %d sink writes held", in, partitions, s)
					}
					return nil
				})
			} else {
				testutil.WaitFor(t, 30*time.Second, testutil.KafkaCommitted(prod, "g", partitions, "cdc"))
			}
			// The second member joins; the group takes a partition from the node.
			assigned := make(chan struct{})
			var once sync.Once
			joined := time.Now()
			c2, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("cdc"),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, got map[string][]int32) {
					if len(got["cdc"]) > 0 {
						once.Do(func() { close(assigned) })
					}
				}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c2.Close)
			select {
			case <-assigned:
			case <-time.After(30 * time.Second):
				t.Fatal("the second member was assigned no partition")
			}
			took := time.Since(joined)
			unstall()
			got := metricValue(t, n, "joinery_source_revoke_timeouts_total", `source="cdc"`)
			t.Logf("the node gave a partition up %v after the second member joined; revoke timeouts %v", took, got)
			if got != tc.want {
				t.Errorf("joinery_source_revoke_timeouts_total = %v, want %v", got, tc.want)
			}
			// A revoke that waited DefaultRevokeWait (revoke_wait lost on
			// the way to the source) would hold the rebalance 10s.
			if tc.stall && took >= kafka.DefaultRevokeWait {
				t.Errorf("the stalled node gave a partition up after %v, want soon after revoke_wait %v (not the default %v)", took, revokeWait, kafka.DefaultRevokeWait)
			}
		})
	}
}

// topicID is the ID of topic, as a metadata request gives it.
func topicID(t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].TopicID == [16]byte{} {
		t.Fatalf("metadata of %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].TopicID
}

// TestNodeKafkaSinkStalledStops: a node whose Kafka sink's broker stops
// answering mid-write (kfake holds the produce request) still stops when
// asked: its Run returns once its context ends and the batches in flight
// had their drain (drainTimeout, 20 s: the test takes that long), and
// Close returns. An
// idempotent producer cannot fail a record whose request was sent, so
// franz-go's ProduceSync alone would wait for the broker for ever
// (kafkaopts.ProduceSync).
func TestNodeKafkaSinkStalledStops(t *testing.T) {
	kc, brokers := testutil.KafkaCluster(t, kfake.SeedTopics(1, "cdc"), kfake.SeedTopics(1, "out"))
	prod := testutil.KafkaClient(t, brokers)
	out := topicID(t, prod, "out")
	var sleeping atomic.Int32
	release := make(chan struct{})
	t.Cleanup(sync.OnceFunc(func() { close(release) })) // before kc.Close: the held request ends
	kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		for _, tp := range req.(*kmsg.ProduceRequest).Topics {
			if tp.Topic == "out" || tp.TopicID == out {
				sleeping.Add(1)
				kc.SleepControl(func() { <-release })
				break
			}
		}
		return nil, nil, false
	})
	v := []byte(`{"op":"c","after":{"id":1,"firstname":"f","lastname":"l"},"source":{"table":"users"}}`)
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: "cdc", Value: v}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	n, err := node.Start(context.Background(), parse(t, t.TempDir(), "name: kstall\n"+joinYAML+fmt.Sprintf(`sources: [{name: cdc, type: kafka, kafka: {brokers: [%[1]q], topic: cdc, group: g}, tables: {users: left, domains: right}}]
sinks: [{type: kafka, kafka: {brokers: [%[1]q], topic: out}}]
`, brokers[0])), node.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	testutil.WaitFor(t, 30*time.Second, func() error {
		if s := sleeping.Load(); s == 0 {
			return fmt.Errorf("no sink write held yet (%d records read)", n.Stats().In.Load())
		}
		return nil
	})
	cancel()
	select {
	case <-done:
	case <-time.After(drainTimeout + 15*time.Second):
		t.Fatalf("Run did not return %v after its context ended (its drain is %v), its sink's write held by the broker", drainTimeout+15*time.Second, drainTimeout)
	}
	closed := make(chan error, 1)
	go func() { closed <- n.Close(context.Background()) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s, its sink's write held by the broker")
	}
}
