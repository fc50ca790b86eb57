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

// LocalApply is a request for a key actor in this process, in one of two
// forms the actor turns into the same key core request: Req, the request
// in memory as a reader of this node made it (its rows decoded: nothing
// encoded either way, and no protobuf shells; docs/performance/2026-12-05-node-profile.md, "A local
// request without the protobuf messages"), or Wire, an Apply that came from
// another node in an ApplyBatch (the actor decodes it). Either way the
// actor answers with a LocalApplied. Req and its events and rows are the
// actor's from then on: read-only, for the sender too (a resend is a copy,
// sendstate.Resend).
//
// With Reply set, the answer goes to Reply instead of to the sender: the
// node waits on a channel rather than on a protoactor future (a process
// registered and removed, and a timer, per request).
type LocalApply struct {
	Req   *keycore.Request
	Wire  *keypb.Apply
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

// KeyEvent is a routed changelog event as the key core takes it; srcPos
// is its Debezium source position when duplicates are dropped, else "".
func KeyEvent(e record.Event, srcPos string) keycore.Event {
	return keycore.Event{Side: e.Side, Op: e.Op, Before: e.Before, After: e.After, Pos: e.Pos, Seq: e.Seq, Ts: e.Ts, SrcPos: srcPos}
}

// EncodeRequest is req, a request to key made in memory (LocalApply.Req),
// as the Apply a key actor in another process takes: a changelog event's
// rows in the binary row encoding (AppendRow) and its op; an event-time
// input's (timed) row as JSON and its row kind as op ("c" for an insert,
// as an input without a kind field). The key actor's request turns it back
// into req.
func EncodeRequest(key record.Key, req *keycore.Request, timed bool) (*keypb.Apply, error) {
	a := &keypb.Apply{Key: string(key), Prev: req.Prev, Committed: req.Committed, Fire: req.Fire,
		Watermark: req.Watermark, Session: req.Sender, Resend: req.Resend}
	if len(req.Events) > 0 {
		a.Events = make([]*keypb.Event, len(req.Events))
		pes := make([]keypb.Event, len(req.Events))
		for i := range req.Events {
			e, pe := &req.Events[i], &pes[i]
			pe.Side, pe.Source, pe.Partition, pe.Offset = int32(e.Side), e.Pos.Source, e.Pos.Partition, e.Pos.Offset
			pe.Seq, pe.Ts, pe.Watermark, pe.SrcPos = int32(e.Seq), e.Ts, e.Watermark, e.SrcPos
			var err error
			if timed {
				pe.Op = "c"
				if e.Kind != record.Insert {
					pe.Op = e.Kind.String()
				}
				pe.After, err = encodeRow(e.After)
			} else {
				pe.Op = e.Op.String()
				if pe.BeforeBin, err = AppendRow(nil, e.Before); err == nil {
					pe.AfterBin, err = AppendRow(nil, e.After)
				}
			}
			if err != nil {
				return nil, err
			}
			a.Events[i] = pe
		}
	}
	return a, nil
}

// eventRow decodes one row of an event: its binary form when set, else its
// JSON form.
func eventRow(bin, js []byte) (record.Row, error) {
	if len(bin) > 0 {
		return DecodeRowBin(bin)
	}
	return DecodeRow(js)
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
