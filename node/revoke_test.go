package node

import (
	"testing"
	"time"

	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/record"
)

// TestKafkaRevokedPartitionHoldsForGrace: a revoked partition keeps holding
// the watermark at its last value for the grace period (a cooperative
// rebalance assigns it elsewhere a round later), then stops; assigned again
// within the grace, it simply stays.
func TestKafkaRevokedPartitionHoldsForGrace(t *testing.T) {
	spec, err := job.Parse([]byte(`name: revoke
join: {type: window, window: {type: tumbling, size: 10ms}, left: {name: l, key: k, ts: ts}, right: {name: r, key: k, ts: ts}}
sources: [{name: k, type: kafka, side: left, kafka: {brokers: ["127.0.0.1:1"], topic: t, group: g}}]
sinks: [{type: stdout}]
`))
	if err != nil {
		t.Fatal(err)
	}
	evt, err := newEventTime(job.EventTimeOf(spec.Sources))
	if err != nil {
		t.Fatal(err)
	}
	const grace = 150 * time.Millisecond
	n := &Node{spec: spec, evt: evt, revokeGraceForTest: grace}
	hook := n.sourcePartitions("k")
	part := func(p int32) string { return record.Position{Source: "k", Partition: p}.PartitionID() }
	observe := func(p int32, ts int64) {
		evt.mu.Lock()
		evt.wm.Observe(part(p), ts, time.Now())
		evt.mu.Unlock()
	}
	current := func() int64 {
		evt.mu.Lock()
		defer evt.mu.Unlock()
		return evt.wm.Current()
	}
	hook([]int32{0, 1, 2}, nil)
	observe(0, 1000)
	observe(1, 100)
	observe(2, 2000)
	if got := current(); got != 99 {
		t.Fatalf("watermark %d with partitions at 1000, 100, 2000; want 99", got)
	}
	hook(nil, []int32{1})
	if got := current(); got != 99 {
		t.Fatalf("right after revoking partition 1 the watermark is %d; want it held at 99 for the grace", got)
	}
	hook(nil, []int32{2})
	hook([]int32{2}, nil) // partition 2 comes back within the grace
	time.Sleep(grace + 100*time.Millisecond)
	if got := current(); got != 999 {
		t.Fatalf("after the grace the watermark is %d; want 999 (partition 1 gone, 0 at 1000, 2 kept)", got)
	}
	observe(1, 50) // a record of the removed partition processed after the grace
	if got := current(); got != 999 {
		t.Fatalf("a late record of a removed partition moved the watermark to %d", got)
	}
}
