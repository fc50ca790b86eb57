package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/persistence/redisstore"
	"github.com/joinery/joinery/record"
)

const joinYAML = `
join:
  type: cdc
  mode: left
  left:  {name: users,   pk: id, join_on: id}
  right: {name: domains, pk: id, join_on: user_id}
  project:
    - {name: user_id,     from: users.id}
    - {name: firstname,   from: users.firstname}
    - {name: lastname,    from: users.lastname}
    - {name: domain_id,   from: domains.id}
    - {name: domain_name, from: domains.domain_name}
`

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func parse(t *testing.T, dir, yml string) *job.Spec {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprintf("job-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(p, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := job.Load(p)
	if err != nil {
		t.Fatalf("job: %v\n%s", err, yml)
	}
	return s
}

func start(t *testing.T, spec *job.Spec) *node.Node {
	t.Helper()
	n, err := node.Start(context.Background(), spec, node.Options{Logger: testLogger(t), Stdout: io.Discard})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	return n
}

func run(t *testing.T, n *node.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.Run(ctx); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// tableMap renders a table as "user_id,domain_id" -> "firstname|lastname|domain_name".
func tableMap(rows []joins.TableRow) map[string]string {
	m := map[string]string{}
	for _, r := range rows {
		var pk []any
		_ = json.Unmarshal([]byte(r.PK), &pk)
		key := fmt.Sprintf("%v,%v", pk[0], pk[1])
		key = strings.ReplaceAll(key, "<nil>", "null")
		name := r.Row["domain_name"]
		if name == nil {
			name = ""
		}
		m[key] = fmt.Sprintf("%v|%v|%v", r.Row["firstname"], r.Row["lastname"], name)
	}
	return m
}

func diff(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	n := 0
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: row %s = %q, want %q", what, k, got[k], v)
			n++
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: extra row %s = %q", what, k, v)
			n++
		}
		if n > 20 {
			t.Fatal("too many differences")
		}
	}
}

func writeLines(t *testing.T, path string, lines [][]byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		f.Write(append(bytes.Clone(l), '\n'))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNodeExample runs the README's example job and checks the final table.
func TestNodeExample(t *testing.T) {
	spec, err := job.Load("../examples/users-domains/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec.Sources[0].Rate = 0 // no pacing in tests
	n := start(t, spec)
	run(t, n)
	got := tableMap(n.Table())
	want := map[string]string{
		"1,1": "Egor|Myasnikov|Approval",
		"1,8": "Egor|Myasnikov|Audit",
		"3,3": "Mitya|Volk|Stoppage",
		"3,4": "Mitya|Volk|Cancellation",
		"4,6": "Anna|Lis|Renewal",
	}
	diff(t, "example", got, want)
	bad := n.Stats().Bad()
	if n.Stats().BadTotal() != 3 {
		t.Errorf("rejected = %v, want 3 records (not JSON, no op, unknown op)", bad)
	}
	// A domain without a user_id matches nothing and a left join does not
	// keep it: counted, not rejected.
	if u := n.Stats().Unmatched.Load(); u != 1 {
		t.Errorf("unmatched = %d, want 1 (the domain without a user_id)", u)
	}
	for _, reason := range []string{"not-json", "missing-op", "unknown-op"} {
		if bad[reason] != 1 {
			t.Errorf("rejected[%s] = %d, want 1 (all: %v)", reason, bad[reason], bad)
		}
	}
}

// TestNodeOracle checks a single node against the brute-force join of a random history.
func TestNodeOracle(t *testing.T) {
	h := cdcgen.Generate(cdcgen.Config{Seed: 7, Users: 30, Domains: 90, Changes: 1500})
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "in.jsonl"), h.Lines)
	n := start(t, parse(t, dir, "name: oracle\n"+joinYAML+`
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: table}]
`))
	run(t, n)
	diff(t, "oracle", tableMap(n.Table()), h.LeftJoin())
}

// TestClusterThreeNodesEqualsOneNode runs the same input on one node
// (embedded state) and on three nodes over real memberlist and protoactor
// remoting (Redis state); the joined tables must be equal and the keys must
// be spread over the nodes.
func TestClusterThreeNodesEqualsOneNode(t *testing.T) {
	redis := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 11, Users: 40, Domains: 120, Changes: 2000})
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "in.jsonl"), h.Lines)

	single := start(t, parse(t, dir, "name: three\n"+joinYAML+`
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: table}]
`))
	run(t, single)
	want := tableMap(single.Table())
	diff(t, "single vs oracle", want, h.LeftJoin())

	state := fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", redis.Addr)
	n1 := start(t, parse(t, dir, "name: three\n"+joinYAML+state+`
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: table}]
cluster: {node_name: n1}
`))
	seeds := fmt.Sprintf("cluster: {seeds: [%q], node_name: %%s}\n", n1.GossipAddr())
	n2 := start(t, parse(t, dir, "name: three\n"+joinYAML+state+fmt.Sprintf(seeds, "n2")))
	n3 := start(t, parse(t, dir, "name: three\n"+joinYAML+state+fmt.Sprintf(seeds, "n3")))
	for _, n := range []*node.Node{n1, n2, n3} {
		testutil.WaitFor(t, 20*time.Second, seesAlive(n, 3))
	}
	run(t, n1)
	diff(t, "three nodes vs one", tableMap(n1.Table()), want)

	holders := map[string]int{}
	for uid := 1; uid <= 40; uid++ {
		ks, err := n1.Inspect(joinsKey(uid))
		if err != nil {
			t.Fatalf("inspect %d: %v", uid, err)
		}
		holders[ks.Node]++
	}
	if len(holders) != 3 {
		t.Errorf("keys held by %v, want all three nodes", holders)
	}
}

// seesAlive is a testutil.WaitFor condition: n lists want alive members.
func seesAlive(n *node.Node, want int) func() error {
	return func() error {
		m := 0
		for _, mi := range n.Members() {
			if mi.Status == cluster.StatusAlive {
				m++
			}
		}
		if m != want {
			return fmt.Errorf("%s sees %d alive members, want %d", n.Address(), m, want)
		}
		return nil
	}
}

func joinsKey(uid int) record.Key { return record.Key(fmt.Sprint(uid)) }

// TestNodeRestartResumes stops a node cleanly half-way through its input and
// starts a new one on the same Redis: it resumes after the committed offset
// with the state it had, and the combined changelog (the file sink appends)
// replays to the same table as an uninterrupted run.
func TestNodeRestartResumes(t *testing.T) {
	redis := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 23, Users: 30, Domains: 90, Changes: 1200})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	half := len(h.Lines) / 2
	writeLines(t, in, h.Lines[:half])
	yml := "name: restart\n" + joinYAML + fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", redis.Addr) + `
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: file, path: out.jsonl, format: changelog}]
`
	first := start(t, parse(t, dir, yml))
	run(t, first)
	if got := first.Stats().In.Load(); got != int64(half) {
		t.Fatalf("first run read %d records, want %d", got, half)
	}
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	writeLines(t, in, h.Lines[half:])
	second := start(t, parse(t, dir, yml))
	run(t, second)
	if got, want := second.Stats().In.Load(), int64(len(h.Lines)-half); got != want {
		t.Errorf("second run read %d records, want %d (it must resume after the committed offset)", got, want)
	}
	if err := second.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	diff(t, "restart", tableMap(replayFile(t, filepath.Join(dir, "out.jsonl")).Rows()), h.LeftJoin())
}

// replayFile applies a changelog file, every line of it whole, to a new
// table.
func replayFile(t *testing.T, path string) *joins.Table {
	t.Helper()
	table := joins.NewTable()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		o, err := changelog.DecodeChangelog(line)
		if err != nil {
			t.Fatalf("%s line %d: %v", path, i+1, err)
		}
		if err := table.Apply(o); err != nil {
			t.Fatalf("%s line %d: changelog inconsistent across the restart: %v", path, i+1, err)
		}
	}
	return table
}

// TestNodePassivation makes keys passivate while the input flows: idle keys
// stop after 20ms and reactivate from the store on their next event; the
// result must be unchanged and memory must hold only recently active keys.
func TestNodePassivation(t *testing.T) {
	h := cdcgen.Generate(cdcgen.Config{Seed: 31, Users: 30, Domains: 90, Changes: 1500})
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "in.jsonl"), h.Lines)
	n := start(t, parse(t, dir, "name: passivate\n"+joinYAML+`
state: {passivate_after: 20ms}
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}, rate: 4000}]
sinks: [{type: table}]
`))
	run(t, n)
	diff(t, "passivation", tableMap(n.Table()), h.LeftJoin())
	st := n.Stats()
	if st.Passivations.Load() == 0 || st.Activations.Load() <= 30 {
		t.Errorf("activations %d, passivations %d: keys did not passivate and come back", st.Activations.Load(), st.Passivations.Load())
	}
	testutil.WaitFor(t, 5*time.Second, func() error {
		if a := st.ActiveKeys(); a != 0 {
			return fmt.Errorf("%d keys still active after idling", a)
		}
		return nil
	})
	t.Logf("activations %d, passivations %d, retries %d", st.Activations.Load(), st.Passivations.Load(), st.Retries.Load())
}

// TestNodeFencedWrite makes every active key actor stale, as a second
// activation on another node would (it bumps each key's owner epoch in
// Redis), then feeds more input: the stale activations' writes are refused,
// they stop, the requests are retried on fresh activations that load the
// durable state, and the result is still exact.
func TestNodeFencedWrite(t *testing.T) {
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 41, Users: 20, Domains: 60, Changes: 1000})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	half := len(h.Lines) / 2
	writeLines(t, in, h.Lines[:half])
	n := start(t, parse(t, dir, "name: fenced\n"+joinYAML+fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", rs.Addr)+`
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]
sinks: [{type: table}]
`))
	run(t, n)
	other, err := redisstore.New(context.Background(), redisstore.Config{Options: redisopts.Options{Addr: rs.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for uid := 1; uid <= 20; uid++ {
		if _, err := other.Acquire(context.Background(), "fenced", joinsKey(uid)); err != nil {
			t.Fatal(err)
		}
	}
	writeLines(t, in, h.Lines[half:])
	run(t, n)
	diff(t, "fenced", tableMap(n.Table()), h.LeftJoin())
	if f := n.Stats().FencedWrites.Load(); f == 0 {
		t.Errorf("no write was fenced: stale activations wrote over newer owners")
	} else {
		t.Logf("%d fenced writes, %d retries", f, n.Stats().Retries.Load())
	}
}
