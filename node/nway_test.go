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
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/node"
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

// chainRows renders job 2's table of the chain as domain_id ->
// domain_name|firstname|company_id|company_name.
func chainRows(rows []joins.TableRow) map[string]string {
	m := map[string]string{}
	for _, r := range rows {
		m[fmt.Sprint(r.Row["domain_id"])] = fmt.Sprintf("%v|%v|%v|%v", r.Row["domain_name"], r.Row["firstname"], r.Row["company_id"], r.Row["company_name"])
	}
	return m
}

// bruteChain is domains ⋈ users ⟕ companies over final tables (rows keyed
// by id, values as fmt prints them).
func bruteChain(users, domains, companies map[string]map[string]any) map[string]string {
	out := map[string]string{}
	for did, d := range domains {
		u, ok := users[fmt.Sprint(d["user_id"])]
		if !ok {
			continue
		}
		var name any
		if c, ok := companies[fmt.Sprint(u["company_id"])]; ok {
			name = c["company_name"]
		}
		out[did] = fmt.Sprintf("%v|%v|%v|%v", d["domain_name"], u["firstname"], u["company_id"], name)
	}
	return out
}

// finalTables folds Debezium lines into their final rows, by table and id.
func finalTables(t *testing.T, lines [][]byte) map[string]map[string]map[string]any {
	t.Helper()
	tables := map[string]map[string]map[string]any{}
	for _, l := range lines {
		var env struct {
			Op            string
			Before, After map[string]any
			Source        struct{ Table string }
		}
		if err := json.Unmarshal(l, &env); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		rows := tables[env.Source.Table]
		if rows == nil {
			rows = map[string]map[string]any{}
			tables[env.Source.Table] = rows
		}
		if env.Before != nil {
			delete(rows, fmt.Sprint(env.Before["id"]))
		}
		if env.After != nil {
			rows[fmt.Sprint(env.After["id"])] = env.After
		}
	}
	return tables
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(b), []byte("\n"))
}

// runChain runs job 1, then job 2 over job 1's changelog, and returns job
// 2's node (its table sink holds the result).
func runChain(t *testing.T, job1, job2 *job.Spec) *node.Node {
	t.Helper()
	n1 := start(t, job1)
	run(t, n1)
	if bad := n1.Stats().BadTotal(); bad != 0 {
		t.Fatalf("job 1 rejected %d records: %v", bad, n1.Stats().Bad())
	}
	n2 := start(t, job2)
	run(t, n2)
	if bad := n2.Stats().BadTotal(); bad != 0 {
		t.Fatalf("job 2 rejected %d records: %v", bad, n2.Stats().Bad())
	}
	return n2
}

// TestNodeNwayChainExample runs examples/chain (two jobs wired by job 1's
// changelog file) and checks job 2's table against the brute-force join of
// the example's final tables.
func TestNodeNwayChainExample(t *testing.T) {
	dir := t.TempDir()
	enriched := filepath.Join(dir, "enriched.jsonl")
	job1, err := job.Load("../examples/chain/job1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	job2, err := job.Load("../examples/chain/job2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := job1.Sinks[0].Conn.Set("path", enriched); err != nil {
		t.Fatal(err)
	}
	if err := job2.Sources[0].Conn.Set("path", enriched); err != nil {
		t.Fatal(err)
	}
	n2 := runChain(t, job1, job2)
	ft := finalTables(t, append(readLines(t, "../examples/chain/users-domains.jsonl"), readLines(t, "../examples/chain/companies.jsonl")...))
	want := bruteChain(ft["users"], ft["domains"], ft["companies"])
	if len(want) < 3 {
		t.Fatalf("brute-force join has %d rows: the example is too thin", len(want))
	}
	diff(t, "chain example", chainRows(n2.Table()), want)
}

const chainJob1 = `
name: chain1
join:
  type: cdc
  mode: inner
  left:  {name: users,   pk: id, join_on: id}
  right: {name: domains, pk: id, join_on: user_id}
  project:
    - {name: domain_id,   from: domains.id}
    - {name: domain_name, from: domains.domain_name}
    - {name: firstname,   from: users.firstname}
    - {name: company_id,  from: users.company_id}
sources: [{name: cdc, type: file, path: ud.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: file, path: enriched.jsonl, format: changelog}]
`

const chainJob2 = `
name: chain2
join:
  type: cdc-multi
  tables:
    - {name: enriched,  pk: _pk, join_on: company_id}   # _pk: job 1's output pk
    - {name: companies, pk: id, join_on: id, kind: left}
  project:
    - {name: domain_id,    from: enriched.domain_id}
    - {name: domain_name,  from: enriched.domain_name}
    - {name: firstname,    from: enriched.firstname}
    - {name: company_id,   from: enriched.company_id}
    - {name: company_name, from: companies.company_name}
sources:
  - {name: enriched,  type: file, path: enriched.jsonl, format: changelog, side: enriched}
  - {name: companies, type: file, path: companies.jsonl, side: companies}
sinks: [{type: table}]
`

// TestNodeNwayChain runs the chain over a random history in which users
// change company and domains change user, and checks job 2's table against
// the brute-force join of the final tables.
func TestNodeNwayChain(t *testing.T) {
	h := cdcgen.Generate(cdcgen.Config{Seed: 47, Users: 20, Domains: 60, Companies: 6, Changes: 1500})
	var ud, comp [][]byte
	for _, l := range h.Lines {
		if bytes.Contains(l, []byte(`"table":"companies"`)) {
			comp = append(comp, l)
		} else {
			ud = append(ud, l)
		}
	}
	if len(comp) < 50 {
		t.Fatalf("only %d companies changes", len(comp))
	}
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "ud.jsonl"), ud)
	writeLines(t, filepath.Join(dir, "companies.jsonl"), comp)
	n2 := runChain(t, parse(t, dir, chainJob1), parse(t, dir, chainJob2))
	ft := finalTables(t, h.Lines)
	want := bruteChain(ft["users"], ft["domains"], ft["companies"])
	if len(want) < 20 {
		t.Fatalf("brute-force join has %d rows: the history is too thin", len(want))
	}
	diff(t, "chain", chainRows(n2.Table()), want)
}
