package joins

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/record"
)

var oracleSeed = flag.Int64("joins.seed", 0, "seed of TestJoinCDCOracle (0: time-based)")

const (
	oracleUsers   = 6  // user ids 1..6
	oracleDomains = 12 // domain ids 1..12
	oracleOwners  = 7  // domains point at users 1..7; 7 never exists
)

// world is the true current content of both tables and the generator of a
// random, valid CDC history over them.
type world struct {
	rng     *rand.Rand
	users   map[int]record.Row
	domains map[int]record.Row
	ver     int
}

func (w *world) absent(m map[int]record.Row, n int) (int, bool) {
	var free []int
	for i := 1; i <= n; i++ {
		if _, ok := m[i]; !ok {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return 0, false
	}
	return free[w.rng.Intn(len(free))], true
}

func (w *world) present(m map[int]record.Row) (int, bool) {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return 0, false
	}
	slices.Sort(ids)
	return ids[w.rng.Intn(len(ids))], true
}

func (w *world) name(prefix string) string { w.ver++; return fmt.Sprintf("%s%d", prefix, w.ver) }

// next makes one change that is valid against the true tables and applies it
// to them.
func (w *world) next() (record.Side, record.Change) {
	for {
		switch w.rng.Intn(6) {
		case 0: // user insert or snapshot read, possibly a re-insert
			id, ok := w.absent(w.users, oracleUsers)
			if !ok {
				continue
			}
			row := user(id, w.name("u"))
			w.users[id] = row
			op := record.OpCreate
			if w.rng.Intn(4) == 0 {
				op = record.OpRead
			}
			return record.Left, record.Change{Op: op, After: row}
		case 1: // user update, sometimes changing its id
			id, ok := w.present(w.users)
			if !ok {
				continue
			}
			old := w.users[id]
			newID := id
			if w.rng.Intn(5) == 0 {
				if n, ok := w.absent(w.users, oracleUsers); ok {
					newID = n
				}
			}
			row := user(newID, w.name("u"))
			delete(w.users, id)
			w.users[newID] = row
			var before record.Row
			switch w.rng.Intn(3) {
			case 0:
				before = old
			case 1:
				before = record.Row{"id": old["id"]}
			case 2:
				if newID != id {
					before = old // the change of key needs the old key
				}
			}
			return record.Left, upd(before, row)
		case 2: // user delete
			id, ok := w.present(w.users)
			if !ok {
				continue
			}
			old := w.users[id]
			delete(w.users, id)
			if w.rng.Intn(2) == 0 {
				return record.Left, del(record.Row{"id": old["id"]})
			}
			return record.Left, del(old)
		case 3: // domain insert, possibly before its user
			id, ok := w.absent(w.domains, oracleDomains)
			if !ok {
				continue
			}
			row := domain(id, 1+w.rng.Intn(oracleOwners), w.name("d"))
			w.domains[id] = row
			return record.Right, ins(row)
		case 4: // domain update: rename, move to another user, change id
			id, ok := w.present(w.domains)
			if !ok {
				continue
			}
			old := w.domains[id]
			owner := old["user_id"]
			moved := w.rng.Intn(2) == 0
			if moved {
				owner = num(1 + w.rng.Intn(oracleOwners))
			}
			newID := id
			if w.rng.Intn(5) == 0 {
				if n, ok := w.absent(w.domains, oracleDomains); ok {
					newID = n
				}
			}
			row := record.Row{"id": num(newID), "user_id": owner, "reason": w.name("d")}
			delete(w.domains, id)
			w.domains[newID] = row
			var before record.Row
			switch w.rng.Intn(4) {
			case 0:
				before = old
			case 1:
				before = record.Row{"id": old["id"], "user_id": old["user_id"]}
			case 2: // partial before, only when the key cannot have changed
				before = record.Row{"id": old["id"]}
				if moved {
					before["user_id"] = old["user_id"]
				}
			case 3:
				if moved || newID != id {
					before = old
				}
			}
			return record.Right, upd(before, row)
		case 5: // domain delete
			id, ok := w.present(w.domains)
			if !ok {
				continue
			}
			old := w.domains[id]
			delete(w.domains, id)
			if w.rng.Intn(2) == 0 {
				return record.Right, del(record.Row{"id": old["id"], "user_id": old["user_id"]})
			}
			return record.Right, del(old)
		}
	}
}

// bruteForce joins the true tables from scratch.
func bruteForce(spec *CDCSpec, users, domains map[int]record.Row) []TableRow {
	rows := []TableRow{}
	add := func(u, d record.Row) {
		pk := func(r record.Row) string {
			if r == nil {
				return "null"
			}
			return string(r["id"].(interface{ String() string }).String())
		}
		var row record.Row
		if len(spec.Project) == 0 {
			row = record.Row{"users": nil, "domains": nil}
			if u != nil {
				row["users"] = u
			}
			if d != nil {
				row["domains"] = d
			}
		} else {
			row = record.Row{}
			for _, c := range spec.Project {
				src := u
				if c.Side == record.Right {
					src = d
				}
				row[c.Name] = nil
				if src != nil {
					row[c.Name] = src[c.Field]
				}
			}
		}
		rows = append(rows, TableRow{PK: "[" + pk(u) + "," + pk(d) + "]", Row: row})
	}
	matched := map[int]bool{}
	for _, u := range users {
		n := 0
		for did, d := range domains {
			if d["user_id"] == u["id"] {
				add(u, d)
				matched[did] = true
				n++
			}
		}
		if n == 0 && spec.Type.keepsLeft() {
			add(u, nil)
		}
	}
	if spec.Type.keepsRight() {
		for did, d := range domains {
			if !matched[did] {
				add(nil, d)
			}
		}
	}
	slices.SortFunc(rows, func(a, b TableRow) int { return strings.Compare(a.PK, b.PK) })
	return rows
}

// runner drives one join over per-key CDC state. With restoreRate > 0 it
// replaces keys' state by a snapshot/restore copy at random points.
type runner struct {
	spec        *CDCSpec
	keys        map[record.Key]*CDC
	table       *Table
	ids         map[string]bool
	restoreRate float64
}

func newRunner(spec *CDCSpec, restoreRate float64) *runner {
	return &runner{spec: spec, keys: map[record.Key]*CDC{}, table: NewTable(), ids: map[string]bool{}, restoreRate: restoreRate}
}

func (r *runner) apply(t *testing.T, rng *rand.Rand, side record.Side, c record.Change) []record.Output {
	t.Helper()
	evs, err := r.spec.Route(side, c)
	if err != nil {
		t.Fatalf("route %s %+v: %v", side, c, err)
	}
	var all []record.Output
	for _, e := range evs {
		st := r.keys[e.Key]
		if st == nil {
			st = NewCDC(r.spec)
			r.keys[e.Key] = st
		}
		outs := st.OnEvent(e, nil)
		for _, o := range outs {
			if r.ids[o.ID] {
				t.Fatalf("duplicate output id %s", o.ID)
			}
			r.ids[o.ID] = true
			if err := r.table.Apply(o); err != nil {
				t.Fatalf("%s: inconsistent changelog after %s %+v: %v", r.spec.Type, side, c, err)
			}
		}
		all = append(all, outs...)
		if st.Empty() {
			delete(r.keys, e.Key) // as a passivated, empty key
		}
	}
	if r.restoreRate > 0 && rng.Float64() < r.restoreRate {
		keys := make([]record.Key, 0, len(r.keys))
		for k := range r.keys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) > 0 {
			r.restore(t, keys[rng.Intn(len(keys))])
		}
	}
	return all
}

// referenceSnapshot encodes j's state the plain way (encoding/json of the
// whole cdcSnap), which Snapshot's cached encoding must equal byte for byte.
func referenceSnapshot(t *testing.T, j *CDC) []byte {
	t.Helper()
	s := cdcSnap{L: j.left}
	if len(j.rights) > 0 {
		s.R = map[string]record.Row{}
		for _, r := range j.rights {
			s.R[r.pk] = r.row
		}
	}
	var buf bytes.Buffer
	buf.WriteByte(SnapshotVersion)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (r *runner) restore(t *testing.T, k record.Key) {
	t.Helper()
	old := r.keys[k]
	b := old.Snapshot()
	if want := referenceSnapshot(t, old); string(b) != string(want) {
		t.Fatalf("key %s: cached snapshot encoding differs from encoding/json's:\n%q\n%q", k, b, want)
	}
	fresh := NewCDC(r.spec)
	if err := fresh.Restore(b); err != nil {
		t.Fatalf("restore key %s: %v", k, err)
	}
	if again := fresh.Snapshot(); string(again) != string(b) {
		t.Fatalf("key %s: snapshot changed across restore:\n%q\n%q", k, b, again)
	}
	if !reflect.DeepEqual(fresh.Left(), old.Left()) || !reflect.DeepEqual(fresh.Rights(), old.Rights()) {
		t.Fatalf("key %s: restored state differs", k)
	}
	r.keys[k] = fresh
}

func (r *runner) check(t *testing.T, w *world) {
	t.Helper()
	want := bruteForce(r.spec, w.users, w.domains)
	got := r.table.Rows()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s (project=%v): materialized changelog differs from the brute-force join\ngot  %v\nwant %v",
			r.spec.Type, len(r.spec.Project) > 0, got, want)
	}
	// Every key holds exactly the true rows with that key.
	for k, st := range r.keys {
		var wantLeft record.Row
		var wantRights []record.Row
		for _, u := range w.users {
			if record.Key(u["id"].(interface{ String() string }).String()) == k {
				wantLeft = u
			}
		}
		for _, d := range w.domains {
			if record.Key(d["user_id"].(interface{ String() string }).String()) == k {
				wantRights = append(wantRights, d)
			}
		}
		slices.SortFunc(wantRights, func(a, b record.Row) int {
			return strings.Compare(fmt.Sprint(a["id"]), fmt.Sprint(b["id"]))
		})
		if !reflect.DeepEqual(st.Left(), wantLeft) || !reflect.DeepEqual(st.Rights(), wantRights) {
			t.Fatalf("key %s holds %v %v, want %v %v", k, st.Left(), st.Rights(), wantLeft, wantRights)
		}
	}
}

// TestJoinCDCOracle runs random CDC histories through Route and per-key CDC
// state for every join type, with and without a projection, and checks that
// the changelog applies strictly and materializes to the brute-force join of
// the true tables. A twin run snapshots and restores keys at random points and
// must emit exactly the same outputs (metamorphic).
func TestJoinCDCOracle(t *testing.T) {
	seed := *oracleSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -joins.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	rounds, changes := 150, 250
	if testing.Short() {
		rounds = 20
	}
	var specs []*CDCSpec
	for _, typ := range []JoinType{Inner, LeftOuter, RightOuter, FullOuter} {
		specs = append(specs, nestedSpec(typ), &CDCSpec{Type: typ, Left: usersSide, Right: domainsSide, Project: []Column{
			{Name: "user", Side: record.Left, Field: "name"},
			{Name: "uid", Side: record.Left, Field: "id"},
			{Name: "reason", Side: record.Right, Field: "reason"},
			{Name: "missing", Side: record.Right, Field: "nope"},
		}})
	}
	for round := 0; round < rounds; round++ {
		w := &world{rng: rng, users: map[int]record.Row{}, domains: map[int]record.Row{}}
		plain := make([]*runner, len(specs))
		twins := make([]*runner, len(specs))
		for i, s := range specs {
			plain[i], twins[i] = newRunner(s, 0), newRunner(s, 0.3)
		}
		n := 1 + rng.Intn(changes)
		for i := 0; i < n; i++ {
			side, c := w.next()
			c.Pos = record.Position{Source: side.String(), Partition: int32(round), Offset: int64(i)}
			checkpoint := rng.Intn(20) == 0 || i == n-1
			for k := range specs {
				a := plain[k].apply(t, rng, side, c)
				b := twins[k].apply(t, rng, side, c)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("seed %d round %d change %d: restored state emitted differently:\n%v\n%v", seed, round, i, a, b)
				}
				if checkpoint {
					plain[k].check(t, w)
					twins[k].check(t, w)
				}
			}
		}
	}
}
