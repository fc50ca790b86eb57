package joins

import (
	"reflect"
	"slices"
	"testing"

	"github.com/joinery/joinery/record"
)

type cdcCase struct {
	name  string
	setup []step // applied first; outputs only checked for consistency
	act   []step
	want  []string // fmtProj of every output of act, in order
}

func runCDCCases(t *testing.T, typ JoinType, cases []cdcCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, projSpec(typ))
			h.apply(tc.setup...)
			got := fmtAll(t, h.apply(tc.act...))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%s", diffLines(got, tc.want))
			}
		})
	}
}

var (
	egor1 = user(1, "Egor Myasnik")
	egor2 = user(1, "Egor Myasnikov")
	pavel = user(2, "Pavel Hvastun")
	mitya = user(3, "Mitya Volk")
	d1    = domain(1, 1, "Approval")
	d2    = domain(2, 1, "Rejection")
	d3    = domain(3, 1, "Stoppage")
	d4    = domain(4, 3, "Cancellation")
)

var userUpdateWant = []string{
	"-U [1,1] Egor Myasnik/Approval", "+U [1,1] Egor Myasnikov/Approval",
	"-U [1,2] Egor Myasnik/Rejection", "+U [1,2] Egor Myasnikov/Rejection",
	"-U [1,3] Egor Myasnik/Stoppage", "+U [1,3] Egor Myasnikov/Stoppage",
}

var userDeleteInnerWant = []string{
	"-D [1,1] Egor Myasnik/Approval",
	"-D [1,2] Egor Myasnik/Rejection",
	"-D [1,3] Egor Myasnik/Stoppage",
}

// Cases every join type agrees on: both sides present on both ends.
var commonCases = []cdcCase{
	{name: "user update re-emits all joined rows", setup: seed,
		act: []step{L(upd(egor1, egor2))}, want: userUpdateWant},
	{name: "user update with pk-only before uses the stored row", setup: seed,
		act: []step{L(upd(record.Row{"id": num(1)}, egor2))}, want: userUpdateWant},
	{name: "user update without before", setup: seed,
		act: []step{L(upd(nil, egor2))}, want: userUpdateWant},
	{name: "domain update", setup: seed,
		act:  []step{R(upd(d2, domain(2, 1, "Appeal")))},
		want: []string{"-U [1,2] Egor Myasnik/Rejection", "+U [1,2] Egor Myasnik/Appeal"}},
	{name: "domain update with pk-only before uses the stored row", setup: seed,
		act:  []step{R(upd(record.Row{"id": num(2)}, domain(2, 1, "Appeal")))},
		want: []string{"-U [1,2] Egor Myasnik/Rejection", "+U [1,2] Egor Myasnik/Appeal"}},
	{name: "domain delete while others remain", setup: seed,
		act: []step{R(del(d3))}, want: []string{"-D [1,3] Egor Myasnik/Stoppage"}},
	{name: "domain delete with partial before", setup: seed,
		act: []step{R(del(record.Row{"id": num(3), "user_id": num(1)}))}, want: []string{"-D [1,3] Egor Myasnik/Stoppage"}},
	{name: "delete of an absent domain", setup: seed,
		act: []step{R(del(domain(9, 1, "Nothing")))}},
	{name: "domain moved from user 1 to user 3", setup: seed,
		act:  []step{R(upd(d3, domain(3, 3, "Stoppage")))},
		want: []string{"-D [1,3] Egor Myasnik/Stoppage", "+I [3,3] Mitya Volk/Stoppage"}},
	{name: "domain primary key change", setup: seed,
		act:  []step{R(upd(d2, domain(5, 1, "Rejection")))},
		want: []string{"-D [1,2] Egor Myasnik/Rejection", "+I [1,5] Egor Myasnik/Rejection"}},
	{name: "domain re-inserted after delete", setup: append(slices.Clone(seed), R(del(d1))),
		act: []step{R(ins(d1))}, want: []string{"+I [1,1] Egor Myasnik/Approval"}},
	{name: "domain snapshot read is an upsert", setup: seed,
		act:  []step{R(record.Change{Op: record.OpRead, After: domain(2, 1, "Appeal")})},
		want: []string{"-U [1,2] Egor Myasnik/Rejection", "+U [1,2] Egor Myasnik/Appeal"}},
	{name: "delete of an absent user", setup: seed, act: []step{L(del(user(5, "Nobody")))}},
}

func TestJoinCDCInner(t *testing.T) {
	runCDCCases(t, Inner, append(slices.Clone(commonCases), []cdcCase{
		{name: "seed", act: seed, want: []string{
			"+I [1,1] Egor Myasnik/Approval",
			"+I [1,2] Egor Myasnik/Rejection",
			"+I [1,3] Egor Myasnik/Stoppage",
			"+I [3,4] Mitya Volk/Cancellation",
		}},
		{name: "domain arriving before its user", act: []step{R(ins(d1)), R(ins(d2)), L(ins(egor1))},
			want: []string{"+I [1,1] Egor Myasnik/Approval", "+I [1,2] Egor Myasnik/Rejection"}},
		{name: "user without domains", act: []step{L(ins(pavel))}},
		{name: "user update without domains", setup: seed, act: []step{L(upd(pavel, user(2, "Pavel")))}},
		{name: "user delete retracts joined rows", setup: seed, act: []step{L(del(egor1))}, want: userDeleteInnerWant},
		{name: "user delete with pk-only before", setup: seed,
			act: []step{L(del(record.Row{"id": num(1)}))}, want: userDeleteInnerWant},
		{name: "user delete without domains", setup: seed, act: []step{L(del(pavel))}},
		{name: "last domain removed", setup: seed,
			act: []step{R(del(d4))}, want: []string{"-D [3,4] Mitya Volk/Cancellation"}},
		{name: "first domain of a user", setup: seed,
			act: []step{R(ins(domain(5, 2, "Appeal")))}, want: []string{"+I [2,5] Pavel Hvastun/Appeal"}},
		{name: "domain without its user", setup: seed, act: []step{R(ins(domain(5, 7, "Orphan")))}},
		{name: "domain moved to a missing user", setup: seed,
			act: []step{R(upd(d3, domain(3, 7, "Stoppage")))}, want: []string{"-D [1,3] Egor Myasnik/Stoppage"}},
		{name: "user id change moves the user", setup: seed,
			act: []step{L(upd(mitya, user(7, "Mitya Volk")))}, want: []string{"-D [3,4] Mitya Volk/Cancellation"}},
	}...))
}

func TestJoinCDCLeftOuter(t *testing.T) {
	runCDCCases(t, LeftOuter, append(slices.Clone(commonCases), []cdcCase{
		{name: "seed", act: seed, want: []string{
			"+I [1,null] Egor Myasnik/null",
			"+I [2,null] Pavel Hvastun/null",
			"+I [3,null] Mitya Volk/null",
			"-D [1,null] Egor Myasnik/null", "+I [1,1] Egor Myasnik/Approval",
			"+I [1,2] Egor Myasnik/Rejection",
			"+I [1,3] Egor Myasnik/Stoppage",
			"-D [3,null] Mitya Volk/null", "+I [3,4] Mitya Volk/Cancellation",
		}},
		{name: "domain arriving before its user", act: []step{R(ins(d1)), R(ins(d2)), L(ins(egor1))},
			want: []string{"+I [1,1] Egor Myasnik/Approval", "+I [1,2] Egor Myasnik/Rejection"}},
		{name: "user without domains", act: []step{L(ins(pavel))}, want: []string{"+I [2,null] Pavel Hvastun/null"}},
		{name: "user update without domains", setup: seed, act: []step{L(upd(pavel, user(2, "Pavel")))},
			want: []string{"-U [2,null] Pavel Hvastun/null", "+U [2,null] Pavel/null"}},
		{name: "user delete retracts joined rows", setup: seed, act: []step{L(del(egor1))}, want: userDeleteInnerWant},
		{name: "user delete without domains", setup: seed, act: []step{L(del(pavel))},
			want: []string{"-D [2,null] Pavel Hvastun/null"}},
		{name: "null row retracted on first domain", setup: seed, act: []step{R(ins(domain(5, 2, "Appeal")))},
			want: []string{"-D [2,null] Pavel Hvastun/null", "+I [2,5] Pavel Hvastun/Appeal"}},
		{name: "null row back after the last domain", setup: seed, act: []step{R(del(d4))},
			want: []string{"-D [3,4] Mitya Volk/Cancellation", "+I [3,null] Mitya Volk/null"}},
		{name: "domain without its user", setup: seed, act: []step{R(ins(domain(5, 7, "Orphan")))}},
		{name: "only domain moved to a user without domains", setup: seed,
			act: []step{R(upd(d4, domain(4, 2, "Cancellation")))},
			want: []string{
				"-D [3,4] Mitya Volk/Cancellation", "+I [3,null] Mitya Volk/null",
				"-D [2,null] Pavel Hvastun/null", "+I [2,4] Pavel Hvastun/Cancellation",
			}},
		{name: "primary key change of the only domain", setup: seed,
			act: []step{R(upd(d4, domain(6, 3, "Cancellation")))},
			want: []string{
				"-D [3,4] Mitya Volk/Cancellation", "+I [3,null] Mitya Volk/null",
				"-D [3,null] Mitya Volk/null", "+I [3,6] Mitya Volk/Cancellation",
			}},
	}...))
}

func TestJoinCDCFullOuter(t *testing.T) {
	runCDCCases(t, FullOuter, append(slices.Clone(commonCases), []cdcCase{
		{name: "seed", act: seed, want: []string{
			"+I [1,null] Egor Myasnik/null",
			"+I [2,null] Pavel Hvastun/null",
			"+I [3,null] Mitya Volk/null",
			"-D [1,null] Egor Myasnik/null", "+I [1,1] Egor Myasnik/Approval",
			"+I [1,2] Egor Myasnik/Rejection",
			"+I [1,3] Egor Myasnik/Stoppage",
			"-D [3,null] Mitya Volk/null", "+I [3,4] Mitya Volk/Cancellation",
		}},
		{name: "domain arriving before its user", act: []step{R(ins(d1)), R(ins(d2)), L(ins(egor1))},
			want: []string{
				"+I [null,1] null/Approval",
				"+I [null,2] null/Rejection",
				"-D [null,1] null/Approval", "+I [1,1] Egor Myasnik/Approval",
				"-D [null,2] null/Rejection", "+I [1,2] Egor Myasnik/Rejection",
			}},
		{name: "user without domains", act: []step{L(ins(pavel))}, want: []string{"+I [2,null] Pavel Hvastun/null"}},
		{name: "user update without domains", setup: seed, act: []step{L(upd(pavel, user(2, "Pavel")))},
			want: []string{"-U [2,null] Pavel Hvastun/null", "+U [2,null] Pavel/null"}},
		{name: "user delete keeps its domains null-padded", setup: seed, act: []step{L(del(egor1))},
			want: []string{
				"-D [1,1] Egor Myasnik/Approval", "+I [null,1] null/Approval",
				"-D [1,2] Egor Myasnik/Rejection", "+I [null,2] null/Rejection",
				"-D [1,3] Egor Myasnik/Stoppage", "+I [null,3] null/Stoppage",
			}},
		{name: "user delete without domains", setup: seed, act: []step{L(del(pavel))},
			want: []string{"-D [2,null] Pavel Hvastun/null"}},
		{name: "null row retracted on first domain", setup: seed, act: []step{R(ins(domain(5, 2, "Appeal")))},
			want: []string{"-D [2,null] Pavel Hvastun/null", "+I [2,5] Pavel Hvastun/Appeal"}},
		{name: "null row back after the last domain", setup: seed, act: []step{R(del(d4))},
			want: []string{"-D [3,4] Mitya Volk/Cancellation", "+I [3,null] Mitya Volk/null"}},
		{name: "domain without its user", setup: seed, act: []step{R(ins(domain(5, 7, "Orphan")))},
			want: []string{"+I [null,5] null/Orphan"}},
		{name: "domain without its user updated", setup: append(slices.Clone(seed), R(ins(domain(5, 7, "Orphan")))),
			act:  []step{R(upd(domain(5, 7, "Orphan"), domain(5, 7, "Adopted")))},
			want: []string{"-U [null,5] null/Orphan", "+U [null,5] null/Adopted"}},
		{name: "domain without its user deleted", setup: append(slices.Clone(seed), R(ins(domain(5, 7, "Orphan")))),
			act: []step{R(del(domain(5, 7, "Orphan")))}, want: []string{"-D [null,5] null/Orphan"}},
		{name: "domain moved to a missing user", setup: seed,
			act:  []step{R(upd(d3, domain(3, 7, "Stoppage")))},
			want: []string{"-D [1,3] Egor Myasnik/Stoppage", "+I [null,3] null/Stoppage"}},
		{name: "user id change moves the user", setup: seed,
			act: []step{L(upd(mitya, user(7, "Mitya Volk")))},
			want: []string{
				"-D [3,4] Mitya Volk/Cancellation", "+I [null,4] null/Cancellation",
				"+I [7,null] Mitya Volk/null",
			}},
	}...))
}

// A domain moving from user 1 to user 3 routes to a delete at key 1 (Seq 0)
// and a create at key 3 (Seq 1); the output ids name both.
func TestJoinCDCDomainMoveRouting(t *testing.T) {
	h := newHarness(t, projSpec(Inner))
	h.apply(seed...)
	outs := h.apply(R(upd(d3, domain(3, 3, "Stoppage"))))
	if len(h.evs) != 2 {
		t.Fatalf("events %+v, want 2", h.evs)
	}
	d, c := h.evs[0], h.evs[1]
	if d.Key != "1" || d.Op != record.OpDelete || d.Seq != 0 || !reflect.DeepEqual(d.Before, d3) || d.After != nil || d.Side != record.Right {
		t.Errorf("first event %+v, want d at key 1 with seq 0", d)
	}
	if c.Key != "3" || c.Op != record.OpCreate || c.Seq != 1 || c.Before != nil || c.Side != record.Right {
		t.Errorf("second event %+v, want c at key 3 with seq 1", c)
	}
	if d.Pos != c.Pos || d.Pos.String() != "domains/0@4" {
		t.Errorf("positions %v, %v; want both domains/0@4", d.Pos, c.Pos)
	}
	wantIDs := []string{"domains/0@4/1/0/0", "domains/0@4/3/1/0"}
	for i, o := range outs {
		if o.ID != wantIDs[i] {
			t.Errorf("output %d id %q, want %q", i, o.ID, wantIDs[i])
		}
	}
	if _, ok := h.keys["1"]; !ok {
		t.Fatal("key 1 lost its state")
	}
	if got := h.keys["3"].Rights(); !reflect.DeepEqual(got, []record.Row{domain(3, 3, "Stoppage"), d4}) {
		t.Errorf("key 3 rights %v", got)
	}
}

// Without a projection a row holds both sides' rows under their names, nil
// for a padded side.
func TestJoinCDCNoProjection(t *testing.T) {
	h := newHarness(t, nestedSpec(FullOuter))
	outs := h.apply(R(ins(d4)), L(ins(mitya)))
	want := []record.Output{
		{ID: "domains/0@0/3/0/0", Kind: record.Insert, PK: "[null,4]", Row: record.Row{"users": nil, "domains": d4}},
		{ID: "users/0@0/3/0/0", Kind: record.Delete, PK: "[null,4]", Row: record.Row{"users": nil, "domains": d4}},
		{ID: "users/0@0/3/0/1", Kind: record.Insert, PK: "[3,4]", Row: record.Row{"users": mitya, "domains": d4}},
	}
	if !reflect.DeepEqual(outs, want) {
		t.Fatalf("got %+v\nwant %+v", outs, want)
	}
}

// String keys are JSON strings in the output primary key; projected columns
// missing from a row are null.
func TestJoinCDCStringKeysAndMissingFields(t *testing.T) {
	spec := &CDCSpec{Type: LeftOuter, Left: usersSide, Right: domainsSide, Project: []Column{
		{Name: "who", Side: record.Left, Field: "name"},
		{Name: "what", Side: record.Right, Field: "absent"},
	}}
	h := newHarness(t, spec)
	outs := h.apply(L(ins(record.Row{"id": `a"b`, "name": "x"})))
	want := []record.Output{{ID: `users/0@0/a"b/0/0`, Kind: record.Insert, PK: `["a\"b",null]`,
		Row: record.Row{"who": "x", "what": nil}}}
	if !reflect.DeepEqual(outs, want) {
		t.Fatalf("got %+v\nwant %+v", outs, want)
	}
}

func TestJoinCDCViews(t *testing.T) {
	h := newHarness(t, projSpec(Inner))
	h.apply(seed...)
	st := h.keys["1"]
	if st.Empty() || !reflect.DeepEqual(st.Left(), egor1) {
		t.Fatalf("left %v", st.Left())
	}
	if got := st.Rights(); !reflect.DeepEqual(got, []record.Row{d1, d2, d3}) {
		t.Fatalf("rights %v", got)
	}
	if _, ok := h.keys["2"]; !ok {
		t.Fatal("key 2 (user without domains) must hold state")
	}
	h.apply(L(del(egor1)), R(del(d1)), R(del(d2)), R(del(d3)))
	if _, ok := h.keys["1"]; ok || !st.Empty() || st.Left() != nil || len(st.Rights()) != 0 {
		t.Fatalf("key 1 not empty: %v %v", st.Left(), st.Rights())
	}
}

// OnEvent ignores events Route would never make.
func TestJoinCDCIgnoresMalformedEvents(t *testing.T) {
	j := NewCDC(projSpec(FullOuter))
	for _, e := range []record.Event{
		{Key: "1", Side: 9, Op: record.OpCreate, After: egor1},
		{Key: "1", Side: record.Left, Op: 'x', After: egor1},
		{Key: "1", Side: record.Left, Op: record.OpCreate},
		{Key: "1", Side: record.Right, Op: record.OpCreate, After: record.Row{"user_id": num(1)}},
		{Key: "1", Side: record.Right, Op: record.OpDelete},
		{Key: "1", Side: record.Left, Op: record.OpDelete, Before: record.Row{"id": nil}},
	} {
		if out := j.OnEvent(e, nil); len(out) != 0 || !j.Empty() {
			t.Errorf("%+v: outputs %v, empty %v", e, out, j.Empty())
		}
	}
}

// Outputs are appended; ids count from the start of this call's outputs.
func TestJoinCDCAppends(t *testing.T) {
	j := NewCDC(projSpec(LeftOuter))
	prev := []record.Output{{ID: "earlier"}}
	e := record.Event{Key: "1", Side: record.Left, Op: record.OpCreate, After: egor1, Pos: record.Position{Source: "users", Offset: 7}}
	out := j.OnEvent(e, prev)
	if len(out) != 2 || out[0].ID != "earlier" || out[1].ID != "users/0@7/1/0/0" {
		t.Fatalf("%+v", out)
	}
}

func TestJoinCDCRightOuter(t *testing.T) {
	runCDCCases(t, RightOuter, append(slices.Clone(commonCases), []cdcCase{
		{name: "seed", act: seed, want: []string{
			"+I [1,1] Egor Myasnik/Approval",
			"+I [1,2] Egor Myasnik/Rejection",
			"+I [1,3] Egor Myasnik/Stoppage",
			"+I [3,4] Mitya Volk/Cancellation",
		}},
		{name: "domain arriving before its user", act: []step{R(ins(d1)), R(ins(d2)), L(ins(egor1))},
			want: []string{
				"+I [null,1] null/Approval",
				"+I [null,2] null/Rejection",
				"-D [null,1] null/Approval", "+I [1,1] Egor Myasnik/Approval",
				"-D [null,2] null/Rejection", "+I [1,2] Egor Myasnik/Rejection",
			}},
		{name: "user without domains", act: []step{L(ins(pavel))}},
		{name: "user update without domains", setup: seed, act: []step{L(upd(pavel, user(2, "Pavel")))}},
		{name: "user delete keeps its domains null-padded", setup: seed, act: []step{L(del(egor1))},
			want: []string{
				"-D [1,1] Egor Myasnik/Approval", "+I [null,1] null/Approval",
				"-D [1,2] Egor Myasnik/Rejection", "+I [null,2] null/Rejection",
				"-D [1,3] Egor Myasnik/Stoppage", "+I [null,3] null/Stoppage",
			}},
		{name: "user delete without domains", setup: seed, act: []step{L(del(pavel))}},
		{name: "first domain of a user", setup: seed, act: []step{R(ins(domain(5, 2, "Appeal")))},
			want: []string{"+I [2,5] Pavel Hvastun/Appeal"}},
		{name: "last domain removed", setup: seed, act: []step{R(del(d4))},
			want: []string{"-D [3,4] Mitya Volk/Cancellation"}},
		{name: "domain without its user", setup: seed, act: []step{R(ins(domain(5, 7, "Orphan")))},
			want: []string{"+I [null,5] null/Orphan"}},
		{name: "domain without its user updated", setup: append(slices.Clone(seed), R(ins(domain(5, 7, "Orphan")))),
			act:  []step{R(upd(domain(5, 7, "Orphan"), domain(5, 7, "Adopted")))},
			want: []string{"-U [null,5] null/Orphan", "+U [null,5] null/Adopted"}},
		{name: "domain without its user deleted", setup: append(slices.Clone(seed), R(ins(domain(5, 7, "Orphan")))),
			act: []step{R(del(domain(5, 7, "Orphan")))}, want: []string{"-D [null,5] null/Orphan"}},
		{name: "domain moved to a missing user", setup: seed,
			act:  []step{R(upd(d3, domain(3, 7, "Stoppage")))},
			want: []string{"-D [1,3] Egor Myasnik/Stoppage", "+I [null,3] null/Stoppage"}},
		{name: "padded domain moved to a user", setup: append(slices.Clone(seed), R(ins(domain(5, 7, "Orphan")))),
			act:  []step{R(upd(domain(5, 7, "Orphan"), domain(5, 2, "Orphan")))},
			want: []string{"-D [null,5] null/Orphan", "+I [2,5] Pavel Hvastun/Orphan"}},
		{name: "user id change moves the user", setup: seed,
			act:  []step{L(upd(mitya, user(7, "Mitya Volk")))},
			want: []string{"-D [3,4] Mitya Volk/Cancellation", "+I [null,4] null/Cancellation"}},
	}...))
}
