package node_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/actors"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
)

// TestNodeKeepsProjectedColumns: a key's state holds only the columns the
// job reads — primary-key and join columns and the projection's — so a
// users column no part of the job reads is not in the stored row, while a
// job without a projection (whole rows out) keeps every column; the
// outputs are the same either way. The key, idle once its inputs are
// committed, prunes its outbox without a request.
func TestNodeKeepsProjectedColumns(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, [][]byte{
		[]byte(`{"op":"c","after":{"id":1,"firstname":"Ann","lastname":"Lee","ssn":"123-45","notes":"long unread text"},"source":{"table":"users"}}`),
		[]byte(`{"op":"c","after":{"id":10,"user_id":1,"domain_name":"a.example","registrar":"x"},"source":{"table":"domains"}}`),
	})
	for _, c := range []struct {
		name, project, filter string
		left, right           []string
	}{
		{"projected", `
  project:
    - {name: user_id,     from: users.id}
    - {name: firstname,   from: users.firstname}
    - {name: domain_name, from: domains.domain_name}`,
			"", []string{"firstname", "id"}, []string{"domain_name", "id", "user_id"}},
		// A source filter reads a column the state does not keep: it sees
		// it (the decoder keeps every column), the state still drops it.
		{"filtered", `
  project:
    - {name: user_id,     from: users.id}
    - {name: firstname,   from: users.firstname}
    - {name: domain_name, from: domains.domain_name}`, `
    filter: '_table != "domains" || registrar == "x"'`,
			[]string{"firstname", "id"}, []string{"domain_name", "id", "user_id"}},
		{"whole rows", "", "",
			[]string{"firstname", "id", "lastname", "notes", "ssn"}, []string{"domain_name", "id", "registrar", "user_id"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := parse(t, dir, fmt.Sprintf(`
name: kept
join:
  type: cdc
  mode: left
  left:  {name: users,   pk: id, join_on: id}
  right: {name: domains, pk: id, join_on: user_id}%s
sources:
  - name: cdc
    type: file
    path: %q
    tables: {users: left, domains: right}%s
sinks:
  - {type: table}
`, c.project, in, c.filter))
			n := start(t, spec)
			run(t, n)
			if len(n.Table()) != 1 {
				t.Fatalf("table %v, want the one joined row", n.Table())
			}
			ks, err := n.Inspect("1")
			if err != nil {
				t.Fatal(err)
			}
			cols := func(b []byte) []string {
				r, err := actors.DecodeRow(b)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for k := range r {
					out = append(out, k)
				}
				slices.Sort(out)
				return out
			}
			if got := cols(ks.Left); !slices.Equal(got, c.left) {
				t.Errorf("users row holds %v, want %v", got, c.left)
			}
			if len(ks.Rights) != 1 {
				t.Fatalf("%d domains rows, want 1", len(ks.Rights))
			}
			if got := cols(ks.Rights[0]); !slices.Equal(got, c.right) {
				t.Errorf("domains row holds %v, want %v", got, c.right)
			}
			// The joined row's input is committed: the idle key prunes
			// its outbox entry by itself (actors.Pruner).
			deadline := time.Now().Add(20 * time.Second)
			for ks.Outbox != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("outbox %d 20 s after the input was committed, want 0", ks.Outbox)
				}
				time.Sleep(50 * time.Millisecond)
				if ks, err = n.Inspect("1"); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestNodeEventTimeKeepsProjectedColumns: an event-time join's key state
// holds only its key, time and projected columns of each side, so a
// column no part of the job reads is not in the stored rows, while a job
// without a projection keeps them; the outputs are the join's either way.
// The left input stays open (stdin) so the watermark, and with it the
// rows, stay until the key is inspected.
func TestNodeEventTimeKeepsProjectedColumns(t *testing.T) {
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "r.jsonl"), [][]byte{
		[]byte(`{"k":"a","ts":1500,"w":"r1","blob":"right-unread"}`),
	})
	left := []byte(`{"k":"a","ts":1000,"v":"l1","secret":"left-unread"}` + "\n" +
		`{"k":"a","ts":2000,"v":"l2","secret":"left-unread"}` + "\n")
	for _, c := range []struct {
		name, project string
		kept          bool
	}{
		{"projected", "\n  project: [{name: lv, from: l.v}, {name: rw, from: r.w}]", false},
		{"whole rows", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			t.Cleanup(func() { pw.Close() })
			spec := parse(t, dir, fmt.Sprintf(`name: kept-timed
join:
  type: unbounded
  ttl: 1h
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}%s
sources:
  - {name: ls, type: file, path: "-", side: left}
  - {name: rs, type: file, path: r.jsonl, side: right}
sinks: [{type: table}]
`, c.project))
			n, err := node.Start(context.Background(), spec, node.Options{Logger: testLogger(t), Stdout: io.Discard, Stdin: pr})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Close(context.Background()) })
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- n.Run(ctx) }()
			go func() { _, _ = pw.Write(left) }()
			testutil.WaitFor(t, 30*time.Second, func() error {
				if got := len(n.Table()); got != 2 {
					return fmt.Errorf("%d outputs of 2", got)
				}
				return nil
			})
			for _, row := range n.Table() {
				if !c.kept && (row.Row["rw"] != "r1" || (row.Row["lv"] != "l1" && row.Row["lv"] != "l2")) {
					t.Fatalf("output %v", row.Row)
				}
			}
			ks, err := n.Inspect("a")
			if err != nil {
				t.Fatal(err)
			}
			state := string(ks.Timed)
			if !strings.Contains(state, `"l2"`) || !strings.Contains(state, `"r1"`) {
				t.Fatalf("the key's state holds no rows: %s", state)
			}
			for _, col := range []string{"secret", "blob"} {
				if strings.Contains(state, col) != c.kept {
					t.Errorf("column %q in the key's state: %v, want %v\n%s", col, !c.kept, c.kept, state)
				}
			}
			pw.Close()
			if err := <-done; err != nil {
				t.Fatalf("run: %v", err)
			}
		})
	}
}
