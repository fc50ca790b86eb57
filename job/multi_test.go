package job

import (
	"strings"
	"testing"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

const goodMulti = `
name: users-denorm
join:
  type: cdc-multi
  tables:
    - {name: users, pk: id, join_on: id}
    - {name: domains, pk: id, join_on: user_id, kind: left}
    - {name: settings, pk: id, join_on: user_id, kind: inner}
  project:
    - {name: user_id, from: users.id}
    - {name: domain, from: domains.domain_name}
    - {name: theme, expr: 'settings.theme + "/" + (domains?.domain_name ?? "none")'}
sources:
  - {name: cdc, type: file, path: x.jsonl, tables: {users: users, domains: domains, user_settings: settings}}
sinks:
  - {type: stdout}
`

func TestJobParseMulti(t *testing.T) {
	s, err := Parse([]byte(goodMulti))
	if err != nil {
		t.Fatal(err)
	}
	if s.Timed() || !s.Multi() {
		t.Fatalf("Timed %v Multi %v, want a changelog multi-way join", s.Timed(), s.Multi())
	}
	ms, err := s.MultiSpec()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms.Tables) != 3 || ms.Tables[1].Kind != joins.LeftOuter || ms.Tables[2].Kind != joins.Inner || ms.Tables[2].JoinOn != "user_id" {
		t.Fatalf("tables %+v", ms.Tables)
	}
	if c := ms.Project[1]; c.Table != 1 || c.Field != "domain_name" {
		t.Fatalf("project[1] %+v", c)
	}
	got := ms.Project[2].Compute([]record.Row{{"id": 1}, nil, {"theme": "dark"}})
	if got != "dark/none" {
		t.Fatalf("expr column = %v, want dark/none", got)
	}
	if side, ok := s.SideOf("settings"); !ok || side != 2 {
		t.Fatalf("SideOf(settings) = %v %v", side, ok)
	}
}

func TestJobMultiNamesField(t *testing.T) {
	cases := []struct{ name, from, to, want string }{
		{"kind", "kind: inner}", "kind: full}", "join.tables[2].kind: must be inner or left"},
		{"driving kind", "join_on: id}", "join_on: id, kind: left}", "join.tables[0].kind: the first table"},
		{"pk", "{name: domains, pk: id,", "{name: domains,", "join.tables[1].pk: must not be empty"},
		{"project table", "from: domains.domain_name", "from: nosuch.x", "join.project[1].from: must be <table>.<field>"},
		{"source table", "user_settings: settings", "user_settings: prefs", `sources[0].tables.user_settings: must name a table of join.tables`},
		{"mode", "type: cdc-multi", "type: cdc-multi\n  mode: left", "join.mode: not for a cdc-multi join"},
		{"cdc kinds", "type: cdc-multi", "type: cdc-multi\n  cdc: {kinds: kafka}", "join.cdc: only for cdc joins"},
		{"temporal", "type: cdc-multi", "type: cdc-multi\n  temporal: {semantics: kafka}", "join.temporal: only for temporal joins"},
		{"one table", "    - {name: domains, pk: id, join_on: user_id, kind: left}\n    - {name: settings, pk: id, join_on: user_id, kind: inner}\n", "",
			"join.tables: must list 2"},
		{"tables on cdc", "type: cdc-multi", "type: cdc\n  left: {name: users, pk: id, join_on: id}\n  right: {name: domains, pk: id, join_on: user_id}", "join.tables: only for a cdc-multi join"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			y := strings.Replace(goodMulti, tc.from, tc.to, 1)
			if y == goodMulti {
				t.Fatalf("replacement %q not found", tc.from)
			}
			_, err := Parse([]byte(y))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestJobChangelogSource(t *testing.T) {
	chained := strings.Replace(goodMulti, "{name: cdc, type: file, path: x.jsonl, tables: {users: users, domains: domains, user_settings: settings}}",
		"{name: cdc, type: file, path: x.jsonl, tables: {users: users, domains: domains}}\n  - {name: prev, type: file, path: y.jsonl, format: changelog, side: settings}", 1)
	if _, err := Parse([]byte(chained)); err != nil {
		t.Fatalf("a changelog source bound by side: %v", err)
	}
	byTable := strings.Replace(chained, "format: changelog, side: settings", "format: changelog, tables: {t: settings}", 1)
	if _, err := Parse([]byte(byTable)); err == nil || !strings.Contains(err.Error(), "sources[1].tables: a changelog source names no table") {
		t.Fatalf("error %v, want sources[1].tables refused", err)
	}
}
