package persistence

import (
	"context"
	"time"
)

// NodeWatermark is one reading node's published event-time watermark for a
// job: the watermark below which it will send no more on-time elements, when
// it last said so, and whether it has any active partition.
type NodeWatermark struct {
	// Node is the publisher's cluster member name, unique within the fleet.
	Node string
	// Watermark is in event-time milliseconds; math.MinInt64 before any
	// event, math.MaxInt64 once every source of the node has ended.
	Watermark int64
	// Heartbeat is the publisher's wall-clock time of the write, to the
	// millisecond. Readers must not trust it across machines beyond a
	// first guess: clocks differ.
	Heartbeat time.Time
	// Idle reports that every partition the node reads is idle (or it reads
	// none), so it does not hold the fleet's watermark back.
	Idle bool
}

// WatermarkStore is an optional extension of Store, checked by type
// assertion: a board, per job, where every node reading the job's sources publishes its
// watermark so that each can combine the fleet's (docs/concepts/architecture.md, "Cluster"). Entries are
// ephemeral: they need not survive a restart of the store, and a store may
// keep them in memory only.
//
// Its methods are safe for concurrent use with each other and with Store's.
type WatermarkStore interface {
	// PublishWatermark sets w.Node's entry of job, replacing the previous
	// one. One call is atomic: a reader sees the old entry or the new one.
	PublishWatermark(ctx context.Context, job string, w NodeWatermark) error
	// Watermarks lists job's entries in no particular order; an unknown job
	// has none (not an error). The slice is the caller's. An entry the store
	// cannot decode is left out.
	Watermarks(ctx context.Context, job string) ([]NodeWatermark, error)
	// DeleteWatermark removes node's entry of job; a missing one is not an
	// error.
	DeleteWatermark(ctx context.Context, job, node string) error
}
