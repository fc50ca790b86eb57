package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/joins"
)

// nwayYAML is users ⋈ domains ⋈ user_settings on the user id; %s is the
// kind of user_settings.
const nwayYAML = `
join:
  type: cdc-multi
  tables:
    - {name: users, pk: id, join_on: id}
    - {name: domains, pk: id, join_on: user_id, kind: left}
    - {name: settings, pk: id, join_on: user_id, kind: %s}
  project:
    - {name: user_id, from: users.id}
    - {name: firstname, from: users.firstname}
    - {name: domain_name, from: domains.domain_name}
    - {name: theme, from: settings.theme}
    - {name: label, expr: 'users.lastname + ":" + (settings?.theme ?? "-")'}
`

// nwayRows renders a multi-way result table as pk -> its columns.
func nwayRows(rows []joins.TableRow) map[string]string {
	m := map[string]string{}
	for _, r := range rows {
		m[r.PK] = fmt.Sprintf("%v|%v|%v|%v", r.Row["firstname"], r.Row["domain_name"], r.Row["theme"], r.Row["label"])
	}
	return m
}

// bruteNway joins the history's final tables from scratch.
func bruteNway(h *cdcgen.History, settingsKind string) map[string]string {
	out := map[string]string{}
	pad := []map[string]any{nil}
	byUser := func(rows map[int]map[string]any, uid any) []map[string]any {
		var ids []int
		for id, r := range rows {
			if r["user_id"] == uid {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		m := make([]map[string]any, len(ids))
		for i, id := range ids {
			m[i] = rows[id]
		}
		return m
	}
	str := func(r map[string]any, col string) string {
		if r == nil {
			return "<nil>"
		}
		return fmt.Sprint(r[col])
	}
	id := func(r map[string]any) string {
		if r == nil {
			return "null"
		}
		return fmt.Sprint(r["id"])
	}
	for uid, u := range h.Users {
		ds := byUser(h.Domains, uid)
		if len(ds) == 0 {
			ds = pad
		}
		ss := byUser(h.Settings, uid)
		if len(ss) == 0 && settingsKind == "left" {
			ss = pad
		}
		for _, d := range ds {
			for _, s := range ss {
				theme := "-"
				if s != nil {
					theme = str(s, "theme")
				}
				pk := fmt.Sprintf("[%d,%s,%s]", uid, id(d), id(s))
				out[pk] = fmt.Sprintf("%v|%s|%s|%v:%s", u["firstname"], str(d, "domain_name"), str(s, "theme"), u["lastname"], theme)
			}
		}
	}
	return out
}

// TestNodeNway runs users ⋈ domains ⋈ user_settings through a node's key
// actors (one per user id) for inner and left settings, the inner run with
// keys passivating and reactivating from the store as the input flows,
// and checks the final table against the brute-force join.
func TestNodeNway(t *testing.T) {
	h := cdcgen.Generate(cdcgen.Config{Seed: 41, Users: 25, Domains: 60, Settings: 40, Changes: 1500})
	for _, tc := range []struct{ kind, extra string }{
		{"left", ""},
		{"inner", "state: {passivate_after: 20ms}\n"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			dir := t.TempDir()
			writeLines(t, filepath.Join(dir, "in.jsonl"), h.Lines)
			n := start(t, parse(t, dir, "name: nway\n"+fmt.Sprintf(nwayYAML, tc.kind)+tc.extra+`
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: users, domains: domains, user_settings: settings}}]
sinks: [{type: table}]
`))
			run(t, n)
			want := bruteNway(h, tc.kind)
			if len(want) < 20 {
				t.Fatalf("only %d rows in the brute-force join: the history is too thin to test", len(want))
			}
			diff(t, "nway "+tc.kind, nwayRows(n.Table()), want)
			if bad := n.Stats().BadTotal(); bad != 0 {
				t.Errorf("%d records rejected: %v", bad, n.Stats().Bad())
			}
			// A key actor holds every table's rows of its user.
			for uid, u := range h.Users {
				ks, err := n.Inspect(joinsKey(uid))
				if err != nil {
					t.Fatal(err)
				}
				var left map[string]any
				if err := json.Unmarshal(ks.Left, &left); err != nil {
					t.Fatalf("user %d: left %q: %v", uid, ks.Left, err)
				}
				if fmt.Sprint(left["firstname"]) != u["firstname"] {
					t.Errorf("user %d: key holds %v, want %v", uid, left, u)
				}
				break
			}
		})
	}
}

// TestNodeNwayRestart stops a node half-way and resumes on the same Redis
// state: the appended changelog applies strictly across the restart and
// folds to the brute-force join.
func TestNodeNwayRestart(t *testing.T) {
	redis := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 43, Users: 20, Domains: 50, Settings: 30, Changes: 1200})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	half := len(h.Lines) / 2
	writeLines(t, in, h.Lines[:half])
	yml := "name: nway-restart\n" + fmt.Sprintf(nwayYAML, "left") + fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", redis.Addr) + `
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: users, domains: domains, user_settings: settings}}]
sinks: [{type: file, path: out.jsonl, format: changelog}]
`
	first := start(t, parse(t, dir, yml))
	run(t, first)
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeLines(t, in, h.Lines[half:])
	second := start(t, parse(t, dir, yml))
	run(t, second)
	if got, want := second.Stats().In.Load(), int64(len(h.Lines)-half); got != want {
		t.Errorf("second run read %d records, want %d", got, want)
	}
	if err := second.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	table := joins.NewTable()
	b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		o, err := changelog.DecodeChangelog(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if err := table.Apply(o); err != nil {
			t.Fatalf("line %d: changelog inconsistent across the restart: %v", i+1, err)
		}
	}
	diff(t, "nway restart", nwayRows(table.Rows()), bruteNway(h, "left"))
}
