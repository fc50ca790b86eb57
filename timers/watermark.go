package timers

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Combine says how the watermarks of the active partitions combine into one.
type Combine uint8

const (
	// CombineMin takes the smallest partition watermark: the combined
	// watermark waits for the slowest partition. It is the default (the zero
	// value) and the only choice that never declares data of a slow partition
	// late.
	CombineMin Combine = iota
	// CombineMax takes the largest partition watermark: the combined
	// watermark follows the fastest partition, and the slower ones' data
	// becomes late. Use it only when partitions are known to be in step.
	CombineMax
)

var combineNames = [...]string{"min", "max"}

func (c Combine) String() string {
	if int(c) < len(combineNames) {
		return combineNames[c]
	}
	return fmt.Sprintf("Combine(%d)", uint8(c))
}

// MarshalText encodes the combine as "min" or "max".
func (c Combine) MarshalText() ([]byte, error) {
	if int(c) >= len(combineNames) {
		return nil, fmt.Errorf("timers: unknown combine %d", uint8(c))
	}
	return []byte(c.String()), nil
}

// UnmarshalText decodes "min" or "max" (any case); the empty string is min.
func (c *Combine) UnmarshalText(b []byte) error {
	switch strings.ToLower(string(b)) {
	case "", "min":
		*c = CombineMin
	case "max":
		*c = CombineMax
	default:
		return fmt.Errorf("timers: unknown combine %q (want min or max)", b)
	}
	return nil
}

// WatermarkConfig configures Watermarks. The zero value is valid: no
// out-of-orderness, idleness disabled, min combine.
type WatermarkConfig struct {
	// MaxOutOfOrderness is how far, in event-time milliseconds, an event may
	// arrive behind the greatest timestamp seen in its partition and still be
	// on time. A partition's watermark is maxTs - MaxOutOfOrderness - 1.
	// Must not be negative.
	MaxOutOfOrderness int64
	// IdleTimeout is the processing time after which a partition with no
	// events is marked idle and stops holding the combined watermark back.
	// Zero disables idleness: a quiet partition holds it back for ever.
	// Must not be negative.
	IdleTimeout time.Duration
	// Combine is how active partitions' watermarks combine; min by default.
	Combine Combine
}

// Validate reports every invalid field at once.
func (c WatermarkConfig) Validate() error {
	var errs []error
	if c.MaxOutOfOrderness < 0 {
		errs = append(errs, fmt.Errorf("timers: MaxOutOfOrderness %d is negative", c.MaxOutOfOrderness))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("timers: IdleTimeout %v is negative", c.IdleTimeout))
	}
	if int(c.Combine) >= len(combineNames) {
		errs = append(errs, fmt.Errorf("timers: Combine %d is unknown (want CombineMin or CombineMax)", uint8(c.Combine)))
	}
	return errors.Join(errs...)
}

// PartitionWatermark is the state of one source partition, as shown by the
// admin CLI.
type PartitionWatermark struct {
	// Partition names the partition, usually record.Position.PartitionID().
	Partition string `json:"partition"`
	// Watermark is the partition's own watermark; math.MinInt64 before any
	// event.
	Watermark int64 `json:"watermark"`
	// MaxTs is the greatest event timestamp observed; math.MinInt64 before
	// any event (and when the partition was fed only by ObserveWatermark).
	MaxTs int64 `json:"max_ts"`
	// Idle reports whether the partition is idle and so left out of the
	// combined watermark.
	Idle bool `json:"idle"`
	// LastSeen is the processing time of the partition's last event.
	LastSeen time.Time `json:"last_seen"`
}

type partition struct {
	maxTs    int64
	wm       int64
	lastSeen time.Time
	idle     bool
}

// Watermarks tracks a watermark per source partition and combines them into
// one. It is not safe for concurrent use.
//
// The combined watermark (Current) never goes backwards: when an idle
// partition resumes behind it, Current stays where it is and, under the min
// combine, does not advance again until that partition catches up.
type Watermarks struct {
	cfg     WatermarkConfig
	parts   map[string]*partition
	removed map[string]struct{} // partitions removed and not declared again
	current int64
	holder  string
}

// NewWatermarks returns an empty tracker. It reports an error when cfg is
// invalid.
func NewWatermarks(cfg WatermarkConfig) (*Watermarks, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Watermarks{
		cfg:     cfg,
		parts:   make(map[string]*partition),
		removed: make(map[string]struct{}),
		current: math.MinInt64,
	}, nil
}

// Config returns the configuration the tracker was built with.
func (w *Watermarks) Config() WatermarkConfig { return w.cfg }

func (w *Watermarks) part(name string, now time.Time) *partition {
	p := w.parts[name]
	if p == nil {
		p = &partition{maxTs: math.MinInt64, wm: math.MinInt64, lastSeen: now}
		w.parts[name] = p
	}
	return p
}

// AddPartition declares a partition before its first event, so that under
// the min combine it holds the combined watermark back (at its value now,
// which never decreases) until it sends an event or, with idleness enabled,
// goes idle IdleTimeout after now. A source assigned a partition should
// declare it: otherwise the combined watermark could pass data the partition
// has not delivered yet. Declaring a known partition does nothing; declaring
// a removed one starts it afresh, with no watermark.
func (w *Watermarks) AddPartition(partition string, now time.Time) {
	if _, ok := w.parts[partition]; ok {
		return
	}
	delete(w.removed, partition)
	w.part(partition, now)
	w.recompute()
}

// RemovePartition forgets a partition, for instance when its source is
// unassigned from this node (a Kafka rebalance revoked it): it stops holding
// the combined watermark back, as in Flink. The combined watermark does not go
// backwards. Until AddPartition declares it again, Observe and
// ObserveWatermark ignore the partition, so a record of it delivered before
// the revocation and processed after it cannot bring it back. Removing an
// unknown partition does only that.
func (w *Watermarks) RemovePartition(partition string) {
	w.removed[partition] = struct{}{}
	if _, ok := w.parts[partition]; !ok {
		return
	}
	delete(w.parts, partition)
	w.recompute()
}

// Observe records an event of partition with event timestamp eventTs, seen
// at processing time now. The partition becomes active (if it was idle) and
// its watermark becomes max seen ts - MaxOutOfOrderness - 1. An event of a
// removed partition is ignored (see RemovePartition).
func (w *Watermarks) Observe(partition string, eventTs int64, now time.Time) {
	if _, gone := w.removed[partition]; gone {
		return
	}
	p := w.part(partition, now)
	if eventTs > p.maxTs {
		p.maxTs = eventTs
		p.wm = max(p.wm, subSat(subSat(eventTs, w.cfg.MaxOutOfOrderness), 1))
	}
	p.lastSeen = now
	p.idle = false
	w.recompute()
}

// ObserveWatermark records that partition's watermark is at least watermark,
// as learnt at processing time now, for instance from another node's gossip.
// The partition becomes active; its watermark never goes backwards. It is
// ignored for a removed partition (see RemovePartition).
func (w *Watermarks) ObserveWatermark(partition string, watermark int64, now time.Time) {
	if _, gone := w.removed[partition]; gone {
		return
	}
	p := w.part(partition, now)
	p.wm = max(p.wm, watermark)
	p.lastSeen = now
	p.idle = false
	w.recompute()
}

// Advance marks idle every active partition that has seen nothing for at
// least IdleTimeout before now, and recomputes the combined watermark. It
// does nothing when idleness is disabled.
func (w *Watermarks) Advance(now time.Time) {
	if w.cfg.IdleTimeout <= 0 {
		return
	}
	changed := false
	for _, p := range w.parts {
		if !p.idle && now.Sub(p.lastSeen) >= w.cfg.IdleTimeout {
			p.idle = true
			changed = true
		}
	}
	if changed {
		w.recompute()
	}
}

// recompute combines the active partitions' watermarks. Ties for the holder
// go to the smallest partition name so the result is deterministic.
func (w *Watermarks) recompute() {
	holder, combined, found := "", int64(0), false
	for name, p := range w.parts {
		if p.idle {
			continue
		}
		better := !found
		if found {
			switch {
			case p.wm == combined:
				better = name < holder
			case w.cfg.Combine == CombineMax:
				better = p.wm > combined
			default:
				better = p.wm < combined
			}
		}
		if better {
			holder, combined, found = name, p.wm, true
		}
	}
	w.holder = holder
	if found && combined > w.current {
		w.current = combined
	}
}

// Current returns the combined watermark over the active partitions:
// math.MinInt64 before any event. When every partition is idle it keeps the
// last combined value. It never decreases.
func (w *Watermarks) Current() int64 { return w.current }

// Holder returns the active partition that the combined watermark follows:
// under the min combine the slowest one, the partition holding the watermark
// back; under max the fastest. Ties go to the smallest name. It returns ""
// when no partition is active.
func (w *Watermarks) Holder() string { return w.holder }

// Partitions returns every known partition's state, sorted by name.
func (w *Watermarks) Partitions() []PartitionWatermark {
	out := make([]PartitionWatermark, 0, len(w.parts))
	for name, p := range w.parts {
		out = append(out, PartitionWatermark{
			Partition: name,
			Watermark: p.wm,
			MaxTs:     p.maxTs,
			Idle:      p.idle,
			LastSeen:  p.lastSeen,
		})
	}
	slices.SortFunc(out, func(a, b PartitionWatermark) int { return strings.Compare(a.Partition, b.Partition) })
	return out
}

// subSat returns a-b for b >= 0, saturating at math.MinInt64.
func subSat(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}
