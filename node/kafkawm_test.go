package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
)

// TestNodeKafkaPartitionHoldsWatermarkFromAssignment runs a 1-second
// tumbling window join from two 2-partition Kafka topics (kfake). Each
// partition holds the watermark back from its assignment: a record produced
// to partition 1 of the left topic only after the other partitions ran far
// ahead is not late. (Before partitions were declared on assignment, the
// watermark followed the partitions that had delivered something, and that
// record came 4.9 s behind it: late, its pair lost.) With an idle timeout, a
// partition assigned but never written to stops holding the watermark back
// once idle.
func TestNodeKafkaPartitionHoldsWatermarkFromAssignment(t *testing.T) {
	type rec struct {
		topic string
		part  int32
		k     string
		ts    int64
		v     string
	}
	for _, tc := range []struct {
		name     string
		idle     string // sources' watermark.idle_timeout
		first    []rec  // produced first; the node reads them all
		wait     time.Duration
		then     []rec // produced once the first ones are read (and wait passed)
		want     map[string]bool
		wantLate int64
	}{
		{
			name: "late-written partition is held back for",
			first: []rec{
				{"l", 0, "b", 5000, "l2"}, {"r", 0, "a", 100, "r1"}, {"r", 0, "b", 5000, "r2"}, {"r", 1, "c", 5000, "r3"},
			},
			then: []rec{
				{"l", 1, "a", 100, "l1"}, // 4.9 s behind the other partitions
				{"l", 0, "z", 10000, "lz"}, {"l", 1, "z", 10000, "lz1"}, {"r", 0, "y", 10000, "ry"}, {"r", 1, "y", 10000, "ry1"},
			},
			want: map[string]bool{"l1|r1": true, "l2|r2": true},
		},
		{
			name: "assigned empty partition goes idle",
			idle: "300ms",
			first: []rec{
				{"l", 0, "a", 100, "l1"}, {"r", 0, "a", 100, "r1"}, {"r", 1, "c", 5000, "r3"},
				{"l", 0, "b", 5000, "l2"}, {"r", 0, "b", 5000, "r2"},
			},
			wait: time.Second, // l/1 never written: idle after 300ms
			then: []rec{{"l", 0, "z", 10000, "lz"}, {"r", 0, "y", 10000, "ry"}, {"r", 1, "y", 10000, "ry1"}},
			want: map[string]bool{"l1|r1": true, "l2|r2": true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "l", "r"))
			if err != nil {
				t.Fatal(err)
			}
			defer kc.Close()
			brokers := kc.ListenAddrs()
			prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			produce := func(rs []rec) {
				t.Helper()
				for _, r := range rs {
					v, _ := json.Marshal(map[string]any{"k": r.k, "ts": r.ts, "v": r.v})
					if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: r.topic, Partition: r.part, Value: v}).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
			}
			wm := ""
			if tc.idle != "" {
				wm = ", watermark: {idle_timeout: " + tc.idle + "}"
			}
			n := start(t, parse(t, t.TempDir(), fmt.Sprintf(`name: kafkawm
join:
  type: window
  mode: inner
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  window: {type: tumbling, size: 1s}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sources:
  - {name: ls, type: kafka, kafka: {brokers: [%[1]q], topic: l, group: gl}, side: left%[2]s}
  - {name: rs, type: kafka, kafka: {brokers: [%[1]q], topic: r, group: gr}, side: right%[2]s}
sinks: [{type: table}]
`, brokers[0], wm)))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- n.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil && ctx.Err() == nil {
					t.Errorf("run: %v", err)
				}
			}()
			produce(tc.first)
			testutil.WaitFor(t, 30*time.Second, func() error {
				if got := n.Stats().Events.Load(); got != int64(len(tc.first)) {
					return fmt.Errorf("%d events read, want %d", got, len(tc.first))
				}
				return nil
			})
			time.Sleep(tc.wait)
			produce(tc.then)
			// Wait for every expected pair, or for a late record.
			testutil.WaitFor(t, 30*time.Second, func() error {
				got := node.PairsOf(n.Table())
				if n.Stats().Late.Load() > tc.wantLate {
					return nil
				}
				if missing, _ := node.DiffSets(got, tc.want); len(missing) > 0 {
					return fmt.Errorf("pairs %v, missing %v", got, missing)
				}
				return nil
			})
			got := node.PairsOf(n.Table())
			missing, extra := node.DiffSets(got, tc.want)
			if late := n.Stats().Late.Load(); late != tc.wantLate || len(missing)+len(extra) > 0 {
				t.Errorf("late %d (want %d); pairs %v (missing %v, extra %v)", late, tc.wantLate, got, missing, extra)
			}
		})
	}
}
