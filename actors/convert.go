package actors

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// EncodeEvent turns a routed event into its wire form.
func EncodeEvent(e record.Event) (*keypb.Event, error) {
	before, err := encodeRow(e.Before)
	if err != nil {
		return nil, err
	}
	after, err := encodeRow(e.After)
	if err != nil {
		return nil, err
	}
	return &keypb.Event{
		Side: int32(e.Side), Op: e.Op.String(), Before: before, After: after,
		Source: e.Pos.Source, Partition: e.Pos.Partition, Offset: e.Pos.Offset, Seq: int32(e.Seq), Ts: e.Ts,
	}, nil
}

// EventRows are the decoded rows of one event of a LocalApply.
type EventRows struct{ Before, After record.Row }

// LocalApply is an Apply for a key actor in this process: Rows[i] holds
// the rows of Apply.Events[i], whose JSON (before, after) may be empty.
// Local sends pass pointers, so the rows need no encoding; the actor answers
// with a LocalApplied. The rows are the actor's from then on: read-only.
//
// With Reply set, the answer goes to Reply instead of to the sender: the
// node waits on a channel rather than on a protoactor future (a process
// registered and removed, and a timer, per request).
type LocalApply struct {
	Apply *keypb.Apply
	Rows  []EventRows
	Reply Replier
}

// Replier takes the answer to a LocalApply: the key actor's (a
// *LocalApplied, or a *keypb.Applied with an error), or DeadLetter when
// the request reached no actor. Reply is called from the actor's goroutine
// (or protoactor's dead-letter handler) and must never block. A request is
// answered once; a Replier drops any further answer. A Replier may be
// shared by many requests (the node's reader awaits a whole batch's on one
// channel) when each request's Replier value tells them apart.
type Replier interface {
	Reply(x any)
}

// ReplyChan is a Replier that puts the answer on the channel, which needs
// room for it (an answer that finds none is dropped).
type ReplyChan chan any

// Reply puts x on c if there is room.
func (c ReplyChan) Reply(x any) {
	select {
	case c <- x:
	default: // one answer per request: never block the actor
	}
}

// LocalApplied answers a LocalApply: Applied without its Outputs, which are
// in Outputs, decoded. They share rows with the actor's state: read-only.
type LocalApplied struct {
	Applied *keypb.Applied
	Outputs []record.Output
}

// EventShell is EncodeEvent without the rows (for a LocalApply), and the
// rows.
func EventShell(e record.Event) (*keypb.Event, EventRows) {
	pe := &keypb.Event{}
	return pe, ShellInto(pe, e)
}

// ShellInto is EventShell into pe, a new zero Event (the caller's: one of
// a batch's, made together).
func ShellInto(pe *keypb.Event, e record.Event) EventRows {
	pe.Side, pe.Op = int32(e.Side), e.Op.String()
	pe.Source, pe.Partition, pe.Offset, pe.Seq, pe.Ts = e.Pos.Source, e.Pos.Partition, e.Pos.Offset, int32(e.Seq), e.Ts
	return EventRows{Before: e.Before, After: e.After}
}

// FillRows encodes rows into the events of a (made by EventShell), in the
// binary row encoding (AppendRow), for a request that goes to another
// process after all. Events that carry rows already are left as they are.
func FillRows(a *keypb.Apply, rows []EventRows) error {
	for i, pe := range a.Events {
		if i >= len(rows) || pe.Before != nil || pe.After != nil || pe.BeforeBin != nil || pe.AfterBin != nil {
			continue
		}
		var err error
		if pe.BeforeBin, err = AppendRow(nil, rows[i].Before); err != nil {
			return err
		}
		if pe.AfterBin, err = AppendRow(nil, rows[i].After); err != nil {
			return err
		}
	}
	return nil
}

// WireRows decodes the rows of a's events for a key actor in this process:
// the binary rows (before_bin, after_bin) when an event has them, else its
// JSON rows. It is what a LocalApply's Rows hold.
func WireRows(a *keypb.Apply) ([]EventRows, error) {
	rows := make([]EventRows, len(a.Events))
	for i, pe := range a.Events {
		var err error
		if rows[i].Before, err = eventRow(pe.BeforeBin, pe.Before); err != nil {
			return nil, err
		}
		if rows[i].After, err = eventRow(pe.AfterBin, pe.After); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// eventRow decodes one row of an event: its binary form when set, else its
// JSON form.
func eventRow(bin, js []byte) (record.Row, error) {
	if len(bin) > 0 {
		return DecodeRowBin(bin)
	}
	return DecodeRow(js)
}

// eventOf is DecodeEvent with the rows given.
func eventOf(key record.Key, pe *keypb.Event, rows EventRows) (record.Event, error) {
	op, ok := record.ParseOp(pe.Op)
	if !ok {
		return record.Event{}, fmt.Errorf("actors: unknown op %q", pe.Op)
	}
	return record.Event{
		Key: key, Side: record.Side(pe.Side), Op: op, Before: rows.Before, After: rows.After,
		Pos: record.Position{Source: pe.Source, Partition: pe.Partition, Offset: pe.Offset}, Seq: int(pe.Seq), Ts: pe.Ts,
	}, nil
}

// DecodeEvent is the inverse of EncodeEvent for the actor with key.
func DecodeEvent(key record.Key, pe *keypb.Event) (record.Event, error) {
	op, ok := record.ParseOp(pe.Op)
	if !ok {
		return record.Event{}, fmt.Errorf("actors: unknown op %q", pe.Op)
	}
	before, err := eventRow(pe.BeforeBin, pe.Before)
	if err != nil {
		return record.Event{}, err
	}
	after, err := eventRow(pe.AfterBin, pe.After)
	if err != nil {
		return record.Event{}, err
	}
	return record.Event{
		Key: key, Side: record.Side(pe.Side), Op: op, Before: before, After: after,
		Pos: record.Position{Source: pe.Source, Partition: pe.Partition, Offset: pe.Offset}, Seq: int(pe.Seq), Ts: pe.Ts,
	}, nil
}

// EncodeOutput turns a join output into its wire form, its row in the
// binary row encoding.
func EncodeOutput(o record.Output) (*keypb.Output, error) {
	row, err := AppendRow(nil, o.Row)
	if err != nil {
		return nil, err
	}
	return &keypb.Output{Id: o.ID, Kind: int32(o.Kind), Pk: o.PK, RowBin: row, Ts: o.Ts, Seq: o.Seq}, nil
}

// DecodeOutput is the inverse of EncodeOutput (and decodes an output whose
// row is JSON text).
func DecodeOutput(po *keypb.Output) (record.Output, error) {
	row, err := eventRow(po.RowBin, po.Row)
	if err != nil {
		return record.Output{}, err
	}
	return record.Output{ID: po.Id, Kind: record.Kind(po.Kind), PK: po.Pk, Row: row, Ts: po.Ts, Seq: po.Seq}, nil
}

// encodeRow encodes a row for the wire (jsonenc's reflection-free path for
// decoded JSON values; encoding/json otherwise).
func encodeRow(r record.Row) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	if b, ok := jsonenc.AppendValue(nil, map[string]any(r)); ok {
		return b, nil
	}
	return json.Marshal(r)
}

// DecodeRow decodes a JSON row, keeping numbers as json.Number; empty input
// is a nil row.
func DecodeRow(b []byte) (record.Row, error) {
	if len(b) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var r record.Row
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("actors: bad row: %w", err)
	}
	return r, nil
}

// DecodeState splits a key actor's persisted state into the join snapshot
// and the number of outbox entries, for offline inspection.
func DecodeState(b []byte) (join []byte, outbox int, err error) { return keycore.DecodeState(b) }

// StateInfo is a key actor's persisted state as offline tools see it.
type StateInfo = keycore.StateInfo

// DecodeStateInfo decodes a key actor's persisted state for offline
// inspection.
func DecodeStateInfo(b []byte) (StateInfo, error) { return keycore.DecodeStateInfo(b) }

// EncodeJoinState wraps a join snapshot as a key actor persists it (with an
// empty outbox): for tools and tests that write state directly.
func EncodeJoinState(join []byte) ([]byte, error) { return keycore.EncodeJoinState(join) }
