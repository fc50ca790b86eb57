package joins

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

func TestRouteErrors(t *testing.T) {
	spec := nestedSpec(Inner)
	obj := map[string]any{"a": 1}
	arr := []any{1}
	cases := []struct {
		name string
		side record.Side
		c    record.Change
		why  reason.Reason
		col  string // must appear in the message
	}{
		{"bad side", 5, ins(d1), reason.UnknownSide, ""},
		{"unknown op", record.Right, record.Change{Op: 'x', After: d1}, reason.UnknownOp, ""},
		{"create without after", record.Right, record.Change{Op: record.OpCreate}, reason.MissingAfter, "after"},
		{"read without after", record.Right, record.Change{Op: record.OpRead}, reason.MissingAfter, "after"},
		{"update without after", record.Right, upd(d1, nil), reason.MissingAfter, "after"},
		{"delete without before", record.Right, del(nil), reason.MissingBefore, "before"},
		{"join column object", record.Right, ins(record.Row{"id": num(1), "user_id": obj}), reason.WrongType, "user_id"},
		{"join column array", record.Right, ins(record.Row{"id": num(1), "user_id": arr}), reason.WrongType, "user_id"},
		{"pk missing", record.Right, ins(record.Row{"user_id": num(1)}), reason.MissingPK, "id"},
		{"pk null", record.Right, ins(record.Row{"id": nil, "user_id": num(1)}), reason.MissingPK, "id"},
		{"pk not scalar", record.Right, ins(record.Row{"id": arr, "user_id": num(1)}), reason.WrongType, "id"},
		{"left pk null", record.Left, ins(record.Row{"id": nil, "name": "x"}), reason.MissingPK, "id"},
		{"join value reserved", record.Right, ins(record.Row{"id": num(1), "user_id": "\x00null/left/1"}), reason.ReservedKey, "user_id"},
		{"before join value reserved", record.Right, upd(record.Row{"id": num(1), "user_id": "\x00null/x"}, d1), reason.ReservedKey, "before.user_id"},
		{"update before pk null", record.Right, upd(record.Row{"id": nil}, d1), reason.MissingPK, "before.id"},
		{"update before join object", record.Right, upd(record.Row{"id": num(1), "user_id": obj}, d1), reason.WrongType, "before.user_id"},
		{"move with before lacking pk", record.Right, upd(record.Row{"user_id": num(2)}, d1), reason.MissingPK, "before.id"},
		{"delete with pk-only before", record.Right, del(record.Row{"id": num(1)}), reason.Unroutable, "primary key"},
		{"delete with empty before", record.Right, del(record.Row{}), reason.Unroutable, "user_id"},
		{"delete pk missing", record.Right, del(record.Row{"user_id": num(1)}), reason.MissingPK, "before.id"},
		{"delete pk null", record.Right, del(record.Row{"id": nil, "user_id": num(1)}), reason.MissingPK, "before.id"},
		{"left delete pk null", record.Left, del(record.Row{"id": nil}), reason.MissingPK, "before.id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Pos = record.Position{Source: "s", Partition: 2, Offset: 9}
			evs, err := spec.Route(tc.side, tc.c)
			if err == nil {
				t.Fatalf("no error, events %+v", evs)
			}
			var re *RouteError
			if !errors.As(err, &re) {
				t.Fatalf("error %T %v is not a *RouteError", err, err)
			}
			if re.Reason != tc.why {
				t.Errorf("reason %q, want %q (%v)", re.Reason, tc.why, err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.col) || !strings.Contains(msg, "s/2@9") {
				t.Errorf("message %q should name %q and the position", msg, tc.col)
			}
			if evs != nil {
				t.Errorf("events %+v alongside an error", evs)
			}
		})
	}
}

func TestRoute(t *testing.T) {
	spec := nestedSpec(Inner)
	pos := record.Position{Source: "domains", Partition: 1, Offset: 42}
	moved := domain(3, 3, "Stoppage")
	partial := record.Row{"id": num(3)}
	cases := []struct {
		name string
		side record.Side
		c    record.Change
		want []record.Event
	}{
		{"create", record.Right, ins(d3), []record.Event{{Key: "1", Side: record.Right, Op: record.OpCreate, After: d3}}},
		{"read", record.Left, record.Change{Op: record.OpRead, After: mitya},
			[]record.Event{{Key: "3", Side: record.Left, Op: record.OpRead, After: mitya}}},
		{"update same key", record.Right, upd(d3, domain(3, 1, "x")),
			[]record.Event{{Key: "1", Side: record.Right, Op: record.OpUpdate, Before: d3, After: domain(3, 1, "x")}}},
		{"update without before", record.Right, upd(nil, moved),
			[]record.Event{{Key: "3", Side: record.Right, Op: record.OpUpdate, After: moved}}},
		{"update with before lacking the join column", record.Right, upd(partial, moved),
			[]record.Event{{Key: "3", Side: record.Right, Op: record.OpUpdate, Before: partial, After: moved}}},
		{"update moving the domain", record.Right, upd(d3, moved), []record.Event{
			{Key: "1", Side: record.Right, Op: record.OpDelete, Before: d3, Seq: 0},
			{Key: "3", Side: record.Right, Op: record.OpCreate, After: moved, Seq: 1},
		}},
		{"update changing the user id", record.Left, upd(record.Row{"id": num(3)}, user(7, "Mitya Volk")), []record.Event{
			{Key: "3", Side: record.Left, Op: record.OpDelete, Before: record.Row{"id": num(3)}, Seq: 0},
			{Key: "7", Side: record.Left, Op: record.OpCreate, After: user(7, "Mitya Volk"), Seq: 1},
		}},
		{"delete", record.Right, del(d4), []record.Event{{Key: "3", Side: record.Right, Op: record.OpDelete, Before: d4}}},
		{"left delete with pk-only before", record.Left, del(record.Row{"id": num(2)}),
			[]record.Event{{Key: "2", Side: record.Left, Op: record.OpDelete, Before: record.Row{"id": num(2)}}}},
		{"string and bool keys", record.Right, ins(record.Row{"id": "x", "user_id": true}),
			[]record.Event{{Key: "true", Side: record.Right, Op: record.OpCreate, After: record.Row{"id": "x", "user_id": true}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Pos = pos
			for i := range tc.want {
				tc.want[i].Pos = pos
			}
			got, err := spec.Route(tc.side, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			// AppendRoute appends the same events after what dst holds.
			prior := record.Event{Key: "prior"}
			buf := make([]record.Event, 1, 4)
			buf[0] = prior
			got, err = spec.AppendRoute(buf, tc.side, tc.c)
			if err != nil || !reflect.DeepEqual(got, append([]record.Event{prior}, tc.want...)) {
				t.Fatalf("AppendRoute: %+v, %v\nwant %+v after %+v", got, err, tc.want, prior)
			}
		})
	}
	// On an error, dst comes back as it was.
	buf := []record.Event{{Key: "prior"}}
	got, err := spec.AppendRoute(buf, record.Right, del(nil))
	if err == nil || len(got) != 1 || got[0].Key != "prior" {
		t.Fatalf("AppendRoute of a bad change: %+v, %v; want the prior event and an error", got, err)
	}
}

func TestCDCSpecValidate(t *testing.T) {
	if err := projSpec(FullOuter).Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	if err := (*CDCSpec)(nil).Validate(); err == nil {
		t.Fatal("nil spec validated")
	}
	err := (&CDCSpec{Type: 9, Project: []Column{
		{Name: "a", Side: record.Left, Field: "x"},
		{Name: "a", Side: 4},
		{},
	}}).Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"type: unknown join type 9",
		"left.name: must not be empty", "left.pk: must not be empty", "left.join_on: must not be empty",
		"right.name: must not be empty", "right.pk: must not be empty", "right.join_on: must not be empty",
		`project[1].name: duplicate "a"`, "project[1].side: must be left or right", "project[1].field: must not be empty",
		"project[2].name: must not be empty",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	same := &CDCSpec{Left: usersSide, Right: SideSpec{Name: "users", PK: "id", JoinOn: "uid"}}
	if err := same.Validate(); err == nil || !strings.Contains(err.Error(), "right.name: must differ") {
		t.Errorf("same names without projection: %v", err)
	}
}

func TestParseJoinType(t *testing.T) {
	for _, typ := range []JoinType{Inner, LeftOuter, RightOuter, FullOuter} {
		b, err := typ.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got JoinType
		if err := got.UnmarshalText(b); err != nil || got != typ {
			t.Errorf("%v: round trip gave %v, %v", typ, got, err)
		}
	}
	if typ, err := ParseJoinType("left"); err != nil || typ != LeftOuter {
		t.Errorf("left: %v %v", typ, err)
	}
	if typ, err := ParseJoinType("right"); err != nil || typ != RightOuter {
		t.Errorf("right: %v %v", typ, err)
	}
	if _, err := ParseJoinType("outer"); err == nil {
		t.Error("outer parsed")
	}
	if _, err := JoinType(7).MarshalText(); err == nil {
		t.Error("JoinType(7) marshalled")
	}
}

func TestTable(t *testing.T) {
	row := func(v string) record.Row { return record.Row{"v": v} }
	tb := NewTable()
	steps := []struct {
		kind record.Kind
		pk   string
		row  record.Row
		ok   bool
	}{
		{record.Insert, "[2,1]", row("a"), true},
		{record.Insert, "[2,1]", row("a"), false},      // already present
		{record.UpdateAfter, "[2,1]", row("b"), false}, // +U without -U
		{record.UpdateBefore, "[2,1]", row("x"), false},
		{record.UpdateBefore, "[2,1]", row("a"), true},
		{record.UpdateBefore, "[2,1]", row("a"), false}, // absent now
		{record.UpdateAfter, "[2,1]", row("b"), true},
		{record.Insert, "[1,null]", row("c"), true},
		{record.Delete, "[1,null]", row("d"), false},
		{record.Delete, "[9,9]", row("c"), false},
		{record.Kind(9), "[9,9]", row("c"), false},
		{record.UpdateAfter, "[0,0]", row("e"), true}, // +U of an absent pk
	}
	for i, s := range steps {
		err := tb.Apply(record.Output{ID: "id", Kind: s.kind, PK: s.pk, Row: s.row})
		if (err == nil) != s.ok {
			t.Fatalf("step %d %s %s: err %v, want ok=%v", i, s.kind, s.pk, err, s.ok)
		}
	}
	want := []TableRow{{"[0,0]", row("e")}, {"[1,null]", row("c")}, {"[2,1]", row("b")}}
	if got := tb.Rows(); !reflect.DeepEqual(got, want) || tb.Len() != 3 {
		t.Fatalf("rows %v, len %d", got, tb.Len())
	}
}

// TestRouteNullKeys: a null or absent join value never matches. In a join
// that keeps its side the row is at its own key, NullRowKey(side, pk);
// otherwise its image goes nowhere: ErrUnmatched when no image is left.
func TestRouteNullKeys(t *testing.T) {
	pos := record.Position{Source: "domains", Partition: 1, Offset: 42}
	nul := record.Row{"id": num(5), "user_id": nil, "reason": "x"}
	absent := record.Row{"id": num(5), "reason": "x"}
	nul2 := record.Row{"id": num(5), "user_id": nil, "reason": "y"}
	nul6 := record.Row{"id": num(6), "user_id": nil, "reason": "y"}
	keyed := domain(5, 2, "x")
	nk := NullRowKey(record.Right, "5")
	if nk != "\x00null/right/5" || !IsNullRowKey(nk) || IsNullRowKey("5") || NullRowKey(record.Left, "5") == nk {
		t.Fatalf("NullRowKey %q", nk)
	}
	ev := func(key record.Key, op record.Op, before, after record.Row, seq int) record.Event {
		return record.Event{Key: key, Side: record.Right, Op: op, Before: before, After: after, Pos: pos, Seq: seq}
	}
	cases := []struct {
		name string
		c    record.Change
		kept []record.Event // in a join that keeps the right side
		not  []record.Event // in one that does not; nil: ErrUnmatched
	}{
		{"insert", ins(nul), []record.Event{ev(nk, record.OpCreate, nil, nul, 0)}, nil},
		{"insert without the join column", ins(absent), []record.Event{ev(nk, record.OpCreate, nil, absent, 0)}, nil},
		{"update", upd(nul, nul2), []record.Event{ev(nk, record.OpUpdate, nul, nul2, 0)}, nil},
		{"update without before", upd(nil, nul2), []record.Event{ev(nk, record.OpUpdate, nil, nul2, 0)}, nil},
		{"update, partial before", upd(record.Row{"id": num(5)}, nul2),
			[]record.Event{ev(nk, record.OpUpdate, record.Row{"id": num(5)}, nul2, 0)}, nil},
		{"update giving a join value", upd(nul, keyed),
			[]record.Event{ev(nk, record.OpDelete, nul, nil, 0), ev("2", record.OpCreate, nil, keyed, 1)},
			[]record.Event{ev("2", record.OpCreate, nil, keyed, 1)}},
		{"update nulling the join value", upd(keyed, nul),
			[]record.Event{ev("2", record.OpDelete, keyed, nil, 0), ev(nk, record.OpCreate, nil, nul, 1)},
			[]record.Event{ev("2", record.OpDelete, keyed, nil, 0)}},
		{"update changing the primary key", upd(nul, nul6),
			[]record.Event{ev(nk, record.OpDelete, nul, nil, 0), ev(NullRowKey(record.Right, "6"), record.OpCreate, nil, nul6, 1)}, nil},
		{"delete", del(nul), []record.Event{ev(nk, record.OpDelete, nul, nil, 0)}, nil},
	}
	for _, tc := range cases {
		for _, typ := range []JoinType{Inner, LeftOuter, RightOuter, FullOuter} {
			t.Run(tc.name+"/"+typ.String(), func(t *testing.T) {
				tc.c.Pos = pos
				want := tc.not
				if typ.keepsRight() {
					want = tc.kept
				}
				got, err := nestedSpec(typ).Route(record.Right, tc.c)
				if want == nil {
					if !errors.Is(err, ErrUnmatched) || len(got) != 0 {
						t.Fatalf("got %+v, %v; want ErrUnmatched", got, err)
					}
					return
				}
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("got  %+v, %v\nwant %+v", got, err, want)
				}
			})
		}
	}
	// Leaving a kept null key retracts the row there: the before needs its
	// primary key.
	var re *RouteError
	if _, err := nestedSpec(RightOuter).Route(record.Right, upd(record.Row{"user_id": nil}, keyed)); !errors.As(err, &re) || re.Reason != reason.MissingPK {
		t.Errorf("null-key move with a before lacking the pk: %v", err)
	}
	// The left side is kept by left and full joins.
	for _, typ := range []JoinType{Inner, LeftOuter, RightOuter, FullOuter} {
		s := &CDCSpec{Type: typ, Left: SideSpec{Name: "users", PK: "id", JoinOn: "team"}, Right: domainsSide}
		u := record.Row{"id": num(1), "team": nil}
		got, err := s.Route(record.Left, ins(u))
		if typ.keepsLeft() != (err == nil) || typ.keepsLeft() && (len(got) != 1 || got[0].Key != NullRowKey(record.Left, "1")) {
			t.Errorf("%s: left null-key insert: %+v, %v", typ, got, err)
		}
	}
}
