package actors

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// TestEncodeRequestRoundTrips: a request a node encodes for a key actor in
// another process (EncodeRequest) is, once the actor decodes it (request),
// the request a local actor takes as it is, protocol fields and all; and
// its events carry the ops the wire has always carried (a changelog op; an
// event-time input's row kind, "c" for an insert), so a key actor of an
// earlier version reads it too.
func TestEncodeRequestRoundTrips(t *testing.T) {
	pos := func(off int64) record.Position { return record.Position{Source: "s", Partition: 2, Offset: off} }
	proto := keycore.Request{Prev: map[string]int64{"s/2": 4}, Committed: map[string]int64{"s/2": 3},
		Sender: "run-1", Resend: true}
	for _, tc := range []struct {
		name    string
		timed   bool
		req     keycore.Request
		wantOps []string
	}{
		{name: "changelog", req: keycore.Request{Events: []keycore.Event{
			{Side: record.Left, Op: record.OpCreate, After: record.Row{"id": json.Number("7"), "name": "ann"}, Pos: pos(5), Seq: 0, Ts: 11, SrcPos: "lsn:9"},
			{Side: record.Right, Op: record.OpUpdate, Before: record.Row{"id": json.Number("1"), "tags": []any{"a", json.Number("2")}},
				After: record.Row{"id": json.Number("1"), "nested": map[string]any{"x": nil, "y": true}}, Pos: pos(6), Seq: 1},
			{Side: record.Right, Op: record.OpDelete, Before: record.Row{"id": json.Number("1")}, Pos: pos(7)},
		}}, wantOps: []string{"c", "u", "d"}},
		{name: "changelog, no events", req: keycore.Request{}, wantOps: nil},
		{name: "event time", timed: true, req: keycore.Request{Fire: true, Watermark: 90, Events: []keycore.Event{
			{Side: record.Left, After: record.Row{"k": "7", "ts": json.Number("100")}, Pos: pos(5), Ts: 100, Watermark: 80},
			{Side: record.Right, After: record.Row{"k": "7", "v": json.Number("1.5")}, Pos: pos(6), Ts: 101, Watermark: 85, Kind: record.UpdateAfter},
			{Side: record.Right, After: record.Row{"k": "7"}, Pos: pos(7), Ts: 102, Watermark: 85, Kind: record.Delete},
		}}, wantOps: []string{"c", record.UpdateAfter.String(), record.Delete.String()}},
		{name: "event time, a fire only", timed: true, req: keycore.Request{Fire: true, Watermark: 120}, wantOps: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Prev, req.Committed, req.Sender, req.Resend = proto.Prev, proto.Committed, proto.Sender, proto.Resend
			a, err := EncodeRequest("7", &req, tc.timed)
			if err != nil {
				t.Fatal(err)
			}
			if a.Key != "7" {
				t.Errorf("key %q, want 7", a.Key)
			}
			var ops []string
			for i, pe := range a.Events {
				ops = append(ops, pe.Op)
				// An event-time input's row travels as JSON, a changelog
				// event's rows in the binary encoding (AppendRow).
				if tc.timed && (pe.After == nil || pe.AfterBin != nil || pe.BeforeBin != nil) {
					t.Errorf("event %d: after %q, after_bin %x, before_bin %x; want JSON after only", i, pe.After, pe.AfterBin, pe.BeforeBin)
				}
				if !tc.timed && (pe.After != nil || pe.Before != nil) {
					t.Errorf("event %d: JSON rows %q %q; want binary rows only", i, pe.Before, pe.After)
				}
			}
			if !reflect.DeepEqual(ops, tc.wantOps) {
				t.Errorf("ops %q, want %q", ops, tc.wantOps)
			}
			deps := &Deps{}
			if tc.timed {
				deps.NewTimed = func() joins.Timed { return nil }
			}
			got, err := (&keyActor{deps: deps}).request(a, &requestBuf{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Events) == 0 && len(req.Events) == 0 {
				got.Events, req.Events = nil, nil // no events: empty and nil alike
			}
			if !reflect.DeepEqual(*got, req) {
				t.Errorf("decoded\n%+v\nwant\n%+v", *got, req)
			}
		})
	}
}
