package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
)

// TestNodeSourceFilter runs a random users ⋈ domains history through a
// source filter on a column that updates change (domain_name). Filtering a
// changelog per row image keeps it a changelog, so the result must equal the
// join of the final tables with the filter applied to the final rows: a
// domain renamed out of the filter leaves the result, one renamed into it
// enters.
func TestNodeSourceFilter(t *testing.T) {
	h := cdcgen.Generate(cdcgen.Config{Seed: 9, Users: 30, Domains: 90, Changes: 1500})
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "in.jsonl"), h.Lines)
	n := start(t, parse(t, dir, "name: filtered\n"+joinYAML+`
sources:
  - name: cdc
    type: file
    path: in.jsonl
    tables: {users: left, domains: right}
    filter: '_table != "domains" || int(split(domain_name, "-")[1]) < 50'
sinks: [{type: table}]
`))
	run(t, n)
	suffix := func(name any) int {
		var id, n int
		fmt.Sscanf(fmt.Sprint(name), "d%d-%d", &id, &n)
		return n
	}
	kept, dropped := 0, 0
	for id, d := range h.Domains {
		if suffix(d["domain_name"]) >= 50 {
			delete(h.Domains, id)
			dropped++
		} else {
			kept++
		}
	}
	if kept == 0 || dropped == 0 {
		t.Fatalf("the filter keeps %d domains and drops %d: the test needs both kinds", kept, dropped)
	}
	diff(t, "filtered", tableMap(n.Table()), h.LeftJoin())
	if n.Stats().Filtered.Load() == 0 {
		t.Error("no change counted as filtered")
	}
	for _, row := range n.Table() {
		if name := row.Row["domain_name"]; name != nil && suffix(name) >= 50 {
			t.Errorf("row %s passed the filter: %v", row.PK, row.Row)
		}
	}
}

// TestNodeTwoSourcesRedisHash reads users and domains from two files (two
// sources, so one key's outputs come back to two collectors and reach the
// sinks in no fixed order) into a Redis hash view: ordered by the outputs'
// Seq, the view must equal the true join, row for row.
func TestNodeTwoSourcesRedisHash(t *testing.T) {
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 21, Users: 20, Domains: 60, Changes: 3000})
	dir := t.TempDir()
	var users, domains [][]byte
	for _, l := range h.Lines {
		if bytes.Contains(l, []byte(`"table":"users"`)) {
			users = append(users, l)
		} else {
			domains = append(domains, l)
		}
	}
	writeLines(t, filepath.Join(dir, "users.jsonl"), users)
	writeLines(t, filepath.Join(dir, "domains.jsonl"), domains)
	n := start(t, parse(t, dir, "name: two\n"+joinYAML+fmt.Sprintf(`
sources:
  - {name: users, type: file, path: users.jsonl, tables: {users: left}}
  - {name: domains, type: file, path: domains.jsonl, tables: {domains: right}}
sinks:
  - {type: redis-hash, redis: {addr: %q}, key: view}
  - {type: table}
`, rs.Addr)))
	run(t, n)
	want := h.LeftJoin()
	diff(t, "table", tableMap(n.Table()), want)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	diff(t, "redis hash view", hashView(t, rc, "view"), want)
}

// hashView renders the Redis hash view at key as tableMap does a table.
func hashView(t *testing.T, rc *redis.Client, key string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for pk, v := range rc.HGetAll(context.Background(), key).Val() {
		var row map[string]any
		if err := json.Unmarshal([]byte(v), &row); err != nil {
			t.Fatal(err)
		}
		var k []any
		_ = json.Unmarshal([]byte(pk), &k)
		name := row["domain_name"]
		if name == nil {
			name = ""
		}
		key := strings.ReplaceAll(fmt.Sprintf("%v,%v", k[0], k[1]), "<nil>", "null")
		got[key] = fmt.Sprintf("%v|%v|%v", row["firstname"], row["lastname"], name)
	}
	return got
}
