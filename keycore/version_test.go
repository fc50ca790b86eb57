package keycore

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// TestCoreVersioned: on a versioned side a change older than its row's
// last is reported late (out-of-order) and changes nothing, a delete's
// time is kept (an older change cannot bring the row back), the versions
// survive a reload from the stored state (whole or in parts), and a move
// to another join value is applied at both keys whatever its time.
func TestCoreVersioned(t *testing.T) {
	spec := &joins.CDCSpec{Type: joins.RightOuter,
		Left:  joins.SideSpec{Name: "users", PK: "id", JoinOn: "id"},
		Right: joins.SideSpec{Name: "domains", PK: "id", JoinOn: "user_id", Versioned: true}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	domain := func(id, user int, name string) record.Row {
		return record.Row{"id": json.Number(strconv.Itoa(id)), "user_id": json.Number(strconv.Itoa(user)), "name": name}
	}
	for _, parts := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "parts"}[parts], func(t *testing.T) {
			cfg := &Config{Machine: MachineSpec{CDC: spec}, Parts: parts}
			var st *stored
			cores := map[record.Key]*Core{}
			core := func(k record.Key) *Core {
				if cores[k] == nil {
					cores[k] = New(cfg, k)
					cores[k].Init()
				}
				return cores[k]
			}
			off := int64(0)
			// step applies c (routed as a node routes it) at time ts and
			// returns the outputs and late reasons of every key it reached.
			step := func(ts int64, c record.Change) (outs []record.Output, late []string) {
				t.Helper()
				off++
				c.Pos, c.TsMs = record.Position{Source: "s", Offset: off}, ts
				evs, err := spec.Route(record.Right, c)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					k := core(e.Key)
					r := k.Step(&Request{Events: []Event{{Side: e.Side, Op: e.Op, Before: e.Before, After: e.After, Pos: e.Pos, Seq: e.Seq, Ts: e.Ts}}}, 0)
					if r.Err != nil {
						t.Fatal(r.Err)
					}
					if r.Write != nil && e.Key == "1" {
						st = st.apply(r.Write)
					}
					k.Durable()
					outs = append(outs, r.Outputs...)
					for _, l := range r.Late {
						late = append(late, l.Reason)
					}
				}
				return outs, late
			}
			want := func(what string, outs []record.Output, late []string, nOuts, nLate int) {
				t.Helper()
				if len(outs) != nOuts || len(late) != nLate {
					t.Fatalf("%s: %d outputs, late %v; want %d outputs, %d late", what, len(outs), late, nOuts, nLate)
				}
				for _, l := range late {
					if l != joins.LateOutOfOrder {
						t.Fatalf("%s: late reason %q", what, l)
					}
				}
			}
			outs, late := step(10, record.Change{Op: record.OpCreate, After: domain(1, 1, "a")})
			want("create at 10", outs, late, 1, 0)
			outs, late = step(5, record.Change{Op: record.OpUpdate, Before: domain(1, 1, "a"), After: domain(1, 1, "old")})
			want("update at 5", outs, late, 0, 1)
			outs, late = step(10, record.Change{Op: record.OpUpdate, Before: domain(1, 1, "a"), After: domain(1, 1, "b")})
			want("update at 10, the same time", outs, late, 2, 0)
			outs, late = step(20, record.Change{Op: record.OpDelete, Before: domain(1, 1, "b")})
			want("delete at 20", outs, late, 1, 0)
			outs, late = step(15, record.Change{Op: record.OpCreate, After: domain(1, 1, "c")})
			want("create at 15 after the delete at 20", outs, late, 0, 1)

			// Reloaded from the store, key 1 still knows the delete's time.
			if parts {
				cores["1"] = New(cfg, "1")
				if err := cores["1"].Restore(st.offsets, st.loaded()); err != nil {
					t.Fatal(err)
				}
			} else {
				enc, err := cores["1"].Encode()
				if err != nil {
					t.Fatal(err)
				}
				offs := cores["1"].Offsets()
				cores["1"] = New(cfg, "1")
				if err := cores["1"].Restore(offs, enc); err != nil {
					t.Fatal(err)
				}
			}
			outs, late = step(18, record.Change{Op: record.OpCreate, After: domain(1, 1, "d")})
			want("create at 18 after a reload", outs, late, 0, 1)
			outs, late = step(25, record.Change{Op: record.OpCreate, After: domain(1, 1, "e")})
			want("create at 25", outs, late, 1, 0)

			// A move at an older time is applied at both keys: the row
			// leaves key 1 and is at key 2 alone.
			outs, late = step(3, record.Change{Op: record.OpUpdate, Before: domain(1, 1, "e"), After: domain(1, 2, "f")})
			want("move at 3", outs, late, 2, 0)
			if n := len(core("1").Machine().CDC().Rights()); n != 0 {
				t.Fatalf("key 1 holds %d rows after the move", n)
			}
			if n := len(core("2").Machine().CDC().Rights()); n != 1 {
				t.Fatalf("key 2 holds %d rows after the move", n)
			}
			// Key 1 keeps the row's newer version: an older change there is stale.
			outs, late = step(20, record.Change{Op: record.OpCreate, After: domain(1, 1, "g")})
			want("create at 20 at the old key", outs, late, 0, 1)
		})
	}
}
