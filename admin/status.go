package admin

import (
	"encoding/json"
	"time"
)

// Member is one cluster member as a node sees it.
type Member struct {
	// ID is the member's actor system ID.
	ID string `json:"id"`
	// Name is the member's gossip (memberlist) node name.
	Name string `json:"name"`
	// Address is the actor remoting address, host:port.
	Address string `json:"address"`
	// GossipAddr is the gossip address, host:port (what other nodes seed with).
	GossipAddr string `json:"gossip_addr"`
	// Status is alive, leaving, left or dead.
	Status string `json:"status"`
	// Self marks the member that answered.
	Self bool `json:"self"`
	// KeysActive is the number of key actors activated on the member: live
	// for the answering node, as the member last gossiped it (every few
	// seconds) for the others; -1 when unknown (a departed member, a node
	// that does not gossip it).
	KeysActive int `json:"keys_active"`
	// Uptime is how long the member has run (from the start time it
	// gossips), 0 when unknown. JSON carries it in nanoseconds.
	Uptime time.Duration `json:"uptime_ns"`
	// Memory is the member's key memory budget; nil when the answering node
	// does not know it (another member's).
	Memory *KeyMemory `json:"memory,omitempty"`
}

// KeyMemory is how much memory a node's live key actors take against its
// budget, and why key actors passivated.
type KeyMemory struct {
	// BudgetBytes is the memory budget (0: none); AccountedBytes what the
	// live key actors are accounted (an estimate: a fixed cost per
	// activation plus a multiple of the key's encoded state).
	BudgetBytes    int64 `json:"budget_bytes"`
	AccountedBytes int64 `json:"accounted_bytes"`
	// Activations counts key actors activated, ever (a reactivation loads
	// the key from the store); Passivations those stopped, by cause: idle,
	// budget, request, stopped.
	Activations  int64            `json:"activations"`
	Passivations map[string]int64 `json:"passivations,omitempty"`
}

// Location says where a join key lives.
type Location struct {
	Job string `json:"job"`
	Key string `json:"key"`
	// Node is the address of the member that owns (or would activate) the key.
	Node string `json:"node"`
	// Active reports whether the key's actor is activated right now.
	Active bool `json:"active"`
}

// KeyState is a join key's full state: its join buffers, applied offsets,
// fencing epoch and pending timers.
type KeyState struct {
	Job string `json:"job"`
	Key string `json:"key"`
	// Node is the address of the member holding the key; empty when the state
	// was read from the store (InspectOffline).
	Node string `json:"node"`
	// Left is the left (value-state) row as JSON, or null when absent. A
	// changelog join whose left side holds many rows per key shows its
	// first left row here and the others first among Rights.
	Left json.RawMessage `json:"left"`
	// Rights are the right rows as JSON, sorted by primary key.
	Rights []json.RawMessage `json:"rights"`
	// Offsets is the highest applied offset per source partition.
	Offsets map[string]int64 `json:"offsets"`
	// Epoch is the key's fencing epoch (0 before fenced writes exist).
	Epoch int64 `json:"epoch"`
	// Timers are the pending event-time timers, ascending.
	Timers []int64 `json:"timers"`
	// Late counts the key's events dropped as late.
	Late int64 `json:"late"`
	// DeadLettered counts the key's events sent to the dead letter sink.
	DeadLettered int64 `json:"dead_lettered"`
	// Watermark is the watermark the key has advanced to (event-time joins;
	// math.MinInt64 before any).
	Watermark int64 `json:"watermark"`
	// State is an event-time join's buffers as JSON (window contents,
	// interval buffers, temporal versions and probes); absent for the
	// changelog join, whose state is Left and Rights.
	State json.RawMessage `json:"state,omitempty"`
	// Outbox counts inputs whose outputs the key keeps for re-emission until
	// their offsets are committed.
	Outbox int `json:"outbox"`
}

// Why says what a key's event-time join is waiting for, and what holds the
// watermark it needs back: the answer of GET /v1/jobs/{job}/keys/{key}/why.
type Why struct {
	Job string `json:"job"`
	Key string `json:"key"`
	// Node is the address of the member holding the key.
	Node string `json:"node"`
	// Watermark is the job's current combined watermark on the answering
	// node; KeyWatermark the one the key has seen (it catches up with the
	// next event or timer).
	Watermark    int64 `json:"watermark"`
	KeyWatermark int64 `json:"key_watermark"`
	// HeldBy is the partition holding the combined watermark back (the
	// slowest non-idle one), when there is one.
	HeldBy *Watermark `json:"held_by,omitempty"`
	// Waits are what the key waits for, soonest first (at most MaxWaits).
	Waits []Wait `json:"waits"`
	// Note explains an empty Waits, e.g. for a join that does not wait on
	// event time.
	Note string `json:"note,omitempty"`
}

// Wait is one pending output or release of a key's state.
type Wait struct {
	What string `json:"what"`
	// NeedsWatermark is the watermark at which it happens.
	NeedsWatermark int64 `json:"needs_watermark"`
	// Behind is how far (event-time ms) the current watermark is from it;
	// 0 when it is due (it happens with the key's next event or timer round).
	Behind int64 `json:"behind_ms"`
}

// MaxWaits bounds Why.Waits.
const MaxWaits = 100

// Watermark is the watermark state of one source partition.
type Watermark struct {
	Source    string `json:"source"`
	Partition string `json:"partition"`
	// Watermark is the partition's watermark (event time); math.MinInt64
	// before any event.
	Watermark int64 `json:"watermark"`
	// MaxTs is the greatest event timestamp seen; math.MinInt64 before any.
	MaxTs int64 `json:"max_ts"`
	// LagMs is how far, in event-time milliseconds, the partition's watermark is
	// behind the newest event any partition of the job has seen.
	LagMs int64 `json:"lag_ms"`
	// Idle reports whether the partition is idle (left out of the combined
	// watermark).
	Idle bool `json:"idle"`
}

// Watermarks is the answer of GET /v1/jobs/{job}/watermarks.
type Watermarks struct {
	Job string `json:"job"`
	// Global is the job's combined watermark on the answering node.
	Global     int64       `json:"global"`
	Partitions []Watermark `json:"partitions"`
}

// HotKey is one of a job's busiest keys.
type HotKey struct {
	Job          string  `json:"job"`
	Key          string  `json:"key"`
	EventsPerSec float64 `json:"events_per_sec"`
	StateBytes   int64   `json:"state_bytes"`
}
