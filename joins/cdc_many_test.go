package joins

import (
	"fmt"
	"maps"
	"math/rand"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/record"
)

// manyWorld is the true content of two tables whose join column (grp) is
// unique on neither side, and the generator of a random, valid CDC history
// over them: inserts, updates that rename a row, move it to another join
// value (or to or from null) or change its primary key, and deletes.
type manyWorld struct {
	rng          *rand.Rand
	users        map[int]record.Row // left: id, grp, name
	domains      map[int]record.Row // right: id, grp, reason
	ver, nGroups int
}

func (w *manyWorld) grp() any {
	if w.rng.Intn(6) == 0 {
		return nil // SQL null: matches nothing
	}
	return num(1 + w.rng.Intn(w.nGroups))
}

func (w *manyWorld) row(side record.Side, id int, grp any) record.Row {
	w.ver++
	if side == record.Left {
		return record.Row{"id": num(id), "grp": grp, "name": fmt.Sprintf("u%d", w.ver)}
	}
	return record.Row{"id": num(id), "grp": grp, "reason": fmt.Sprintf("d%d", w.ver)}
}

// next makes one change valid against the true tables and applies it.
func (w *manyWorld) next() (record.Side, record.Change) {
	ow := &world{rng: w.rng}
	for {
		side := record.Left
		tbl, n := w.users, 6
		if w.rng.Intn(2) == 0 {
			side, tbl, n = record.Right, w.domains, 8
		}
		switch w.rng.Intn(3) {
		case 0:
			id, ok := ow.absent(tbl, n)
			if !ok {
				continue
			}
			row := w.row(side, id, w.grp())
			tbl[id] = row
			op := record.OpCreate
			if w.rng.Intn(4) == 0 {
				op = record.OpRead
			}
			return side, record.Change{Op: op, After: row}
		case 1:
			id, ok := ow.present(tbl)
			if !ok {
				continue
			}
			old := tbl[id]
			grp := old["grp"]
			if w.rng.Intn(2) == 0 {
				grp = w.grp()
			}
			newID := id
			if w.rng.Intn(5) == 0 {
				if m, ok := ow.absent(tbl, n); ok {
					newID = m
				}
			}
			row := w.row(side, newID, grp)
			delete(tbl, id)
			tbl[newID] = row
			before := old
			if w.rng.Intn(2) == 0 {
				before = record.Row{"id": old["id"], "grp": old["grp"]} // the columns Route needs
			}
			return side, upd(before, row)
		case 2:
			id, ok := ow.present(tbl)
			if !ok {
				continue
			}
			old := tbl[id]
			delete(tbl, id)
			if w.rng.Intn(2) == 0 {
				return side, del(record.Row{"id": old["id"], "grp": old["grp"]})
			}
			return side, del(old)
		}
	}
}

var (
	manyUsers   = SideSpec{Name: "users", PK: "id", JoinOn: "grp"}
	manyDomains = SideSpec{Name: "domains", PK: "id", JoinOn: "grp"}
)

// TestJoinCDCManyOracle runs random CDC histories of two tables whose join
// column is unique on neither side through Route and per-key CDC state,
// for every join type and output kind, with and without a residual
// condition, and checks after every change that the changelog applies
// strictly and materializes to the brute-force relational join of the true
// tables. A twin run snapshots and restores keys at random points and must
// emit exactly the same outputs. JOINERY_CDC_ROUNDS sets the number of
// histories (8 by default).
func TestJoinCDCManyOracle(t *testing.T) {
	seed := *oracleSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -joins.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	rounds, changes := 8, 200
	if testing.Short() {
		rounds = 5
	}
	if v, err := strconv.Atoi(os.Getenv("JOINERY_CDC_ROUNDS")); err == nil && v > 0 {
		rounds = v // a longer run: JOINERY_CDC_ROUNDS=2000
	}
	var specs []*CDCSpec
	for _, typ := range []JoinType{Inner, LeftOuter, RightOuter, FullOuter} {
		for _, kinds := range []CDCKinds{KindsUpdate, KindsFlink, KindsKafka} {
			specs = append(specs,
				&CDCSpec{Type: typ, Kinds: kinds, Left: manyUsers, Right: manyDomains},
				&CDCSpec{Type: typ, Kinds: kinds, Left: manyUsers, Right: manyDomains, Where: oracleWhere},
				&CDCSpec{Type: typ, Kinds: kinds, Left: manyUsers, Right: manyDomains, Where: Condition{Pair: oracleWhere.Pair}, MaxTs: true,
					Project: []Column{{Name: "user", Side: record.Left, Field: "name"}, {Name: "reason", Side: record.Right, Field: "reason"}}})
		}
	}
	pairs := 0
	for round := 0; round < rounds; round++ {
		w := &manyWorld{rng: rng, users: map[int]record.Row{}, domains: map[int]record.Row{}, nGroups: 1 + rng.Intn(3)}
		plain := make([]*runner, len(specs))
		twins := make([]*runner, len(specs))
		for i, s := range specs {
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			plain[i], twins[i] = newRunner(s, 0), newRunner(s, 0.3)
		}
		n := 1 + rng.Intn(changes)
		for i := 0; i < n; i++ {
			side, c := w.next()
			c.Pos = record.Position{Source: side.String(), Partition: int32(round), Offset: int64(i)}
			c.TsMs = int64(1000 + i)
			for k, s := range specs {
				a := plain[k].apply(t, rng, side, c)
				b := twins[k].apply(t, rng, side, c)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("seed %d round %d change %d: restored state emitted differently:\n%v\n%v", seed, round, i, a, b)
				}
				want := bruteForce(s, w.users, w.domains)
				if got := plain[k].table.Rows(); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d round %d change %d (%s %+v), %s kinds %d where %v: materialized changelog differs from the brute-force join\ngot  %v\nwant %v",
						seed, round, i, side, c, s.Type, s.Kinds, !s.Where.IsZero(), got, want)
				}
				if k == 0 {
					pairs += len(want)
				}
			}
		}
	}
	if pairs == 0 {
		t.Fatal("the histories never made a pair")
	}
}

// TestJoinCDCManyEqualsOneToMany checks that a left side of many rows
// (join column not its primary key) whose join values happen to be unique
// emits exactly what the one-row left side emits, output for output, in
// every join type and kind.
func TestJoinCDCManyEqualsOneToMany(t *testing.T) {
	seed := *oracleSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -joins.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	if v, err := strconv.Atoi(os.Getenv("JOINERY_CDC_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	// uid is a copy of id: unique, but not the primary key.
	withUID := func(r record.Row) record.Row {
		if r == nil {
			return nil
		}
		r = maps.Clone(r)
		r["uid"] = r["id"]
		return r
	}
	for round := 0; round < rounds; round++ {
		w := &world{rng: rng, users: map[int]record.Row{}, domains: map[int]record.Row{}}
		for _, typ := range []JoinType{Inner, LeftOuter, RightOuter, FullOuter} {
			for _, kinds := range []CDCKinds{KindsUpdate, KindsFlink, KindsKafka} {
				fast := &CDCSpec{Type: typ, Kinds: kinds, Left: usersSide, Right: domainsSide}
				general := &CDCSpec{Type: typ, Kinds: kinds, Left: SideSpec{Name: "users", PK: "id", JoinOn: "uid"}, Right: domainsSide}
				if fast.LeftMany() || !general.LeftMany() {
					t.Fatal("wrong shapes")
				}
				a, b := newRunner(fast, 0), newRunner(general, 0)
				for i := 0; i < 60; i++ {
					side, c := w.next()
					c.Pos = record.Position{Source: side.String(), Partition: int32(round), Offset: int64(i)}
					if side == record.Left {
						c.Before, c.After = withUID(c.Before), withUID(c.After)
					}
					oa, ob := a.apply(t, rng, side, c), b.apply(t, rng, side, c)
					if !reflect.DeepEqual(oa, ob) {
						t.Fatalf("seed %d round %d %s kinds %d change %d (%s %+v):\none-row left %v\nmany-row left %v", seed, round, typ, kinds, i, side, c, oa, ob)
					}
				}
			}
		}
	}
}

// TestJoinCDCForeignKey: a foreign-key join keys each result by the left
// row's primary key alone, one result per left row, and accepts only the
// shapes of Kafka Streams' foreign-key join.
func TestJoinCDCForeignKey(t *testing.T) {
	spec := &CDCSpec{Type: LeftOuter, Kinds: KindsKafka, ForeignKey: true,
		Left:  SideSpec{Name: "orders", PK: "id", JoinOn: "customer"},
		Right: SideSpec{Name: "customers", PK: "id", JoinOn: "id"}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	r := newRunner(spec, 0)
	rng := rand.New(rand.NewSource(1))
	order := record.Row{"id": num(7), "customer": num(1)}
	var got []string
	for _, step := range []struct {
		side record.Side
		c    record.Change
	}{
		{record.Left, ins(order)},
		{record.Right, ins(record.Row{"id": num(1), "name": "ann"})},
		{record.Right, del(record.Row{"id": num(1), "name": "ann"})},
	} {
		step.c.Pos = record.Position{Source: "s", Offset: int64(len(got))}
		for _, o := range r.apply(t, rng, step.side, step.c) {
			got = append(got, o.Kind.String()+" "+o.PK)
		}
	}
	want := []string{"+I 7", "-U 7", "+U 7", "-U 7", "+U 7"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outputs %v, want %v", got, want)
	}
	for _, bad := range []struct {
		spec CDCSpec
		want string
	}{
		{CDCSpec{Type: FullOuter, ForeignKey: true, Left: spec.Left, Right: spec.Right}, "type: a foreign-key join is inner or left"},
		{CDCSpec{ForeignKey: true, Left: spec.Left, Right: SideSpec{Name: "customers", PK: "id", JoinOn: "region"}}, "right.join_on: a foreign-key join's right table joins on its primary key"},
		{CDCSpec{ForeignKey: true, Left: SideSpec{Name: "orders", PK: "id", JoinOn: "id"}, Right: spec.Right}, "left.join_on: a foreign-key join's left table joins on a foreign key"},
	} {
		if err := bad.spec.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Validate() = %v, want %q", err, bad.want)
		}
	}
}
