package node_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joinery/joinery/internal/testutil"
)

// TestNodeRightJoinNullKeys runs a right join over changes with null join
// values on a node whose key state is in Redis and whose keys passivate
// between records: a domain without a user is kept padded at its own key
// (a key holding a NUL byte, stored and reloaded), leaves it when it gets a
// user and comes back to one when it loses it; nothing is rejected.
func TestNodeRightJoinNullKeys(t *testing.T) {
	dir := t.TempDir()
	lines := []string{
		`{"op":"c","after":{"id":1,"firstname":"Egor","lastname":"M"},"source":{"table":"users"}}`,
		`{"op":"c","after":{"id":1,"user_id":1,"domain_name":"A"},"source":{"table":"domains"}}`,
		`{"op":"c","after":{"id":2,"user_id":null,"domain_name":"B"},"source":{"table":"domains"}}`,
		`{"op":"c","after":{"id":3,"domain_name":"C"},"source":{"table":"domains"}}`,
		`{"op":"u","before":{"id":2,"user_id":null,"domain_name":"B"},"after":{"id":2,"user_id":1,"domain_name":"B"},"source":{"table":"domains"}}`,
		`{"op":"u","before":{"id":1,"user_id":1,"domain_name":"A"},"after":{"id":1,"user_id":null,"domain_name":"A"},"source":{"table":"domains"}}`,
		`{"op":"d","before":{"id":3,"user_id":null,"domain_name":"C"},"source":{"table":"domains"}}`,
		`{"op":"c","after":{"id":2,"firstname":"Pavel","lastname":"H"},"source":{"table":"users"}}`,
	}
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := testutil.StartRedis(t)
	yml := strings.Replace(joinYAML, "mode: left", "mode: right", 1) + fmt.Sprintf(`sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}, rate: 100}]
sinks: [{type: table}]
state: {store: redis, redis: {addr: %q}, passivate_after: 2ms}
`, rs.Addr)
	if !strings.Contains(yml, "mode: right") {
		t.Fatal("the join is not a right join")
	}
	n := start(t, parse(t, dir, "name: nullkeys\n"+yml))
	run(t, n)
	diff(t, "right join with null keys", tableMap(n.Table()), map[string]string{
		"1,2":    "Egor|M|B",
		"null,1": "<nil>|<nil>|A",
	})
	st := n.Stats()
	if st.BadTotal() != 0 || st.Unmatched.Load() != 0 {
		t.Errorf("rejected %v, unmatched %d; want none", st.Bad(), st.Unmatched.Load())
	}
	if st.Passivations.Load() == 0 {
		t.Error("no key passivated: the state was never reloaded from Redis")
	}
}
