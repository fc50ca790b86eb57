package joins

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/joinery/joinery/record"
)

func num(i int) json.Number { return json.Number(strconv.Itoa(i)) }

func user(id int, name string) record.Row { return record.Row{"id": num(id), "name": name} }

func domain(id, userID int, reason string) record.Row {
	return record.Row{"id": num(id), "user_id": num(userID), "reason": reason}
}

var (
	usersSide   = SideSpec{Name: "users", PK: "id", JoinOn: "id"}
	domainsSide = SideSpec{Name: "domains", PK: "id", JoinOn: "user_id"}
)

// projSpec projects u = users.name, d = domains.reason.
func projSpec(t JoinType) *CDCSpec {
	return &CDCSpec{Type: t, Left: usersSide, Right: domainsSide, Project: []Column{
		{Name: "u", Side: record.Left, Field: "name"},
		{Name: "d", Side: record.Right, Field: "reason"},
	}}
}

func nestedSpec(t JoinType) *CDCSpec { return &CDCSpec{Type: t, Left: usersSide, Right: domainsSide} }

func ins(after record.Row) record.Change { return record.Change{Op: record.OpCreate, After: after} }
func upd(before, after record.Row) record.Change {
	return record.Change{Op: record.OpUpdate, Before: before, After: after}
}
func del(before record.Row) record.Change { return record.Change{Op: record.OpDelete, Before: before} }

type step struct {
	side record.Side
	c    record.Change
}

func L(c record.Change) step { return step{record.Left, c} }
func R(c record.Change) step { return step{record.Right, c} }

// The seed: users 1 Egor Myasnik, 2 Pavel Hvastun, 3 Mitya Volk; domains
// 1 (user 1, Approval), 2 (1, Rejection), 3 (1, Stoppage), 4 (3, Cancellation).
var (
	seedUsers = []step{
		L(ins(user(1, "Egor Myasnik"))),
		L(ins(user(2, "Pavel Hvastun"))),
		L(ins(user(3, "Mitya Volk"))),
	}
	seedDomains = []step{
		R(ins(domain(1, 1, "Approval"))),
		R(ins(domain(2, 1, "Rejection"))),
		R(ins(domain(3, 1, "Stoppage"))),
		R(ins(domain(4, 3, "Cancellation"))),
	}
	seed = append(append([]step{}, seedUsers...), seedDomains...)
)

// harness routes changes, runs one CDC per key, checks every output's id and
// applies it to a strict Table.
type harness struct {
	t     *testing.T
	spec  *CDCSpec
	keys  map[record.Key]*CDC
	table *Table
	offs  [2]int64
	evs   []record.Event // events of the last apply
}

func newHarness(t *testing.T, spec *CDCSpec) *harness {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, spec: spec, keys: map[record.Key]*CDC{}, table: NewTable()}
}

func (h *harness) apply(steps ...step) []record.Output {
	h.t.Helper()
	var all []record.Output
	h.evs = nil
	for _, s := range steps {
		c := s.c
		c.Pos = record.Position{Source: h.spec.side(s.side).Name, Offset: h.offs[s.side]}
		h.offs[s.side]++
		evs, err := h.spec.Route(s.side, c)
		if err != nil {
			h.t.Fatalf("route: %v", err)
		}
		h.evs = append(h.evs, evs...)
		for _, e := range evs {
			st := h.keys[e.Key]
			if st == nil {
				st = NewCDC(h.spec)
				h.keys[e.Key] = st
			}
			outs := st.OnEvent(e, nil)
			for i, o := range outs {
				if want := record.OutputID(e, i); o.ID != want {
					h.t.Fatalf("output %d of %+v: id %q, want %q", i, e, o.ID, want)
				}
				if err := h.table.Apply(o); err != nil {
					h.t.Fatalf("inconsistent changelog: %v", err)
				}
			}
			if st.Empty() {
				delete(h.keys, e.Key)
			}
			all = append(all, outs...)
		}
	}
	return all
}

// fmtProj formats an output of projSpec: "+I [1,1] Egor Myasnik/Approval".
func fmtProj(t *testing.T, o record.Output) string {
	t.Helper()
	if len(o.Row) != 2 {
		t.Fatalf("row %v: want exactly columns u and d", o.Row)
	}
	col := func(name string) string {
		v, ok := o.Row[name]
		if !ok {
			t.Fatalf("row %v lacks column %q", o.Row, name)
		}
		if v == nil {
			return "null"
		}
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%s %s %s/%s", o.Kind, o.PK, col("u"), col("d"))
}

func fmtAll(t *testing.T, outs []record.Output) []string {
	t.Helper()
	s := make([]string, len(outs))
	for i, o := range outs {
		s[i] = fmtProj(t, o)
	}
	return s
}

func diffLines(got, want []string) string {
	return "got:\n\t" + strings.Join(got, "\n\t") + "\nwant:\n\t" + strings.Join(want, "\n\t")
}
