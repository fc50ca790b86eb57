package replay

import (
	"strings"
	"testing"
)

const multiSpec = `
type: cdc-multi
tables:
  - {name: users, pk: id, join_on: id}
  - {name: domains, pk: id, join_on: user_id, kind: left}
  - {name: settings, pk: id, join_on: user_id}
project: [{name: u, from: users.name}, {name: d, from: domains.name}, {name: s, from: settings.theme}]
`

// TestReplayMulti runs a script through a cdc-multi spec: changelog lines
// keyed by every table's primary key, unchanged across a snapshot.
func TestReplayMulti(t *testing.T) {
	got, sum := replayLines(t, multiSpec, `{"side":"users","op":"c","after":{"id":1,"name":"Egor"}}
{"side":"settings","op":"c","after":{"id":5,"user_id":1,"theme":"dark"}}
{"snapshot":true}
{"side":"domains","op":"c","after":{"id":7,"user_id":1,"name":"Approval"}}
{"side":"settings","op":"u","before":{"id":5,"user_id":1,"theme":"dark"},"after":{"id":5,"user_id":2,"theme":"dark"}}
`)
	eqLines(t, got, []string{
		`{"id":"replay/0@2/1/0/0","op":"+I","pk":[1,null,5],"row":{"d":null,"s":"dark","u":"Egor"}}`,
		`{"id":"replay/0@4/1/0/0","op":"-D","pk":[1,null,5],"row":{"d":null,"s":"dark","u":"Egor"}}`,
		`{"id":"replay/0@4/1/0/1","op":"+I","pk":[1,7,5],"row":{"d":"Approval","s":"dark","u":"Egor"}}`,
		`{"id":"replay/0@5/1/0/0","op":"-D","pk":[1,7,5],"row":{"d":"Approval","s":"dark","u":"Egor"}}`,
	})
	if sum.Keys != 2 || sum.Snapshots != 1 {
		t.Errorf("summary %+v, want 2 keys and 1 snapshot", sum)
	}
}

func TestReplayMultiErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"kind", strings.Replace(multiSpec, "kind: left", "kind: full", 1), "tables[1].kind: must be inner or left"},
		{"driving kind", strings.Replace(multiSpec, "join_on: id}", "join_on: id, kind: left}", 1), "tables[0].kind: the first table"},
		{"reserved name", strings.Replace(multiSpec, "name: settings,", "name: ts,", 1), `tables[2].name: "ts" is a field of the output lines`},
		{"mode", multiSpec + "mode: left\n", "mode: not for a cdc-multi join"},
		{"left", multiSpec + "left: {name: users}\n", "left: left and right are not for a cdc-multi join"},
		{"project", strings.Replace(multiSpec, "settings.theme", "prefs.theme", 1), `project[2].from: "prefs.theme" is not table.field`},
		{"tables on cdc", "type: cdc\nleft: {name: a, pk: id, join_on: id}\nright: {name: b, pk: id, join_on: a}\ntables: [{name: x}]\n", "tables: only for a cdc-multi join"},
		{"job file", "join:\n  type: cdc-multi\n  tables: [{name: users, pk: id, join_on: id}]\n", "replay: job: join.tables: must list 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJob([]byte(tc.yaml))
			if tc.name == "project" { // the events mode ignores a projection; a script's spec does not
				_, err = ParseSpec([]byte(tc.yaml))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestReplayMultiEventsUnknownTable: an events line naming no table stops
// the replay with the line and the tables named.
func TestReplayMultiEventsUnknownTable(t *testing.T) {
	jb, err := ParseJob([]byte(multiSpec))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	_, err = RunEvents(jb, strings.NewReader(`{"side":"prefs","op":"c","after":{"id":1,"user_id":1}}`+"\n"), &out, Options{})
	if err == nil || !strings.Contains(err.Error(), `unknown table "prefs"`) || !strings.Contains(err.Error(), `"settings"`) {
		t.Fatalf("error %v", err)
	}
}
