package joins

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/record"
)

var oracleSeed = flag.Int64("joins.seed", 0, "seed of TestJoinCDCOracle (0: time-based)")

// oracleNulls counts, over a TestJoinCDCOracle run, the events routed to
// null-row keys and the changes Route found unmatched, so the test can
// tell that its histories reach both.
var oracleNulls struct{ keyed, unmatched int }

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
	// nulls makes null join values: users join on uid (their id, or
	// null), and a domain's user_id may be null or absent.
	nulls bool
}

// userRow is user id's next version; with nulls its uid is its id or null.
func (w *world) userRow(id int) record.Row {
	row := user(id, w.name("u"))
	if w.nulls {
		row["uid"] = num(id)
		if w.rng.Intn(3) == 0 {
			row["uid"] = nil
		}
	}
	return row
}

// owner is a domain's next user_id: a user, or with nulls sometimes null.
func (w *world) owner() any {
	if w.nulls && w.rng.Intn(4) == 0 {
		return nil
	}
	return num(1 + w.rng.Intn(oracleOwners))
}

// domainRow is a domain row; a null owner is absent from it half the time.
func (w *world) domainRow(id int, owner any) record.Row {
	row := record.Row{"id": num(id), "user_id": owner, "reason": w.name("d")}
	if owner == nil && w.rng.Intn(2) == 0 {
		delete(row, "user_id")
	}
	return row
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
			row := w.userRow(id)
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
			row := w.userRow(newID)
			delete(w.users, id)
			w.users[newID] = row
			var before record.Row
			switch w.rng.Intn(3) {
			case 0:
				before = old
			case 1:
				before = record.Row{"id": old["id"]}
				if w.nulls {
					if old["uid"] != row["uid"] {
						before = old // the change of key needs the old key
					}
				}
			case 2:
				if newID != id || w.nulls && old["uid"] != row["uid"] {
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
				before := record.Row{"id": old["id"]}
				if w.nulls {
					before["uid"] = old["uid"] // a delete is routed by its join column
				}
				return record.Left, del(before)
			}
			return record.Left, del(old)
		case 3: // domain insert, possibly before its user
			id, ok := w.absent(w.domains, oracleDomains)
			if !ok {
				continue
			}
			row := w.domainRow(id, w.owner())
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
				owner = w.owner()
			}
			newID := id
			if w.rng.Intn(5) == 0 {
				if n, ok := w.absent(w.domains, oracleDomains); ok {
					newID = n
				}
			}
			row := w.domainRow(newID, owner)
			delete(w.domains, id)
			w.domains[newID] = row
			full := old // a before with the join column, null if absent from old
			if _, ok := old["user_id"]; !ok {
				full = maps.Clone(old)
				full["user_id"] = nil
			}
			var before record.Row
			switch w.rng.Intn(4) {
			case 0:
				before = full
			case 1:
				before = record.Row{"id": old["id"], "user_id": old["user_id"]}
			case 2: // partial before, only when the key cannot have changed
				before = record.Row{"id": old["id"]}
				if moved {
					before["user_id"] = old["user_id"]
				}
			case 3:
				if moved || newID != id {
					before = full
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
			if _, ok := old["user_id"]; w.rng.Intn(2) == 0 || !ok {
				return record.Right, del(record.Row{"id": old["id"], "user_id": old["user_id"]})
			}
			return record.Right, del(old)
		}
	}
}

// version is the number in a user's name ("u12") or a domain's reason.
func version(s any) int {
	n, _ := strconv.Atoi(s.(string)[1:])
	return n
}

// oracleWhere is the oracle's residual condition.
var oracleWhere = Condition{
	Pair:  func(l, r record.Row) bool { return (version(l["name"])+version(r["reason"]))%3 != 0 },
	Left:  func(l record.Row) bool { return version(l["name"])%5 != 0 },
	Right: func(r record.Row) bool { return version(r["reason"])%7 != 0 },
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
			if uk, dk := u[spec.Left.JoinOn], d[spec.Right.JoinOn]; uk != nil && uk == dk && spec.Where.match(u, d) { // null never matches
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
	if err != nil && !errors.Is(err, ErrUnmatched) {
		t.Fatalf("route %s %+v: %v", side, c, err)
	}
	if err != nil {
		oracleNulls.unmatched++
	}
	var all []record.Output
	for _, e := range evs {
		if IsNullRowKey(e.Key) {
			oracleNulls.keyed++
		}
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
			if r.spec.Kinds == KindsFlink && r.spec.Where.IsZero() && c.Op == record.OpUpdate && c.Before == nil &&
				(o.Kind == record.Insert || o.Kind == record.UpdateAfter) {
				// Flink's upsert: a change without a before replaces its
				// stored row and the rows it is in without retracting them.
				r.table.Put(o)
				continue
			}
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
	s := cdcSnap{L: j.left, LT: j.leftTs}
	if len(j.lefts) > 0 {
		s.LR, s.LRT = map[string]record.Row{}, map[string]int64{}
		for _, r := range j.lefts {
			s.LR[r.pk] = r.row
			if r.ts != 0 {
				s.LRT[r.pk] = r.ts
			}
		}
	}
	if len(j.rights) > 0 {
		s.R, s.RT = map[string]record.Row{}, map[string]int64{}
		for _, r := range j.rights {
			s.R[r.pk] = r.row
			if r.ts != 0 {
				s.RT[r.pk] = r.ts
			}
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
	if !reflect.DeepEqual(fresh.Lefts(), old.Lefts()) || !reflect.DeepEqual(fresh.Rights(), old.Rights()) {
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
	// Every key holds exactly the true rows with that key: a row with a
	// null join value its own key in a join that keeps its side, none in
	// another.
	keyOf := func(side record.Side, row record.Row) (record.Key, bool) {
		v := row[r.spec.side(side).JoinOn]
		if v == nil {
			return NullRowKey(side, record.Key(fmt.Sprint(row["id"]))), r.spec.Type.keeps(side)
		}
		return record.Key(v.(interface{ String() string }).String()), true
	}
	wantLeft := map[record.Key]record.Row{}
	wantRights := map[record.Key][]record.Row{}
	for _, u := range w.users {
		if k, ok := keyOf(record.Left, u); ok {
			wantLeft[k] = u
		}
	}
	for _, d := range w.domains {
		if k, ok := keyOf(record.Right, d); ok {
			wantRights[k] = append(wantRights[k], d)
		}
	}
	for k, rs := range wantRights {
		slices.SortFunc(rs, func(a, b record.Row) int {
			return strings.Compare(fmt.Sprint(a["id"]), fmt.Sprint(b["id"]))
		})
		if _, ok := r.keys[k]; !ok {
			t.Fatalf("key %q holds nothing, want rights %v", k, rs)
		}
	}
	for k, u := range wantLeft {
		if _, ok := r.keys[k]; !ok {
			t.Fatalf("key %q holds nothing, want left %v", k, u)
		}
	}
	for k, st := range r.keys {
		var wl []record.Row
		if u := wantLeft[k]; u != nil {
			wl = []record.Row{u}
		}
		if !reflect.DeepEqual(st.Lefts(), wl) || !reflect.DeepEqual(st.Rights(), wantRights[k]) {
			t.Fatalf("key %q holds %v %v, want %v %v", k, st.Lefts(), st.Rights(), wl, wantRights[k])
		}
		if IsNullRowKey(k) && st.NumRights()+st.NumLefts() != 1 {
			t.Fatalf("null-row key %q holds more than its row", k)
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
	rounds, changes := 100, 250
	if testing.Short() {
		rounds = 20
	}
	// Every join type, nested rows in the update kinds and projected rows
	// in the flink and kafka kinds, and with a residual condition (update
	// kinds, one with MaxTs); odd rounds have null join values (users
	// joined on uid, their id or null).
	specsOf := func(users SideSpec) []*CDCSpec {
		var specs []*CDCSpec
		for _, typ := range []JoinType{Inner, LeftOuter, RightOuter, FullOuter} {
			specs = append(specs, &CDCSpec{Type: typ, Left: users, Right: domainsSide})
			for _, kinds := range []CDCKinds{KindsFlink, KindsKafka} {
				specs = append(specs, &CDCSpec{Type: typ, Kinds: kinds, Left: users, Right: domainsSide, Project: []Column{
					{Name: "user", Side: record.Left, Field: "name"},
					{Name: "uid", Side: record.Left, Field: "id"},
					{Name: "reason", Side: record.Right, Field: "reason"},
					{Name: "missing", Side: record.Right, Field: "nope"},
				}})
			}
			// A residual condition on both rows and on each side, which
			// updates flip (a row's version is in its name or reason).
			for _, kinds := range []CDCKinds{KindsFlink, KindsKafka} {
				specs = append(specs, &CDCSpec{Type: typ, Kinds: kinds, Left: users, Right: domainsSide, Where: oracleWhere})
			}
			specs = append(specs, &CDCSpec{Type: typ, Left: users, Right: domainsSide, Where: oracleWhere}, &CDCSpec{
				Type: typ, Left: users, Right: domainsSide, Where: Condition{Pair: oracleWhere.Pair}, MaxTs: true,
				Project: []Column{{Name: "user", Side: record.Left, Field: "name"}, {Name: "reason", Side: record.Right, Field: "reason"}},
			})
		}
		return specs
	}
	keyed, nullable := specsOf(usersSide), specsOf(SideSpec{Name: "users", PK: "id", JoinOn: "uid"})
	for round := 0; round < rounds; round++ {
		nulls := round%2 == 1
		specs := keyed
		if nulls {
			specs = nullable
		}
		w := &world{rng: rng, users: map[int]record.Row{}, domains: map[int]record.Row{}, nulls: nulls}
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
	if oracleNulls.keyed == 0 || oracleNulls.unmatched == 0 {
		t.Errorf("the histories routed %d events to null-row keys and found %d changes unmatched: null join values untested",
			oracleNulls.keyed, oracleNulls.unmatched)
	}
	t.Logf("%d events at null-row keys, %d changes unmatched", oracleNulls.keyed, oracleNulls.unmatched)
}
