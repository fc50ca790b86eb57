package job

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// TestJobProjectExpr runs computed columns (expr:) through a real changelog
// join: both sides by name, a padded side as nil, a failing expression as a
// counted null, and compile errors naming the column.
func TestJobProjectExpr(t *testing.T) {
	yml := strings.Replace(good, "    - {name: user_id, from: users.id}", `    - {name: user_id, from: users.id}
    - {name: full_name, expr: 'users.firstname + " " + users.lastname'}
    - {name: domain, expr: 'domains?.domain_name ?? "(none)"'}
    - {name: bad, expr: 'users.firstname + 1'}`, 1)
	s, err := Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := s.CDCSpec()
	if err != nil {
		t.Fatal(err)
	}
	cdc := joins.NewCDC(cs)
	evs, err := cs.Route(record.Left, record.Change{Op: record.OpCreate, After: record.Row{"id": json.Number("1"), "firstname": "Egor", "lastname": "Myasnikov"}})
	if err != nil {
		t.Fatal(err)
	}
	before := ExprErrors.Load()
	outs := cdc.OnEvent(evs[0], nil)
	if len(outs) != 1 {
		t.Fatalf("outputs %+v", outs)
	}
	b, _ := json.Marshal(outs[0].Row)
	if want := `{"bad":null,"domain":"(none)","full_name":"Egor Myasnikov","user_id":1}`; string(b) != want {
		t.Errorf("row %s, want %s", b, want)
	}
	if ExprErrors.Load() != before+1 {
		t.Errorf("expression errors %d → %d, want one more", before, ExprErrors.Load())
	}

	for _, c := range []struct{ col, want string }{
		{`{name: x, expr: 'users.'}`, "join.project[1].expr"},
		{`{name: x, from: users.id, expr: 'users.id'}`, "set only one of from and expr"},
		{`{name: x, from: nope.id}`, "join.project[1].from"},
	} {
		_, err := Parse([]byte(strings.Replace(good, "    - {name: user_id, from: users.id}", "    - {name: user_id, from: users.id}\n    - "+c.col, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.col, err, c.want)
		}
	}
}
