package keycore

import (
	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// FirePart is the outbox partition of outputs made by advancing the
// watermark (timers firing) rather than by an input; its offsets are
// watermarks. A sender reports the watermark of its last completed fire
// under this name in Request.Committed.
const FirePart = "~watermark"

// Event is one input of a Request: a change of the changelog join, or an
// element of an event-time join, with its source position.
type Event struct {
	Side          record.Side
	Op            record.Op  // changelog join: the change's op
	Before, After record.Row // changelog join: both rows; event-time join: After
	Pos           record.Position
	Seq           int         // record.Event.Seq: which of an input's events this is
	Ts            int64       // event-time join: the element's time (ms)
	Watermark     int64       // event-time join: the watermark before this input
	SrcPos        string      // changelog join: the Debezium source position (dedup); "" = none
	Kind          record.Kind // event-time join: the row kind of a changelog input (joins.Element.Kind)
}

// Request is what a sender asks of a key: apply Events in order, after
// checking that the earlier unanswered requests it names in Prev are
// applied; drop outbox entries at or below Committed; and, with Fire, advance
// the watermark to Watermark.
type Request struct {
	Events []Event
	// Prev: partition id -> offset of the sender's earlier unanswered
	// requests to this key. A request that builds on one the key never
	// applied is refused (Ready.Gap).
	Prev map[string]int64
	// Committed: partition id -> offset the sender has committed; FirePart
	// -> the watermark of its last completed fire.
	Committed map[string]int64
	Fire      bool
	Watermark int64
	// Limited, with Fire, fires only the timers at or below FireLimit (see
	// Machine.Advance): for a driver that fires many keys' timers in (time,
	// key) order.
	Limited   bool
	FireLimit int64
	// Sender identifies the sender's run (a random ID per node start): a
	// fire re-sends kept outputs of earlier fires that this Sender was not
	// sent; Resend sends them all.
	Sender string
	Resend bool
}

// Write is what must be made durable before a Ready is answered: the key's
// applied offsets and its encoded state (nil: the key holds nothing and its
// stored state may be deleted), and its earliest timer for the store's
// timer index.
//
// With Config.Parts the state is a base (State) and Parts, and Delta says
// they change the state the Write before this one left (see parts.go);
// the driver hands them to the store as they are
// (persistence.Snapshot.Parts and Delta) and writes its Writes in order.
type Write struct {
	Offsets   record.Offsets // in order (record.Offsets); never changed after the Write is made
	State     []byte
	HasTimer  bool
	NextTimer int64
	Parts     []stateparts.Part
	Delta     bool
	// Size estimates the bytes the key's whole state takes (len(State)
	// without Config.Parts), for drivers that account memory per key.
	Size int
	// Cached is the heap the join's snapshot caches hold (the event-time
	// joins' element JSON, Machine.CachedJSON), on top of what Size says:
	// a window join key's decoded state is about 4× its encoding, and the
	// cache as much again as the elements' part of it.
	Cached int
}

// Ready is what one Step decided.
type Ready struct {
	// Reload: the request names an earlier one this activation has not
	// applied, and nothing of this activation is waiting to be written. It
	// may be stale (another activation took the key since): the driver
	// should Reset, load the durable state, and Step the request again.
	Reload bool
	// Gap: the request was refused because an earlier one is missing.
	Gap bool
	// Err: the request was refused (bad input, state that cannot be
	// encoded); the state is as it was before the Step.
	Err error
	// Skipped counts events already applied; Duplicates changes dropped as
	// Debezium replays.
	Skipped, Duplicates int
	// Outputs are the request's outputs: new ones, stamped with the key's
	// sequence, then kept ones re-sent. They share rows with the state:
	// read-only.
	Outputs []record.Output
	// Late are the event-time inputs the join found late.
	Late []joins.Late
	// Write, when not nil, must be durable before the answer is given;
	// call Durable once it is (or failed). Nil: answer at once, unless Wait.
	Write *Write
	// Wait (Config.Coalesce only): the answer waits for the Write that the
	// next Flush gives, once the pending ones are durable.
	Wait bool
}
