package keycore

import (
	"encoding/json"
	"testing"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// TestCoreMulti drives a multi-way join through a Core: outputs come out,
// the state survives Encode and Restore, and Debezium dedup tells tables
// apart (the same primary key in two tables is two rows).
func TestCoreMulti(t *testing.T) {
	spec := &joins.MultiSpec{Tables: []joins.MultiTable{
		{Name: "users", PK: "id", JoinOn: "id"},
		{Name: "domains", PK: "id", JoinOn: "user_id", Kind: joins.LeftOuter},
		{Name: "settings", PK: "id", JoinOn: "user_id"},
	}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Machine: MachineSpec{Multi: spec}}
	c := New(cfg, "1")
	c.Init()
	n := json.Number("1")
	ev := func(side record.Side, off int64, row record.Row) Event {
		return Event{Side: side, Op: record.OpCreate, After: row, Pos: record.Position{Source: "s", Offset: off}, SrcPos: "lsn-1"}
	}
	r := c.Step(&Request{Events: []Event{
		ev(0, 1, record.Row{"id": n}),
		ev(1, 2, record.Row{"id": n, "user_id": n}),
		ev(2, 3, record.Row{"id": n, "user_id": n}),
	}}, 0)
	if r.Err != nil || r.Duplicates != 0 {
		t.Fatalf("step: err %v, %d duplicates (the same pk and source position in three tables are three rows)", r.Err, r.Duplicates)
	}
	if len(r.Outputs) != 1 || r.Outputs[0].PK != "[1,1,1]" || r.Outputs[0].Kind != record.Insert {
		t.Fatalf("outputs %+v, want one +I [1,1,1]", r.Outputs)
	}
	c.Durable()
	state, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	again := New(cfg, "1")
	if err := again.Restore(c.Offsets(), state); err != nil {
		t.Fatal(err)
	}
	if got := again.Machine().Multi().Rows(2); len(got) != 1 {
		t.Fatalf("restored settings rows %v", got)
	}
	// A replay of the domains change at a new offset is a duplicate.
	r = again.Step(&Request{Events: []Event{ev(1, 4, record.Row{"id": n, "user_id": n})}}, 0)
	if r.Duplicates != 1 || len(r.Outputs) != 0 {
		t.Fatalf("replayed change: %d duplicates, outputs %v; want 1 and none", r.Duplicates, r.Outputs)
	}
}
