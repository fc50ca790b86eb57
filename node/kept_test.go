package node_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/joinery/joinery/actors"
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
