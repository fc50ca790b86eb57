package node_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joinery/joinery/internal/testutil"
)

// TestNodeVersionedTable runs a left join whose right table is versioned on
// a node whose key state is in Redis and whose keys passivate between
// records: a domain change older (ts_ms) than the row's last, or than its
// delete, is dead-lettered as late (out-of-order) and changes nothing, also
// after the key was reloaded; a newer one joins.
func TestNodeVersionedTable(t *testing.T) {
	dir := t.TempDir()
	lines := []string{
		`{"op":"c","after":{"id":1,"firstname":"Egor","lastname":"M"},"source":{"table":"users"},"ts_ms":1}`,
		`{"op":"c","after":{"id":1,"user_id":1,"domain_name":"A"},"source":{"table":"domains"},"ts_ms":10}`,
		`{"op":"u","before":{"id":1,"user_id":1,"domain_name":"A"},"after":{"id":1,"user_id":1,"domain_name":"old"},"source":{"table":"domains"},"ts_ms":5}`,
		`{"op":"c","after":{"id":2,"user_id":1,"domain_name":"B"},"source":{"table":"domains"},"ts_ms":10}`,
		`{"op":"d","before":{"id":2,"user_id":1,"domain_name":"B"},"source":{"table":"domains"},"ts_ms":20}`,
		`{"op":"c","after":{"id":2,"user_id":1,"domain_name":"stale"},"source":{"table":"domains"},"ts_ms":15}`,
		`{"op":"u","before":{"id":1,"user_id":1,"domain_name":"A"},"after":{"id":1,"user_id":1,"domain_name":"A2"},"source":{"table":"domains"},"ts_ms":30}`,
	}
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := testutil.StartRedis(t)
	yml := strings.Replace(joinYAML, "join_on: user_id}", "join_on: user_id, versioned: true}", 1) + fmt.Sprintf(`sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}, rate: 100}]
sinks: [{type: table}]
dead_letter: dead.jsonl
state: {store: redis, redis: {addr: %q}, passivate_after: 2ms}
`, rs.Addr)
	if !strings.Contains(yml, "versioned: true") {
		t.Fatal("the right table is not versioned")
	}
	n := start(t, parse(t, dir, "name: versioned\n"+yml))
	run(t, n)
	diff(t, "versioned domains", tableMap(n.Table()), map[string]string{"1,1": "Egor|M|A2"})
	dead := readDeadFile(t, filepath.Join(dir, "dead.jsonl"))
	var got []string
	for _, r := range dead {
		got = append(got, fmt.Sprintf("%s@%d", r.Reason, r.Position.Offset))
	}
	if want := []string{"late: out-of-order@3", "late: out-of-order@6"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("dead letters %v, want %v (the changes at lines 3 and 6)", got, want)
	}
	if st := n.Stats(); st.Passivations.Load() == 0 {
		t.Error("no key passivated: the state was never reloaded from Redis")
	}
}
