package joins

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/joinery/joinery/record"
)

func flinkSpec(t JoinType) *CDCSpec {
	s := projSpec(t)
	s.Kinds = KindsFlink
	return s
}

// TestCDCFlinkKinds checks the row kinds of Flink's JoinHelper.processJoin
// (StreamingJoinOperator) step by step: an update is a retraction then an
// accumulation, an outer side's rows come and go as -D/+I, and only an
// inner join forwards -U/+U.
func TestCDCFlinkKinds(t *testing.T) {
	u1, u1b := user(1, "Egor"), user(1, "Egor M")
	d1, d1b := domain(1, 1, "Approval"), domain(1, 1, "Approved")
	for _, c := range []struct {
		name  string
		typ   JoinType
		steps []step
		want  []string
	}{
		{"inner: -U/+U forwarded", Inner, []step{L(ins(u1)), R(ins(d1)), L(upd(u1, u1b)), R(upd(d1, d1b)), R(del(d1b))}, []string{
			"+I [1,1] Egor/Approval",
			"-U [1,1] Egor/Approval", "+U [1,1] Egor M/Approval",
			"-U [1,1] Egor M/Approval", "+U [1,1] Egor M/Approved",
			"-D [1,1] Egor M/Approved"}},
		{"left: outer-side update is -D/+I", LeftOuter, []step{L(ins(u1)), L(upd(u1, u1b)), R(ins(d1)), L(upd(u1b, u1))}, []string{
			"+I [1,null] Egor/null",
			"-D [1,null] Egor/null", "+I [1,null] Egor M/null",
			"-D [1,null] Egor M/null", "+I [1,1] Egor M/Approval",
			"-D [1,1] Egor M/Approval", "+I [1,1] Egor/Approval"}},
		{"left: inner-side update retracts with -U, pads, un-pads", LeftOuter, []step{L(ins(u1)), R(ins(d1)), R(upd(d1, d1b)), R(del(d1b))}, []string{
			"+I [1,null] Egor/null",
			"-D [1,null] Egor/null", "+I [1,1] Egor/Approval",
			"-U [1,1] Egor/Approval", "+I [1,null] Egor/null", "-D [1,null] Egor/null", "+I [1,1] Egor/Approved",
			"-D [1,1] Egor/Approved", "+I [1,null] Egor/null"}},
		{"full: both sides outer", FullOuter, []step{R(ins(d1)), L(ins(u1)), L(upd(u1, u1b)), L(del(u1b))}, []string{
			"+I [null,1] null/Approval",
			"-D [null,1] null/Approval", "+I [1,1] Egor/Approval",
			"-D [1,1] Egor/Approval", "+I [null,1] null/Approval", "-D [null,1] null/Approval", "+I [1,1] Egor M/Approval",
			"-D [1,1] Egor M/Approval", "+I [null,1] null/Approval"}},
		{"right: inner-side update is -U then +I, outer side -D/+I", RightOuter, []step{R(ins(d1)), L(ins(u1)), L(upd(u1, u1b)), R(upd(d1, d1b)), L(del(u1b)), R(del(d1b))}, []string{
			"+I [null,1] null/Approval",
			"-D [null,1] null/Approval", "+I [1,1] Egor/Approval",
			"-U [1,1] Egor/Approval", "+I [null,1] null/Approval", "-D [null,1] null/Approval", "+I [1,1] Egor M/Approval",
			"-D [1,1] Egor M/Approval", "+I [1,1] Egor M/Approved",
			"-D [1,1] Egor M/Approved", "+I [null,1] null/Approved",
			"-D [null,1] null/Approved"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, flinkSpec(c.typ))
			got := fmtAll(t, h.apply(c.steps...))
			eqLines(t, "outputs", got, c.want)
		})
	}
}

// TestCDCFlinkKindsTable runs random changes through both conventions: the
// Flink one is a consistent changelog (the strict table takes it) and
// materializes to the same table as the default one.
func TestCDCFlinkKindsTable(t *testing.T) {
	for _, typ := range []JoinType{Inner, LeftOuter, RightOuter, FullOuter} {
		t.Run(typ.String(), func(t *testing.T) {
			steps := randomCDCSteps(rand.New(rand.NewPCG(3, uint64(typ))), 600)
			def, fl := newHarness(t, projSpec(typ)), newHarness(t, flinkSpec(typ))
			var kinds [4]int
			for _, s := range steps {
				def.apply(s)
				for _, o := range fl.apply(s) {
					kinds[o.Kind]++
				}
				a, b := tableMapOf(def.table), tableMapOf(fl.table)
				if fmt.Sprint(a) != fmt.Sprint(b) {
					t.Fatalf("after %+v: tables differ\n%v\n%v", s, a, b)
				}
			}
			if typ != Inner && kinds[record.UpdateAfter] != 0 {
				t.Errorf("an outer join emitted %d +U", kinds[record.UpdateAfter])
			}
			if typ == Inner && kinds[record.UpdateAfter] == 0 {
				t.Errorf("an inner join with updates emitted no +U")
			}
			t.Logf("kinds +I %d, -U %d, +U %d, -D %d", kinds[0], kinds[1], kinds[2], kinds[3])
		})
	}
}

// randomCDCSteps makes n random changes of users (ids 0..5) and domains
// (ids 0..11, each of a random user), each a consistent changelog.
func randomCDCSteps(r *rand.Rand, n int) []step {
	users, domains := map[int]record.Row{}, map[int]record.Row{}
	var steps []step
	for i := range n {
		if r.IntN(2) == 0 {
			id := r.IntN(6)
			old, ok := users[id]
			switch {
			case ok && r.IntN(4) == 0:
				steps = append(steps, L(del(old)))
				delete(users, id)
			case ok:
				users[id] = user(id, fmt.Sprint("u", i))
				steps = append(steps, L(upd(old, users[id])))
			default:
				users[id] = user(id, fmt.Sprint("u", i))
				steps = append(steps, L(ins(users[id])))
			}
			continue
		}
		id := r.IntN(12)
		old, ok := domains[id]
		switch {
		case ok && r.IntN(4) == 0:
			steps = append(steps, R(del(old)))
			delete(domains, id)
		case ok:
			domains[id] = domain(id, r.IntN(6), fmt.Sprint("d", i))
			steps = append(steps, R(upd(old, domains[id])))
		default:
			domains[id] = domain(id, r.IntN(6), fmt.Sprint("d", i))
			steps = append(steps, R(ins(domains[id])))
		}
	}
	return steps
}

func tableMapOf(tb *Table) map[string]string {
	m := map[string]string{}
	for _, r := range tb.Rows() {
		m[r.PK] = fmt.Sprint(r.Row)
	}
	return m
}

// TestCDCMaxTs checks output times as Kafka Streams' KTable-KTable join
// stamps them: max of the input change's time and the other row's, also for
// retractions; a padded row takes the input's time; without MaxTs, none.
func TestCDCMaxTs(t *testing.T) {
	for _, kinds := range []CDCKinds{KindsUpdate, KindsFlink} {
		spec := projSpec(LeftOuter)
		spec.MaxTs, spec.Kinds = true, kinds
		h := newHarness(t, spec)
		at := func(ts int64, s step) step { s.c.TsMs = ts; return s }
		var got []string
		for _, s := range []step{
			at(5, L(ins(user(0, "X0")))),
			at(0, R(ins(domain(0, 0, "Y0")))),
			at(7, L(upd(user(0, "X0"), user(0, "XX0")))),
			at(10, R(upd(domain(0, 0, "Y0"), domain(0, 0, "YY0")))),
			at(3, R(del(domain(0, 0, "YY0")))),
			at(2, L(del(user(0, "XX0")))),
		} {
			for _, o := range h.apply(s) {
				got = append(got, fmt.Sprintf("%d %s", o.Ts, fmtProj(t, o)))
			}
		}
		// The last output of each step, as Kafka Streams' records: X0+null
		// at 5, X0+Y0 at 5, XX0+Y0 at 7, XX0+YY0 at 10, XX0+null at 7
		// (max(3, 7)), the delete at 2.
		want := map[CDCKinds][]string{
			KindsUpdate: {"5 +I [0,null] X0/null", "5 -D [0,null] X0/null", "5 +I [0,0] X0/Y0", "7 -U [0,0] X0/Y0", "7 +U [0,0] XX0/Y0",
				"10 -U [0,0] XX0/Y0", "10 +U [0,0] XX0/YY0", "7 -D [0,0] XX0/YY0", "7 +I [0,null] XX0/null", "2 -D [0,null] XX0/null"},
			KindsFlink: {"5 +I [0,null] X0/null", "5 -D [0,null] X0/null", "5 +I [0,0] X0/Y0", "7 -D [0,0] X0/Y0", "7 +I [0,0] XX0/Y0",
				"10 -U [0,0] XX0/Y0", "10 +I [0,null] XX0/null", "10 -D [0,null] XX0/null", "10 +I [0,0] XX0/YY0",
				"7 -D [0,0] XX0/YY0", "7 +I [0,null] XX0/null", "2 -D [0,null] XX0/null"},
		}[kinds]
		eqLines(t, fmt.Sprint("kinds ", kinds), got, want)
		// The times round-trip through a snapshot.
		for k, st := range h.keys {
			again := NewCDC(spec)
			if err := again.Restore(st.Snapshot()); err != nil || string(again.Snapshot()) != string(st.Snapshot()) {
				t.Fatalf("key %s: restore %v", k, err)
			}
		}
	}
	spec := projSpec(Inner)
	h := newHarness(t, spec)
	s := L(ins(user(0, "a")))
	s.c.TsMs = 9
	h.apply(s)
	s = R(ins(domain(0, 0, "b")))
	s.c.TsMs = 4
	if outs := h.apply(s); len(outs) != 1 || outs[0].Ts != 0 {
		t.Fatalf("without MaxTs: %+v", outs)
	}
	if st := h.keys["0"]; st == nil || string(st.Snapshot()) != "\x01"+`{"l":{"id":0,"name":"a"},"r":{"0":{"id":0,"reason":"b","user_id":0}}}` {
		t.Fatalf("a state without times must encode as before: %q", h.keys["0"].Snapshot())
	}
}
