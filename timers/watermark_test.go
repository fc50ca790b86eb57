package timers

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// step is one input to a Watermarks: an event (ts set), a declared partition
// (add), a removed one (remove), a gossiped watermark (gossip) or an Advance
// (part empty). want is
// Current() afterwards, holder Holder().
type step struct {
	now    int // processing time, ms after t0
	part   string
	ts     int64
	add    bool
	remove bool
	gossip bool
	want   int64
	holder string
}

func runSteps(t *testing.T, cfg WatermarkConfig, steps []step) *Watermarks {
	t.Helper()
	w, err := NewWatermarks(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		switch {
		case s.part == "":
			w.Advance(at(s.now))
		case s.add:
			w.AddPartition(s.part, at(s.now))
		case s.remove:
			w.RemovePartition(s.part)
		case s.gossip:
			w.ObserveWatermark(s.part, s.ts, at(s.now))
		default:
			w.Observe(s.part, s.ts, at(s.now))
		}
		if got := w.Current(); got != s.want {
			t.Fatalf("step %d %+v: Current() = %d, want %d", i, s, got, s.want)
		}
		if got := w.Holder(); got != s.holder {
			t.Fatalf("step %d %+v: Holder() = %q, want %q", i, s, got, s.holder)
		}
	}
	return w
}

const minWM = math.MinInt64

func TestWatermarkSteps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   WatermarkConfig
		steps []step
	}{
		{
			name: "before any event",
			steps: []step{
				{now: 0, want: minWM},
			},
		},
		{
			name: "out of orderness: max seen ts minus delay minus one",
			cfg:  WatermarkConfig{MaxOutOfOrderness: 10},
			steps: []step{
				{part: "a", ts: 100, want: 89, holder: "a"},
				{part: "a", ts: 95, want: 89, holder: "a"}, // out of order: no change
				{part: "a", ts: 120, want: 109, holder: "a"},
				{part: "a", ts: 50, want: 109, holder: "a"}, // late: no change
			},
		},
		{
			name: "zero delay",
			steps: []step{
				{part: "a", ts: 5, want: 4, holder: "a"},
			},
		},
		{
			name: "min combine waits for the slowest partition",
			steps: []step{
				{part: "a", ts: 100, want: 99, holder: "a"},
				{part: "b", ts: 50, want: 99, holder: "b"}, // never backwards
				{part: "b", ts: 200, want: 99, holder: "a"},
				{part: "a", ts: 150, want: 149, holder: "a"},
				{part: "a", ts: 300, want: 199, holder: "b"},
			},
		},
		{
			name: "max combine follows the fastest partition",
			cfg:  WatermarkConfig{Combine: CombineMax},
			steps: []step{
				{part: "a", ts: 100, want: 99, holder: "a"},
				{part: "b", ts: 50, want: 99, holder: "a"},
				{part: "b", ts: 200, want: 199, holder: "b"},
				{part: "a", ts: 150, want: 199, holder: "b"},
			},
		},
		{
			name: "tie goes to the smallest name",
			steps: []step{
				{part: "b", ts: 10, want: 9, holder: "b"},
				{part: "a", ts: 10, want: 9, holder: "a"},
			},
		},
		{
			name: "idle partition stops holding back and resumes",
			cfg:  WatermarkConfig{IdleTimeout: time.Second},
			steps: []step{
				{now: 0, part: "a", ts: 100, want: 99, holder: "a"},
				{now: 0, part: "b", ts: 10, want: 99, holder: "b"},
				{now: 500, part: "a", ts: 200, want: 99, holder: "b"},
				{now: 999, want: 99, holder: "b"},   // b quiet 999ms: still active
				{now: 1000, want: 199, holder: "a"}, // b idle: a alone
				{now: 1200, part: "a", ts: 300, want: 299, holder: "a"},
				{now: 1300, part: "b", ts: 250, want: 299, holder: "b"}, // b back, behind: held
				{now: 1400, part: "a", ts: 400, want: 299, holder: "b"},
				{now: 1500, part: "b", ts: 500, want: 399, holder: "a"}, // b caught up
			},
		},
		{
			name: "all idle keeps the last combined value",
			cfg:  WatermarkConfig{IdleTimeout: time.Second},
			steps: []step{
				{now: 0, part: "a", ts: 100, want: 99, holder: "a"},
				{now: 100, part: "b", ts: 300, want: 99, holder: "a"},
				{now: 1000, want: 299, holder: "b"},
				{now: 1100, want: 299, holder: ""},
				{now: 5000, want: 299, holder: ""},
				{now: 5001, part: "a", ts: 150, want: 299, holder: "a"},
			},
		},
		{
			name: "zero idle timeout disables idleness",
			steps: []step{
				{now: 0, part: "a", ts: 100, want: 99, holder: "a"},
				{now: 0, part: "b", ts: 10, want: 99, holder: "b"},
				{now: 1 << 30, want: 99, holder: "b"},
			},
		},
		{
			name: "declared partition holds back until its first event",
			cfg:  WatermarkConfig{IdleTimeout: time.Second},
			steps: []step{
				{now: 0, part: "b", add: true, want: minWM, holder: "b"},
				{now: 10, part: "a", ts: 100, want: minWM, holder: "b"},
				{now: 500, part: "b", add: true, want: minWM, holder: "b"}, // redeclare: no-op
				{now: 1000, want: 99, holder: "a"},                         // b idle since 0
			},
		},
		{
			name: "gossiped watermark",
			steps: []step{
				{part: "a", ts: 100, want: 99, holder: "a"},
				{part: "b", ts: 500, gossip: true, want: 99, holder: "a"},
				{part: "a", ts: 1000, want: 500, holder: "b"},
				{part: "b", ts: 400, gossip: true, want: 500, holder: "b"}, // never backwards
			},
		},
		{
			name: "saturates near MinInt64",
			cfg:  WatermarkConfig{MaxOutOfOrderness: math.MaxInt64},
			steps: []step{
				{part: "a", ts: 0, want: minWM, holder: "a"},
				{part: "a", ts: math.MaxInt64, want: -1, holder: "a"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.cfg, tc.steps) })
	}
}

// TestWatermarkDeclareRemove covers the partition life cycle a Kafka source
// reports: declared on assignment (holding the watermark back before its first
// record), removed on revocation (no longer holding it back, and not brought
// back by its records still being processed), declared again on a later
// assignment.
func TestWatermarkDeclareRemove(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   WatermarkConfig
		steps []step
		parts []string // Partitions() names at the end
	}{
		{
			name: "declared partition holds back from assignment, not from its first event",
			steps: []step{
				{part: "t/0", add: true, want: minWM, holder: "t/0"},
				{part: "t/1", add: true, want: minWM, holder: "t/0"},
				{part: "t/0", ts: 1000, want: minWM, holder: "t/1"},
				{part: "t/0", ts: 5000, want: minWM, holder: "t/1"}, // t/1 empty: still held
				{part: "t/1", ts: 100, want: 99, holder: "t/1"},     // t/1's record is not late
				{part: "t/1", ts: 6000, want: 4999, holder: "t/0"},
			},
			parts: []string{"t/0", "t/1"},
		},
		{
			name: "without declaration the first event of a partition comes too late",
			steps: []step{
				{part: "t/0", ts: 1000, want: 999, holder: "t/0"},
				{part: "t/1", ts: 100, want: 999, holder: "t/1"}, // 100 < 999: late
			},
			parts: []string{"t/0", "t/1"},
		},
		{
			name: "removing a declared empty partition releases the watermark",
			steps: []step{
				{part: "t/0", add: true, want: minWM, holder: "t/0"},
				{part: "t/1", add: true, want: minWM, holder: "t/0"},
				{part: "t/0", ts: 100, want: minWM, holder: "t/1"},
				{part: "t/1", remove: true, want: 99, holder: "t/0"},
			},
			parts: []string{"t/0"},
		},
		{
			name: "removing the slowest partition lets the others advance",
			steps: []step{
				{part: "t/0", ts: 100, want: 99, holder: "t/0"},
				{part: "t/1", ts: 50, want: 99, holder: "t/1"},
				{part: "t/0", ts: 300, want: 99, holder: "t/1"},
				{part: "t/1", remove: true, want: 299, holder: "t/0"},
			},
			parts: []string{"t/0"},
		},
		{
			name: "a removed partition's late-processed events and watermarks are ignored",
			steps: []step{
				{part: "t/0", ts: 100, want: 99, holder: "t/0"},
				{part: "t/1", ts: 200, want: 99, holder: "t/0"},
				{part: "t/1", remove: true, want: 99, holder: "t/0"},
				{part: "t/1", ts: 50, want: 99, holder: "t/0"},               // would hold back at 49 for ever
				{part: "t/1", ts: 50, gossip: true, want: 99, holder: "t/0"}, // likewise
				{part: "t/0", ts: 500, want: 499, holder: "t/0"},
			},
			parts: []string{"t/0"},
		},
		{
			name: "declared again after removal: starts afresh, holding back at the current value",
			steps: []step{
				{part: "t/0", ts: 300, want: 299, holder: "t/0"},
				{part: "t/1", ts: 900, want: 299, holder: "t/0"},
				{part: "t/1", remove: true, want: 299, holder: "t/0"},
				{part: "t/0", ts: 1000, want: 999, holder: "t/0"},
				{part: "t/1", add: true, want: 999, holder: "t/1"}, // no watermark of its own yet
				{part: "t/0", ts: 2000, want: 999, holder: "t/1"},
				{part: "t/1", ts: 1500, want: 1499, holder: "t/1"},
			},
			parts: []string{"t/0", "t/1"},
		},
		{
			name: "removing an unknown partition ignores it until declared",
			steps: []step{
				{part: "t/0", ts: 100, want: 99, holder: "t/0"},
				{part: "t/9", remove: true, want: 99, holder: "t/0"},
				{part: "t/9", ts: 10, want: 99, holder: "t/0"},
				{part: "t/9", add: true, want: 99, holder: "t/9"},
			},
			parts: []string{"t/0", "t/9"},
		},
		{
			name: "removing every partition keeps the last value, holder none",
			steps: []step{
				{part: "t/0", ts: 100, want: 99, holder: "t/0"},
				{part: "t/0", remove: true, want: 99, holder: ""},
				{part: "t/0", remove: true, want: 99, holder: ""}, // twice: no-op
			},
			parts: []string{},
		},
		{
			name: "idleness: a declared empty partition holds back only until IdleTimeout",
			cfg:  WatermarkConfig{IdleTimeout: time.Second},
			steps: []step{
				{now: 0, part: "t/0", add: true, want: minWM, holder: "t/0"},
				{now: 0, part: "t/1", add: true, want: minWM, holder: "t/0"},
				{now: 100, part: "t/0", ts: 500, want: minWM, holder: "t/1"},
				{now: 999, want: minWM, holder: "t/1"},
				{now: 1000, want: 499, holder: "t/0"}, // t/1 idle since its declaration
				{now: 1100, part: "t/1", ts: 100, want: 499, holder: "t/1"},
			},
			parts: []string{"t/0", "t/1"},
		},
		{
			name: "idleness: a redeclared partition's idle clock starts at its declaration",
			cfg:  WatermarkConfig{IdleTimeout: time.Second},
			steps: []step{
				{now: 0, part: "t/0", ts: 100, want: 99, holder: "t/0"},
				{now: 0, part: "t/1", ts: 100, want: 99, holder: "t/0"},
				{now: 500, part: "t/1", remove: true, want: 99, holder: "t/0"},
				{now: 1400, part: "t/1", add: true, want: 99, holder: "t/1"},
				{now: 1500, part: "t/0", ts: 900, want: 99, holder: "t/1"},
				{now: 2399, want: 99, holder: "t/1"},
				{now: 2400, want: 899, holder: "t/0"},
			},
			parts: []string{"t/0", "t/1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := runSteps(t, tc.cfg, tc.steps)
			got := []string{}
			for _, p := range w.Partitions() {
				got = append(got, p.Partition)
			}
			if strings.Join(got, ",") != strings.Join(tc.parts, ",") {
				t.Errorf("Partitions() = %v, want %v", got, tc.parts)
			}
		})
	}
}

func TestWatermarkPartitions(t *testing.T) {
	w := runSteps(t, WatermarkConfig{MaxOutOfOrderness: 5, IdleTimeout: time.Second}, []step{
		{now: 0, part: "src/1", ts: 50, want: 44, holder: "src/1"},
		{now: 10, part: "src/0", ts: 100, want: 44, holder: "src/1"},
		{now: 1005, want: 94, holder: "src/0"},
	})
	got := w.Partitions()
	want := []PartitionWatermark{
		{Partition: "src/0", Watermark: 94, MaxTs: 100, LastSeen: at(10)},
		{Partition: "src/1", Watermark: 44, MaxTs: 50, Idle: true, LastSeen: at(0)},
	}
	if len(got) != len(want) {
		t.Fatalf("Partitions() = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Partitions()[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := json.Marshal(got); err != nil {
		t.Fatal(err)
	}
	w.RemovePartition("src/0")
	if w.Current() != 94 || w.Holder() != "" || len(w.Partitions()) != 1 {
		t.Fatalf("after RemovePartition: Current %d Holder %q Partitions %+v", w.Current(), w.Holder(), w.Partitions())
	}
}

func TestWatermarkConfigValidate(t *testing.T) {
	if err := (WatermarkConfig{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	_, err := NewWatermarks(WatermarkConfig{MaxOutOfOrderness: -1, IdleTimeout: -1, Combine: 7})
	if err == nil {
		t.Fatal("NewWatermarks accepted an invalid config")
	}
	for _, field := range []string{"MaxOutOfOrderness", "IdleTimeout", "Combine"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}

func TestWatermarkCombineText(t *testing.T) {
	for _, in := range []string{"min", "MAX", ""} {
		var c Combine
		if err := c.UnmarshalText([]byte(in)); err != nil {
			t.Fatalf("UnmarshalText(%q): %v", in, err)
		}
		b, err := c.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var c2 Combine
		if err := c2.UnmarshalText(b); err != nil || c2 != c {
			t.Fatalf("round trip %q -> %q -> %v, %v", in, b, c2, err)
		}
	}
	var c Combine
	if err := c.UnmarshalText([]byte("avg")); err == nil {
		t.Fatal("UnmarshalText accepted avg")
	}
}
