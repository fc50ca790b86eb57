package keycore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/joinery/joinery/internal/rowcodec"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// TestCorePartsEqualWhole drives random changelog traffic (upserts,
// deletes, primary-key moves, replays, commits that prune the outbox)
// through a Core with incremental writes and applies each Write to a store
// model: after every Write, a Core restored from the model holds exactly
// what the writing Core holds (their whole encodings are equal), and once
// the first Write is done one change writes a delta of a few parts (at most
// two rows, its outbox entry and its position).
func TestCorePartsEqualWhole(t *testing.T) {
	groups := joins.SideSpec{Name: "users", PK: "id", JoinOn: "grp"}
	specs := map[string]*joins.CDCSpec{
		"rows":  usersDomains,
		"maxTs": {Type: joins.LeftOuter, MaxTs: true, Left: usersDomains.Left, Right: usersDomains.Right},
		"flink": {Type: joins.FullOuter, Kinds: joins.KindsFlink, Left: usersDomains.Left, Right: usersDomains.Right},
		// A left side of many rows: parts l:<pk>.
		"many":       {Type: joins.FullOuter, Left: groups, Right: usersDomains.Right},
		"many-flink": {Type: joins.LeftOuter, Kinds: joins.KindsFlink, Left: groups, Right: usersDomains.Right},
		// Rows stored under the sides' schemas (rowcodec.Schema).
		"projected": {Type: joins.FullOuter, Left: usersDomains.Left, Right: usersDomains.Right, Project: []joins.Column{
			{Name: "name", Side: record.Left, Field: "name"}, {Name: "v", Side: record.Right, Field: "v"}}},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			cfg := &Config{Machine: MachineSpec{CDC: spec}, Parts: true}
			rng := rand.New(rand.NewPCG(1, uint64(len(name))))
			c := New(cfg, "1")
			c.Init()
			var st *stored
			var off int64
			deltas := 0
			for step := range 400 {
				leftIDs := 1
				if spec.LeftMany() {
					leftIDs = 5
				}
				req, evs := randomRequest(rng, &off, leftIDs)
				r := c.Step(req, int64(step))
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				if r.Write == nil {
					continue
				}
				if r.Write.Delta {
					deltas++
					if len(evs) == 1 && req.Committed == nil && len(r.Write.Parts) > 4 {
						t.Fatalf("step %d: a one-event delta has %d parts: %v", step, len(r.Write.Parts), partNames(r.Write))
					}
				}
				st = st.apply(r.Write)
				c.Durable()
				again := New(cfg, "1")
				if err := again.Restore(st.offsets, st.loaded()); err != nil {
					t.Fatalf("step %d: restore: %v", step, err)
				}
				want, err := c.Encode()
				if err != nil {
					t.Fatal(err)
				}
				got, err := again.Encode()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("step %d: restored from the parts:\n%s\nwant:\n%s", step, got, want)
				}
				// Offline tools (admin's inspect) read the packed state
				// as the whole one.
				pi, err := DecodeStateInfo(st.loaded(), spec)
				if err != nil {
					t.Fatal(err)
				}
				wi, err := DecodeStateInfo(want, spec)
				if err != nil {
					t.Fatal(err)
				}
				pj, wj := joins.NewCDC(spec), joins.NewCDC(spec)
				if pi.Outbox != wi.Outbox || (len(wi.Join) > 0) != (len(pi.Join) > 0) ||
					(len(wi.Join) > 0 && (pj.Restore(pi.Join) != nil || wj.Restore(wi.Join) != nil || !bytes.Equal(pj.Snapshot(), wj.Snapshot()))) {
					t.Fatalf("step %d: DecodeStateInfo of the packed state %+v, of the whole %+v", step, pi, wi)
				}
				// Write.Size estimates the whole state's size without
				// encoding it (for the memory budget).
				if size := r.Write.Size; size < len(want)/2 || size > 2*len(want)+64 {
					t.Fatalf("step %d: Write.Size %d, the whole state takes %d bytes (delta %v, %+v)", step, size, len(want), r.Write.Delta, c.pt)
				}
				if step%50 == 49 {
					c = again // a reactivation: deltas go on from the loaded state
				}
			}
			if wantDeltas := name != "maxTs"; wantDeltas && deltas < 300 {
				t.Fatalf("%d of 400 writes were deltas", deltas)
			}
			if spec.LeftMany() {
				if n := c.Machine().CDC().NumLefts(); n < 2 {
					t.Fatalf("the key ends with %d left rows: many left rows untested", n)
				}
				if w := c.Machine().CDC().Snapshot(); !bytes.Contains(w, []byte(`"lr":{`)) {
					t.Fatalf("a left side of many rows encodes without \"lr\": %.200s", w)
				}
			}
		})
	}
}

func partNames(w *Write) []string {
	var out []string
	for _, p := range w.Parts {
		out = append(out, p.Name)
	}
	return out
}

// randomRequest is one to three random events at the offsets after *off,
// and now and then a commit of an offset up to ten before the last.
// leftIDs is the number of left primary keys (1: user 1 only).
func randomRequest(rng *rand.Rand, off *int64, leftIDs int) (*Request, []Event) {
	var evs []Event
	for range 1 + rng.IntN(3) {
		*off++
		evs = append(evs, randomEvent(rng, *off, leftIDs))
	}
	req := &Request{Events: evs}
	if rng.IntN(4) == 0 {
		req.Committed = map[string]int64{"s/0": *off - int64(rng.IntN(10))}
	}
	return req, evs
}

// randomEvent is a change of a user (1, or one of 0..leftIDs-1) of
// group 1, or of one of ten domains of user 1.
func randomEvent(rng *rand.Rand, off int64, leftIDs int) Event {
	e := Event{Pos: record.Position{Source: "s", Offset: off}, Ts: off, SrcPos: fmt.Sprintf("%08d", off)}
	if rng.IntN(10) == 0 && off > 2 {
		e.SrcPos = fmt.Sprintf("%08d", off-2) // a replay: dropped if its row saw a later one
	}
	row := func(side record.Side) record.Row {
		if side == record.Left {
			id := json.Number("1")
			if leftIDs > 1 {
				id = json.Number(fmt.Sprint(rng.IntN(leftIDs)))
			}
			return record.Row{"id": id, "grp": json.Number("1"), "name": fmt.Sprint("u", off)}
		}
		return record.Row{"id": json.Number(fmt.Sprint(rng.IntN(10))), "user_id": json.Number("1"), "v": fmt.Sprint("<d>", off)}
	}
	e.Side = record.Side(rng.IntN(2))
	switch rng.IntN(5) {
	case 0:
		e.Op, e.Before = record.OpDelete, row(e.Side)
	case 1:
		e.Op, e.Before, e.After = record.OpUpdate, row(e.Side), row(e.Side) // a primary-key move on the right
	default:
		e.Op, e.After = record.OpCreate, row(e.Side)
	}
	return e
}

// TestCorePartsSpecChange: a key stored under a join that keeps its rows
// whole (max_ts), restored under one that makes them parts (or the other
// way round), writes its whole state once, so no row is lost.
func TestCorePartsSpecChange(t *testing.T) {
	maxTs := &joins.CDCSpec{Type: joins.Inner, MaxTs: true, Left: usersDomains.Left, Right: usersDomains.Right}
	rowsCfg := &Config{Machine: MachineSpec{CDC: usersDomains}, Parts: true}
	wholeCfg := &Config{Machine: MachineSpec{CDC: maxTs}, Parts: true}
	for name, cfgs := range map[string][2]*Config{"whole then rows": {wholeCfg, rowsCfg}, "rows then whole": {rowsCfg, wholeCfg}} {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			var st *stored
			c := New(cfgs[0], "1")
			c.Init()
			off := int64(0)
			step := func(c *Core) {
				off++
				r := c.Step(&Request{Events: []Event{randomEvent(rng, off, 1)}}, 0)
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				if r.Write != nil {
					st = st.apply(r.Write)
					c.Durable()
				}
			}
			for range 30 {
				step(c)
			}
			again := New(cfgs[1], "1")
			if err := again.Restore(st.offsets, st.loaded()); err != nil {
				t.Fatal(err)
			}
			step(again)
			check := New(cfgs[1], "1")
			if err := check.Restore(st.offsets, st.loaded()); err != nil {
				t.Fatal(err)
			}
			if a, b := again.Machine().CDC().Rights(), check.Machine().CDC().Rights(); len(a) != len(b) {
				t.Fatalf("after the first write under the new spec the store holds %d right rows, the core %d", len(b), len(a))
			}
		})
	}
}

func TestOutboxName(t *testing.T) {
	for _, tc := range []struct {
		id   uint64
		want string
	}{
		{0, "o:0000000000000000"},
		{1, "o:0000000000000001"},
		{1023, "o:00000000000003ff"},
		{1024, "o:0000000000000400"},
		{0xfedcba9876543210, "o:fedcba9876543210"},
	} {
		if got := outboxName(tc.id); got != tc.want {
			t.Errorf("outboxName(%d) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// TestMarkRight: markRow(partRight, k) marks "r:"+k unless that is the last part
// marked, as mark does.
func TestMarkRight(t *testing.T) {
	for _, tc := range []struct {
		name  string
		marks []string // "=x": markRow(partRight, x); else mark
		want  []string
	}{
		{"update's before and after", []string{"=1", "=1"}, []string{"r:1"}},
		{"a moved pk", []string{"=1", "=2"}, []string{"r:1", "r:2"}},
		{"a prefix of the last", []string{"=12", "=1"}, []string{"r:12", "r:1"}},
		{"after the left row", []string{"l", "=1"}, []string{"l", "r:1"}},
		{"same as a marked name", []string{"r:7", "=7"}, []string{"r:7"}},
		{"not consecutive", []string{"=1", "=2", "=1"}, []string{"r:1", "r:2", "r:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p partsState
			for _, m := range tc.marks {
				if k, ok := strings.CutPrefix(m, "="); ok {
					p.markRow(partRight, k)
				} else {
					p.mark(m)
				}
			}
			if got := p.changes().rows; !slices.Equal(got, tc.want) {
				t.Errorf("rows %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCorePrune: an idle key's outbox entries that its sources committed
// leave the store through Prune's Write (a delta deleting their parts); an
// entry not committed stays; Prune writes nothing while a Write is pending
// or when nothing is committed; the key restored from the store equals it.
func TestCorePrune(t *testing.T) {
	for _, parts := range []bool{true, false} {
		t.Run(fmt.Sprint("parts=", parts), func(t *testing.T) {
			cfg := &Config{Machine: MachineSpec{CDC: usersDomains}, Parts: parts}
			c := New(cfg, "1")
			c.Init()
			var st *stored
			step := func(off int64, side record.Side, id string) {
				t.Helper()
				row := record.Row{"id": json.Number(id), "name": "n" + id, "user_id": json.Number("1")}
				r := c.Step(&Request{Events: []Event{{Pos: record.Position{Source: "s", Offset: off}, Side: side, Op: record.OpCreate, After: row}}}, off)
				if r.Err != nil || r.Write == nil {
					t.Fatalf("offset %d: %+v", off, r)
				}
				st = st.apply(r.Write)
				c.Durable()
			}
			step(1, record.Left, "1")
			step(2, record.Right, "7")
			step(3, record.Right, "8")
			if c.OutboxLen() != 2 { // the inputs at 2 and 3 made outputs
				t.Fatalf("outbox %d, want 2", c.OutboxLen())
			}
			if w, err := c.Prune(nil); w != nil || err != nil {
				t.Fatalf("Prune(nil) = %v, %v", w, err)
			}
			if w, err := c.Prune(map[string]int64{"other/0": 9}); w != nil || err != nil {
				t.Fatalf("Prune(another partition) = %v, %v", w, err)
			}
			w, err := c.Prune(map[string]int64{"s/0": 2, FirePart: 99})
			if err != nil || w == nil {
				t.Fatalf("Prune = %v, %v", w, err)
			}
			if c.OutboxLen() != 1 {
				t.Fatalf("outbox %d after pruning up to 2, want 1", c.OutboxLen())
			}
			if parts {
				if !w.Delta {
					t.Fatalf("a whole write: %v", partNames(w))
				}
				var deleted int
				for _, p := range w.Parts {
					if strings.HasPrefix(p.Name, partOutbox) && p.Value == nil {
						deleted++
					} else if strings.HasPrefix(p.Name, partOutbox) || p.Name == partLeft || strings.HasPrefix(p.Name, partRight) {
						t.Fatalf("the delta writes %q", p.Name)
					}
				}
				if deleted != 1 {
					t.Fatalf("the delta deletes %d outbox parts, want 1: %v", deleted, partNames(w))
				}
			}
			if again, err := c.Prune(map[string]int64{"s/0": 3}); again != nil || err != nil {
				t.Fatalf("Prune with a Write pending = %v, %v", again, err)
			}
			st = st.apply(w)
			c.Durable()
			restored := New(cfg, "1")
			if err := restored.Restore(st.offsets, st.loaded()); err != nil {
				t.Fatal(err)
			}
			want, _ := c.Encode()
			got, _ := restored.Encode()
			if !bytes.Equal(got, want) || restored.OutboxLen() != 1 {
				t.Fatalf("restored:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestCorePartsFoldPositions: a row's Debezium position goes inside its
// row part (a deleted right row's part is its position alone), only a
// deleted left row's position has an s: part, and a state written with
// positions in s: parts beside the rows is read and written whole once in
// the folded form.
func TestCorePartsFoldPositions(t *testing.T) {
	cfg := &Config{Machine: MachineSpec{CDC: usersDomains}, Parts: true}
	user := record.Row{"id": json.Number("1"), "name": "u"}
	domain := func(id string) record.Row {
		return record.Row{"id": json.Number(id), "user_id": json.Number("1"), "v": "d" + id}
	}
	lsn := func(n int) string { return fmt.Sprintf("pg/%020d", n) }
	steps := []struct {
		ev   Event
		want map[string]string // part name -> position ("" none), row present marked by "+"
	}{
		{Event{Side: record.Left, Op: record.OpCreate, After: user}, map[string]string{"l": lsn(1) + "+"}},
		{Event{Side: record.Right, Op: record.OpCreate, After: domain("7")}, map[string]string{"l": lsn(1) + "+", "r:7": lsn(2) + "+"}},
		{Event{Side: record.Right, Op: record.OpCreate, After: domain("8")}, map[string]string{"l": lsn(1) + "+", "r:7": lsn(2) + "+", "r:8": lsn(3) + "+"}},
		{Event{Side: record.Right, Op: record.OpDelete, Before: domain("8")}, map[string]string{"l": lsn(1) + "+", "r:7": lsn(2) + "+", "r:8": lsn(4)}},
		{Event{Side: record.Left, Op: record.OpDelete, Before: user}, map[string]string{"s:left/1": lsn(5), "r:7": lsn(2) + "+", "r:8": lsn(4)}},
		{Event{Side: record.Left, Op: record.OpCreate, After: user}, map[string]string{"l": lsn(6) + "+", "r:7": lsn(2) + "+", "r:8": lsn(4)}},
	}
	c := New(cfg, "1")
	c.Init()
	var st *stored
	for i, s := range steps {
		s.ev.Pos = record.Position{Source: "s", Offset: int64(i + 1)}
		s.ev.SrcPos = lsn(i + 1)
		r := c.Step(&Request{Events: []Event{s.ev}}, 0)
		if r.Err != nil || r.Write == nil {
			t.Fatalf("step %d: %v, write %v", i, r.Err, r.Write)
		}
		st = st.apply(r.Write)
		c.Durable()
		got := map[string]string{}
		for name, v := range st.parts {
			if strings.HasPrefix(name, partOutbox) {
				continue
			}
			pos, row, err := splitPos(v)
			if name[0] == 's' {
				pos, _ = srcPos(v)
				row = nil
			}
			if err != nil {
				t.Fatalf("step %d: part %q: %v", i, name, err)
			}
			if len(row) > 0 {
				pos += "+"
			}
			got[name] = pos
		}
		if !maps.Equal(got, s.want) {
			t.Fatalf("step %d: stored parts (name: position, + a row)\n%v\nwant\n%v", i, got, s.want)
		}
	}

	// The same state as written before positions went with the rows:
	// rows alone, each position in an s: part.
	old := &stored{offsets: st.offsets, state: st.state, parts: map[string][]byte{}}
	for name, v := range st.parts {
		pos, row, err := splitPos(v)
		if err != nil {
			t.Fatal(err)
		}
		id := name
		switch {
		case name == partLeft:
			id = "left/1"
		case strings.HasPrefix(name, partRight):
			id = "right/" + name[len(partRight):]
		}
		if len(row) > 0 {
			old.parts[name] = row
		}
		if pos != "" {
			old.parts[partSrc+id] = appendSrcPos(nil, pos)
		}
	}
	if _, ok := old.parts["s:right/8"]; !ok || len(old.parts) != len(st.parts)+2 {
		t.Fatalf("the earlier layout's parts: %v", slices.Sorted(maps.Keys(old.parts)))
	}
	again := New(cfg, "1")
	if err := again.Restore(old.offsets, old.loaded()); err != nil {
		t.Fatal(err)
	}
	want, _ := c.Encode()
	if got, _ := again.Encode(); !bytes.Equal(got, want) {
		t.Fatalf("restored from the earlier layout:\n%s\nwant\n%s", got, want)
	}
	r := again.Step(&Request{Events: []Event{{Side: record.Right, Op: record.OpCreate, After: domain("9"),
		Pos: record.Position{Source: "s", Offset: 7}, SrcPos: lsn(7)}}}, 0)
	if r.Err != nil || r.Write == nil || r.Write.Delta {
		t.Fatalf("the first write after the earlier layout: %v, %+v (want a whole one)", r.Err, r.Write)
	}
	for _, p := range r.Write.Parts {
		if strings.HasPrefix(p.Name, partSrc) {
			t.Fatalf("the whole write has an s: part %q", p.Name)
		}
	}
}

// TestCorePartsSchemaRows: under a projection, rows are stored under the
// side's schema (no column names) and restore to the same state; a row
// with a column the job does not keep is stored with its names; a state
// restored under a job that keeps other columns is refused with an error
// that says so.
func TestCorePartsSchemaRows(t *testing.T) {
	project := func(cols ...string) *joins.CDCSpec {
		s := &joins.CDCSpec{Type: joins.Inner, Left: usersDomains.Left, Right: usersDomains.Right}
		for _, c := range cols {
			s.Project = append(s.Project, joins.Column{Name: c, Side: record.Left, Field: c})
		}
		s.Project = append(s.Project, joins.Column{Name: "v", Side: record.Right, Field: "v"})
		return s
	}
	spec := project("name")
	cfg := &Config{Machine: MachineSpec{CDC: spec}, Parts: true}
	c := New(cfg, "1")
	c.Init()
	var st *stored
	evs := []Event{
		{Side: record.Left, Op: record.OpCreate, After: record.Row{"id": json.Number("1"), "name": "u"}},
		{Side: record.Right, Op: record.OpCreate, After: record.Row{"id": json.Number("7"), "user_id": json.Number("1"), "v": "d7"}},
		{Side: record.Right, Op: record.OpCreate, After: record.Row{"id": json.Number("8"), "user_id": json.Number("1"), "v": "d8", "extra": "x"}},
	}
	for i, e := range evs {
		e.Pos = record.Position{Source: "s", Offset: int64(i + 1)}
		r := c.Step(&Request{Events: []Event{e}}, 0)
		if r.Err != nil || r.Write == nil {
			t.Fatalf("event %d: %v", i, r.Err)
		}
		st = st.apply(r.Write)
		c.Durable()
	}
	for name, wantSchema := range map[string]bool{"l": true, "r:7": true, "r:8": false} {
		if got := rowcodec.IsSchemaRow(st.parts[name]); got != wantSchema {
			t.Errorf("part %q % x: under the schema %v, want %v", name, st.parts[name], got, wantSchema)
		}
	}
	if l, r := len(st.parts["l"]), len(st.parts["r:7"]); l > 16 || r > 20 {
		t.Errorf("schema rows of %d and %d bytes", l, r)
	}
	again := New(cfg, "1")
	if err := again.Restore(st.offsets, st.loaded()); err != nil {
		t.Fatal(err)
	}
	want, _ := c.Encode()
	if got, _ := again.Encode(); !bytes.Equal(got, want) {
		t.Fatalf("restored:\n%s\nwant\n%s", got, want)
	}
	if info, err := DecodeStateInfo(st.loaded(), spec); err != nil || len(info.Join) == 0 {
		t.Fatalf("offline: %+v, %v", info, err)
	}
	// The job now keeps another column of the left side.
	other := New(&Config{Machine: MachineSpec{CDC: project("name", "email")}, Parts: true}, "1")
	err := other.Restore(st.offsets, st.loaded())
	if !errors.Is(err, rowcodec.ErrSchema) || !strings.Contains(err.Error(), "columns the job keeps") {
		t.Fatalf("restored under other kept columns: %v", err)
	}
	if _, err := DecodeStateInfo(st.loaded(), nil); !errors.Is(err, rowcodec.ErrSchema) {
		t.Fatalf("offline without the job's columns: %v", err)
	}
}
