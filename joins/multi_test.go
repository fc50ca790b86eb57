package joins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

func setting(id, userID int, theme string) record.Row {
	return record.Row{"id": num(id), "user_id": num(userID), "theme": theme}
}

var settingsTable = MultiTable{Name: "settings", PK: "id", JoinOn: "user_id"}

// multi3 is users ⋈ domains ⋈ settings with the given kinds of domains and
// settings.
func multi3(dk, sk JoinType, project ...MultiColumn) *MultiSpec {
	return &MultiSpec{Tables: []MultiTable{
		{Name: "users", PK: "id", JoinOn: "id"},
		{Name: "domains", PK: "id", JoinOn: "user_id", Kind: dk},
		{Name: "settings", PK: "id", JoinOn: "user_id", Kind: sk},
	}, Project: project}
}

type mstep struct {
	table int
	c     record.Change
}

// brief renders an output as "op pk" for table tests.
func brief(outs []record.Output) []string {
	s := make([]string, len(outs))
	for i, o := range outs {
		s[i] = o.Kind.String() + " " + o.PK
	}
	return s
}

// TestMultiChangelog checks the exact changelog of hand-written histories.
func TestMultiChangelog(t *testing.T) {
	u1 := user(1, "Egor")
	cases := []struct {
		name  string
		spec  *MultiSpec
		steps []mstep
		want  [][]string // per step
	}{{
		name: "left left: rows arrive one table at a time",
		spec: multi3(LeftOuter, LeftOuter),
		steps: []mstep{
			{1, ins(domain(10, 1, "a"))},  // no user: nothing
			{0, ins(u1)},                  // user with its domain, settings padded
			{2, ins(setting(5, 1, "dk"))}, // padded settings filled in
			{1, ins(domain(11, 1, "b"))},  // a second domain
			{1, del(domain(10, 1, "a"))},  // one domain left
			{1, del(domain(11, 1, "b"))},  // last domain: padded again
			{0, del(u1)},
		},
		want: [][]string{
			{},
			{"+I [1,10,null]"},
			{"-D [1,10,null]", "+I [1,10,5]"},
			{"+I [1,11,5]"},
			{"-D [1,10,5]"},
			{"-D [1,11,5]", "+I [1,null,5]"},
			{"-D [1,null,5]"},
		},
	}, {
		name: "inner settings gate every result",
		spec: multi3(LeftOuter, Inner),
		steps: []mstep{
			{0, ins(u1)},
			{1, ins(domain(10, 1, "a"))},
			{2, ins(setting(5, 1, "dk"))},
			{2, ins(setting(6, 1, "lt"))},
			{0, upd(u1, user(1, "Egor M"))},
			{2, del(setting(5, 1, "dk"))},
			{2, del(setting(6, 1, "lt"))},
		},
		want: [][]string{
			{},
			{},
			{"+I [1,10,5]"},
			{"+I [1,10,6]"},
			{"-U [1,10,5]", "+U [1,10,5]", "-U [1,10,6]", "+U [1,10,6]"},
			{"-D [1,10,5]"},
			{"-D [1,10,6]"},
		},
	}, {
		name: "a row moving key retracts at the old key and inserts at the new one",
		spec: multi3(Inner, LeftOuter),
		steps: []mstep{
			{0, ins(u1)},
			{0, ins(user(2, "Pavel"))},
			{1, ins(domain(10, 1, "a"))},
			{1, upd(domain(10, 1, "a"), domain(10, 2, "a"))},
			{1, upd(domain(10, 2, "a"), domain(12, 2, "a"))}, // pk change within a key
		},
		want: [][]string{
			{},
			{},
			{"+I [1,10,null]"},
			{"-D [1,10,null]", "+I [2,10,null]"},
			{"-D [2,10,null]", "+I [2,12,null]"},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.spec.Validate(); err != nil {
				t.Fatal(err)
			}
			keys := map[record.Key]*Multi{}
			table := NewTable()
			for i, s := range tc.steps {
				s.c.Pos = record.Position{Source: "t", Offset: int64(i)}
				evs, err := tc.spec.Route(s.table, s.c)
				if err != nil {
					t.Fatal(err)
				}
				got := []string{}
				for _, e := range evs {
					m := keys[e.Key]
					if m == nil {
						m = NewMulti(tc.spec)
						keys[e.Key] = m
					}
					outs := m.OnEvent(e, nil)
					for _, o := range outs {
						if err := table.Apply(o); err != nil {
							t.Fatalf("step %d: %v", i, err)
						}
					}
					got = append(got, brief(outs)...)
				}
				if !slices.Equal(got, tc.want[i]) {
					t.Errorf("step %d: got %q, want %q", i, got, tc.want[i])
				}
			}
		})
	}
}

// TestMultiSpecValidateProject checks the whole error of a bad projection:
// each column's problems in order, and a computed column's table unchecked.
func TestMultiSpecValidateProject(t *testing.T) {
	s := multi3(Inner, Inner, MultiColumn{Name: "x", Table: 3, Field: "f"}, MultiColumn{Name: "x", Table: -1}, MultiColumn{Field: "g"},
		MultiColumn{Name: "c", Table: 99, Compute: func([]record.Row) any { return 1 }})
	want := `project[0].table: must be a table index 0 to 2, got 3
project[1].name: duplicate "x" (also project[0])
project[1].table: must be a table index 0 to 2, got -1
project[1].field: must not be empty
project[2].name: must not be empty`
	if err := s.Validate(); err == nil || err.Error() != want {
		t.Fatalf("Validate() = %v, want\n%s", err, want)
	}
}

func TestMultiSpecValidate(t *testing.T) {
	cases := []struct {
		name string
		spec *MultiSpec
		want []string // substrings of the error; none: valid
	}{
		{"valid", multi3(LeftOuter, Inner), nil},
		{"one table", &MultiSpec{Tables: []MultiTable{{Name: "a", PK: "id", JoinOn: "id"}}}, []string{"tables: must list 2"}},
		{"driving kind", &MultiSpec{Tables: []MultiTable{{Name: "a", PK: "id", JoinOn: "id", Kind: LeftOuter}, {Name: "b", PK: "id", JoinOn: "a"}}},
			[]string{"tables[0].kind: the first table is the driving side"}},
		{"full kind", multi3(FullOuter, Inner), []string{"tables[1].kind: must be inner or left"}},
		{"empty fields and duplicate name", &MultiSpec{Tables: []MultiTable{{Name: "a"}, {Name: "a", PK: "id", JoinOn: "x"}}},
			[]string{"tables[0].pk: must not be empty", "tables[0].join_on: must not be empty", `tables[1].name: duplicate "a"`}},
		{"project", multi3(Inner, Inner, MultiColumn{Name: "x", Table: 3, Field: "f"}, MultiColumn{Name: "x", Table: 0}),
			[]string{"project[0].table: must be a table index 0 to 2", `project[1].name: duplicate "x"`, "project[1].field: must not be empty"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestMultiRouteErrorNamesTable(t *testing.T) {
	s := multi3(Inner, Inner)
	_, err := s.Route(2, ins(record.Row{"id": num(1), "user_id": []any{num(1)}}))
	re, ok := err.(*RouteError)
	if !ok || re.Reason != reason.WrongType || re.Side != 2 {
		t.Fatalf("got %v, want a join-column-not-scalar RouteError of table 2", err)
	}
	if _, err := s.Route(3, ins(u(1))); err == nil {
		t.Fatal("table 3 of 3 routed")
	}
}

// TestMultiRouteNullKeys: a driving row with a null (or absent) join
// column is kept at its own key; another table's matches nothing
// (ErrUnmatched), and leaving the null key is a plain insert.
func TestMultiRouteNullKeys(t *testing.T) {
	s := multi3(LeftOuter, LeftOuter)
	evs, err := s.Route(0, ins(record.Row{"id": nil, "name": "x"}))
	if err == nil {
		t.Fatalf("a driving row without a primary key routed: %v", evs)
	}
	evs, err = s.Route(1, ins(record.Row{"id": num(4), "user_id": nil}))
	if !errors.Is(err, ErrUnmatched) || len(evs) != 0 {
		t.Fatalf("domain with a null user_id: %v %v, want ErrUnmatched", evs, err)
	}
	evs, err = s.Route(1, upd(record.Row{"id": num(4), "user_id": nil}, record.Row{"id": num(4), "user_id": num(1)}))
	if err != nil || len(evs) != 1 || evs[0].Key != "1" || evs[0].Op != record.OpCreate || evs[0].Side != 1 {
		t.Fatalf("domain given a user_id: %+v %v, want one c at key 1", evs, err)
	}
	// The driving table keys rows by id = its join column here, so a null
	// join column is a null primary key; a driving table joined on another
	// column keeps its null-key rows.
	d := &MultiSpec{Tables: []MultiTable{
		{Name: "domains", PK: "id", JoinOn: "user_id"},
		{Name: "users", PK: "id", JoinOn: "id", Kind: LeftOuter},
	}}
	evs, err = d.Route(0, ins(record.Row{"id": num(4)}))
	if err != nil || len(evs) != 1 || evs[0].Key != NullRowKey(record.Left, "4") {
		t.Fatalf("driving row without its join column: %+v %v, want one event at its null-row key", evs, err)
	}
	m := NewMulti(d)
	outs := m.OnEvent(evs[0], nil)
	if len(outs) != 1 || outs[0].Kind != record.Insert {
		t.Fatalf("driving row at its null-row key emitted %+v, want one padded +I", outs)
	}
}

func u(id int) record.Row { return user(id, "x") }

func TestMultiRestoreRejects(t *testing.T) {
	s := multi3(Inner, Inner)
	m := NewMulti(s)
	for _, b := range [][]byte{nil, {2}, append([]byte{1}, `{"t":[{},{}]}`...), append([]byte{1}, `{"t":[{"2":{"id":1}},{},{}]}`...),
		append([]byte{1}, `{"t":[{},{},{}]} x`...), append([]byte{1}, `{"t":[{},{},{}],"z":1}`...)} {
		if err := m.Restore(b); err == nil {
			t.Errorf("Restore(%q) succeeded", b)
		}
	}
}

// TestMultiTwoTablesEqualsCDC: with two tables, the multi-way join emits
// exactly the two-way CDC join's changelog (ids, kinds, keys and rows), for
// inner and left joins over random histories (users' join column is their
// primary key, so the driving table holds one row per key as CDC's left side).
func TestMultiTwoTablesEqualsCDC(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, typ := range []JoinType{Inner, LeftOuter} {
		cs := nestedSpec(typ)
		ms := &MultiSpec{Tables: []MultiTable{
			{Name: "users", PK: "id", JoinOn: "id"}, {Name: "domains", PK: "id", JoinOn: "user_id", Kind: typ}}}
		for round := 0; round < 40; round++ {
			w := &world{rng: rng, users: map[int]record.Row{}, domains: map[int]record.Row{}}
			cdc, multi := map[record.Key]*CDC{}, map[record.Key]*Multi{}
			for i := 0; i < 200; i++ {
				side, c := w.next()
				c.Pos = record.Position{Source: "s", Partition: int32(round), Offset: int64(i)}
				evs, err := cs.Route(side, c)
				if err != nil {
					t.Fatal(err)
				}
				mevs, err := ms.Route(int(side), c)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(evs, mevs) {
					t.Fatalf("routes differ: %v %v", evs, mevs)
				}
				for _, e := range evs {
					if cdc[e.Key] == nil {
						cdc[e.Key], multi[e.Key] = NewCDC(cs), NewMulti(ms)
					}
					a := cdc[e.Key].OnEvent(e, nil)
					b := multi[e.Key].OnEvent(e, nil)
					if !reflect.DeepEqual(a, b) {
						t.Fatalf("%s round %d change %d: CDC emitted\n%v\nmulti-way\n%v", typ, round, i, a, b)
					}
				}
			}
		}
	}
}

// world3 is world (users, domains) plus a settings table whose rows point
// at users and move between them.
type world3 struct {
	*world
	settings map[int]record.Row
}

const oracleSettings = 8

func (w *world3) next() (int, record.Change) {
	if w.rng.Intn(3) != 0 {
		side, c := w.world.next()
		return int(side), c
	}
	for {
		switch w.rng.Intn(3) {
		case 0:
			id, ok := w.absent(w.settings, oracleSettings)
			if !ok {
				continue
			}
			row := setting(id, 1+w.rng.Intn(oracleOwners), w.name("s"))
			w.settings[id] = row
			return 2, ins(row)
		case 1:
			id, ok := w.present(w.settings)
			if !ok {
				continue
			}
			old := w.settings[id]
			row := setting(id, 1+w.rng.Intn(oracleOwners), w.name("s"))
			if w.rng.Intn(2) == 0 {
				row["user_id"] = old["user_id"]
			}
			w.settings[id] = row
			return 2, upd(old, row)
		case 2:
			id, ok := w.present(w.settings)
			if !ok {
				continue
			}
			old := w.settings[id]
			delete(w.settings, id)
			return 2, del(old)
		}
	}
}

// bruteForceMulti joins the true tables from scratch: for each driving
// row, the product of every other table's rows with its key (one null for
// an empty left-joined table, none for an empty inner one).
func bruteForceMulti(spec *MultiSpec, tables []map[int]record.Row) []TableRow {
	keyOf := func(i int, r record.Row) string { return fmt.Sprint(r[spec.Tables[i].JoinOn]) }
	rows := []TableRow{}
	for _, d := range tables[0] {
		k := keyOf(0, d)
		combos := [][]record.Row{{d}}
		for i := 1; i < len(tables); i++ {
			var match []record.Row
			for _, r := range tables[i] {
				if keyOf(i, r) == k {
					match = append(match, r)
				}
			}
			if len(match) == 0 && spec.Tables[i].Kind == LeftOuter {
				match = []record.Row{nil}
			}
			var next [][]record.Row
			for _, c := range combos {
				for _, r := range match {
					next = append(next, append(slices.Clone(c), r))
				}
			}
			combos = next
		}
		for _, c := range combos {
			rows = append(rows, TableRow{PK: spec.outputPK(c), Row: spec.outputRow(c)})
		}
	}
	slices.SortFunc(rows, func(a, b TableRow) int { return strings.Compare(a.PK, b.PK) })
	return rows
}

// TestMultiOracle runs random histories of three tables through Route and
// per-key Multi state for every inner/left combination, with and without a
// projection (computed columns included): the changelog must apply strictly
// and fold to the brute-force join of the final tables, and a twin that
// snapshots and restores keys at random points must emit the same outputs.
func TestMultiOracle(t *testing.T) {
	seed := *oracleSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -joins.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	rounds := 20
	if testing.Short() {
		rounds = 10
	}
	var specs []*MultiSpec
	// Driven by domains, whose rows move between keys: outputs' primary
	// keys start with the join key.
	specs = append(specs, &MultiSpec{Tables: []MultiTable{
		{Name: "domains", PK: "id", JoinOn: "user_id"},
		{Name: "users", PK: "id", JoinOn: "id", Kind: LeftOuter},
		{Name: "settings", PK: "id", JoinOn: "user_id", Kind: LeftOuter},
	}})
	for _, dk := range []JoinType{Inner, LeftOuter} {
		for _, sk := range []JoinType{Inner, LeftOuter} {
			specs = append(specs, multi3(dk, sk), multi3(dk, sk,
				MultiColumn{Name: "user", Table: 0, Field: "name"},
				MultiColumn{Name: "reason", Table: 1, Field: "reason"},
				MultiColumn{Name: "theme", Table: 2, Field: "theme"},
				MultiColumn{Name: "all", Compute: func(rows []record.Row) any {
					var b strings.Builder
					for _, r := range rows {
						fmt.Fprint(&b, r["id"], ";")
					}
					return b.String()
				}}))
		}
	}
	for _, s := range specs {
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < rounds; round++ {
		w := &world3{world: &world{rng: rng, users: map[int]record.Row{}, domains: map[int]record.Row{}}, settings: map[int]record.Row{}}
		plain := make([]*multiRunner, len(specs))
		twins := make([]*multiRunner, len(specs))
		for i, s := range specs {
			plain[i], twins[i] = newMultiRunner(s, 0), newMultiRunner(s, 0.3)
		}
		n := 1 + rng.Intn(300)
		for i := 0; i < n; i++ {
			table, c := w.next()
			c.Pos = record.Position{Source: "s", Partition: int32(round), Offset: int64(i)}
			checkpoint := rng.Intn(20) == 0 || i == n-1
			for k := range specs {
				ti := tableOf(specs[k], table)
				a := plain[k].apply(t, rng, ti, c)
				b := twins[k].apply(t, rng, ti, c)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("seed %d round %d change %d: restored state emitted differently:\n%v\n%v", seed, round, i, a, b)
				}
				if checkpoint {
					all := make([]map[int]record.Row, 3)
					for j, m := range []map[int]record.Row{w.users, w.domains, w.settings} {
						all[tableOf(specs[k], j)] = m
					}
					for _, r := range []*multiRunner{plain[k], twins[k]} {
						if got, want := r.table.Rows(), bruteForceMulti(specs[k], all); !reflect.DeepEqual(got, want) {
							t.Fatalf("seed %d round %d change %d spec %d: folded changelog differs from the brute-force join\ngot  %v\nwant %v",
								seed, round, i, k, got, want)
						}
					}
				}
			}
		}
	}
}

// tableOf maps world3's table (0 users, 1 domains, 2 settings) to its
// index in spec.
func tableOf(spec *MultiSpec, world int) int {
	i, _ := spec.TableIndex([]string{"users", "domains", "settings"}[world])
	return i
}

type multiRunner struct {
	spec        *MultiSpec
	keys        map[record.Key]*Multi
	table       *Table
	pkKey       map[string]record.Key // every output pk's join key
	restoreRate float64
}

func newMultiRunner(spec *MultiSpec, restoreRate float64) *multiRunner {
	return &multiRunner{spec: spec, keys: map[record.Key]*Multi{}, table: NewTable(), pkKey: map[string]record.Key{}, restoreRate: restoreRate}
}

func (r *multiRunner) apply(t *testing.T, rng *rand.Rand, table int, c record.Change) []record.Output {
	t.Helper()
	evs, err := r.spec.Route(table, c)
	if err != nil {
		t.Fatalf("route %d %+v: %v", table, c, err)
	}
	var all []record.Output
	for _, e := range evs {
		m := r.keys[e.Key]
		if m == nil {
			m = NewMulti(r.spec)
			r.keys[e.Key] = m
		}
		outs := m.OnEvent(e, nil)
		for _, o := range outs {
			if err := r.table.Apply(o); err != nil {
				t.Fatalf("inconsistent changelog after table %d %+v: %v", table, c, err)
			}
			if k, ok := r.pkKey[o.PK]; ok && k != e.Key {
				t.Fatalf("output pk %s made at keys %s and %s: a row's changes would not be ordered by one key's sequence", o.PK, k, e.Key)
			}
			r.pkKey[o.PK] = e.Key
		}
		all = append(all, outs...)
		if m.Empty() {
			delete(r.keys, e.Key)
		}
	}
	if r.restoreRate > 0 && rng.Float64() < r.restoreRate && len(r.keys) > 0 {
		keys := make([]record.Key, 0, len(r.keys))
		for k := range r.keys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		k := keys[rng.Intn(len(keys))]
		old := r.keys[k]
		b := old.Snapshot()
		if want := referenceMultiSnapshot(t, old); !bytes.Equal(b, want) {
			t.Fatalf("key %s: cached snapshot differs from encoding/json's:\n%q\n%q", k, b, want)
		}
		fresh := NewMulti(r.spec)
		if err := fresh.Restore(b); err != nil {
			t.Fatalf("restore key %s: %v", k, err)
		}
		if again := fresh.Snapshot(); !bytes.Equal(again, b) {
			t.Fatalf("key %s: snapshot changed across restore:\n%q\n%q", k, b, again)
		}
		r.keys[k] = fresh
	}
	return all
}

func referenceMultiSnapshot(t *testing.T, m *Multi) []byte {
	t.Helper()
	s := multiSnap{T: make([]map[string]record.Row, len(m.tables))}
	for i, rows := range m.tables {
		s.T[i] = map[string]record.Row{}
		for _, r := range rows {
			s.T[i][r.pk] = r.row
		}
	}
	var buf bytes.Buffer
	buf.WriteByte(MultiSnapshotVersion)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// BenchmarkMultiUpdate: an update of the driving row of a key holding 10
// domains and 2 settings rows (20 results: 40 outputs), and an update of
// one settings row (10 results).
func BenchmarkMultiUpdate(b *testing.B) {
	spec := multi3(LeftOuter, Inner)
	m := NewMulti(spec)
	apply := func(table int, c record.Change) []record.Output {
		evs, err := spec.Route(table, c)
		if err != nil {
			b.Fatal(err)
		}
		var out []record.Output
		for _, e := range evs {
			out = m.OnEvent(e, out)
		}
		return out
	}
	apply(0, ins(user(1, "u")))
	for d := 1; d <= 10; d++ {
		apply(1, ins(domain(d, 1, "r")))
	}
	apply(2, ins(setting(1, 1, "a")))
	apply(2, ins(setting(2, 1, "b")))
	b.Run("driving", func(b *testing.B) {
		c := upd(user(1, "u"), user(1, "v"))
		for i := 0; i < b.N; i++ {
			if n := len(apply(0, c)); n != 40 {
				b.Fatalf("%d outputs", n)
			}
		}
	})
	b.Run("settings", func(b *testing.B) {
		c := upd(setting(2, 1, "b"), setting(2, 1, "c"))
		for i := 0; i < b.N; i++ {
			if n := len(apply(2, c)); n != 20 {
				b.Fatalf("%d outputs", n)
			}
		}
	})
}
