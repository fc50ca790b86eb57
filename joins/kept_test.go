package joins

import (
	"slices"
	"testing"

	"github.com/joinery/joinery/record"
)

func TestKept(t *testing.T) {
	ud := func(project ...Column) *CDCSpec {
		return &CDCSpec{Left: SideSpec{Name: "users", PK: "id", JoinOn: "id"},
			Right: SideSpec{Name: "domains", PK: "id", JoinOn: "user_id"}, Project: project}
	}
	col := func(side record.Side, f string) Column { return Column{Name: f, Side: side, Field: f} }
	for _, c := range []struct {
		name        string
		spec        *CDCSpec
		left, right []string // nil: whole rows
	}{
		{"no projection", ud(), nil, nil},
		{"seed", ud(col(record.Left, "firstname"), col(record.Left, "lastname"), col(record.Right, "domain_name"), col(record.Left, "id")),
			[]string{"firstname", "id", "lastname"}, []string{"domain_name", "id", "user_id"}},
		{"one side's columns", ud(col(record.Right, "domain_name")), []string{"id"}, []string{"domain_name", "id", "user_id"}},
		{"computed", ud(col(record.Left, "firstname"), Column{Name: "x", Compute: func(l, r record.Row) any { return nil }}), nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for side, want := range map[record.Side][]string{record.Left: c.left, record.Right: c.right} {
				got, all := c.spec.Kept(side)
				if all != (want == nil) || !slices.Equal(got, want) {
					t.Errorf("%v: Kept = %v, %v; want %v", side, got, all, want)
				}
			}
		})
	}
	m := &MultiSpec{Tables: []MultiTable{{Name: "users", PK: "id", JoinOn: "id"}, {Name: "settings", PK: "sid", JoinOn: "user_id"}},
		Project: []MultiColumn{{Name: "theme", Table: 1, Field: "theme"}}}
	if got, all := m.Kept(1); all || !slices.Equal(got, []string{"sid", "theme", "user_id"}) {
		t.Errorf("multi table 1: %v, %v", got, all)
	}
	if got, all := m.Kept(0); all || !slices.Equal(got, []string{"id"}) {
		t.Errorf("multi table 0: %v, %v", got, all)
	}
}
