package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/replay"
	"github.com/joinery/joinery/sources/redisstream"
)

// TestClusterCoPartitionedJoinShapes runs two changelog-join shapes on
// three nodes over real memberlist and protoactor remoting, each on 6
// shard streams partitioned by the join key, and checks that the Redis
// hash view equals what replay materializes from the same changes:
//
//   - right: users RIGHT JOIN domains (every domain, with its user if
//     there is one);
//   - many-to-many: domains FULL JOIN user_settings ON d.user_id =
//     s.user_id, a join column unique on neither side, so both sides keep
//     many rows per key;
//   - foreign-key: domains left-joined to users by their foreign key in
//     Kafka Streams' semantics (cdc: {kinds: kafka, foreign_key: true}),
//     one result per domain, keyed by its id.
//
// Each row's join value is pinned to one per primary key (users, whose
// join column is their key, come and go): a sink orders the outputs of one
// result primary key by their Seq, which orders the outputs of one join
// key, and a right row padded (or a pair of two rows) moving to another
// join value would have its result change at two keys, whose order
// between two shards read by two nodes is not the input's.
func TestClusterCoPartitionedJoinShapes(t *testing.T) {
	h := cdcgen.Generate(cdcgen.Config{Seed: 47, Users: 16, Domains: 50, Settings: 30, Changes: 1200})
	for _, tc := range []struct {
		name, join  string
		left, right string // the tables, bound to the left and right sides
		fields      [2][]string
	}{
		{"right", `
join:
  type: cdc
  mode: right
  left:  {name: users,   pk: id, join_on: id}
  right: {name: domains, pk: id, join_on: user_id}
  project:
    - {name: l_id,   from: users.id}
    - {name: l_name, from: users.firstname}
    - {name: r_id,   from: domains.id}
    - {name: r_name, from: domains.domain_name}
`, "users", "domains", [2][]string{{"firstname"}, {"domain_name"}}},
		{"many-to-many", `
join:
  type: cdc
  mode: full
  left:  {name: domains,       pk: id, join_on: user_id}
  right: {name: user_settings, pk: id, join_on: user_id}
  project:
    - {name: l_id,   from: domains.id}
    - {name: l_name, from: domains.domain_name}
    - {name: r_id,   from: user_settings.id}
    - {name: r_name, from: user_settings.theme}
`, "domains", "user_settings", [2][]string{{"domain_name"}, {"theme"}}},
		{"foreign-key", `
join:
  type: cdc
  mode: left
  cdc: {kinds: kafka, foreign_key: true}
  left:  {name: domains, pk: id, join_on: user_id}
  right: {name: users,   pk: id, join_on: id}
  project:
    - {name: l_id,   from: domains.id}
    - {name: l_name, from: domains.domain_name}
    - {name: r_id,   from: users.id}
    - {name: r_name, from: users.firstname}
`, "domains", "users", [2][]string{{"domain_name"}, {"firstname"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const shards = 6
			var lines [][]byte
			for _, l := range h.Lines {
				var env struct {
					Source struct {
						Table string `json:"table"`
					} `json:"source"`
				}
				if err := json.Unmarshal(l, &env); err != nil {
					t.Fatal(err)
				}
				if env.Source.Table == tc.left || env.Source.Table == tc.right {
					lines = append(lines, pinUserID(t, l, 16))
				}
			}
			want := replayView(t, "name: shapes\n"+tc.join, lines, tc.left, tc.right, tc.fields)
			if len(want) < 20 {
				t.Fatalf("replay materializes %d rows: too few to compare", len(want))
			}
			if tc.name == "many-to-many" {
				// Some row of each side is in pairs with two of the other.
				perLeft, perRight := map[string]int{}, map[string]int{}
				for k := range want {
					l, r, _ := strings.Cut(k, ",")
					if l != "<nil>" && r != "<nil>" {
						perLeft[l]++
						perRight[r]++
					}
				}
				if slices.Max(slices.Collect(maps.Values(perLeft))) < 2 || slices.Max(slices.Collect(maps.Values(perRight))) < 2 {
					t.Fatal("no row pairs with two of the other side: not many-to-many")
				}
			}

			rs := testutil.StartRedis(t)
			rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
			defer rc.Close()
			yml := "name: shapes\n" + tc.join + fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc, shards: %[2]d, partitioned_by: join_key, group: joinery, lease: 1s, tables: {%[3]s: left, %[4]s: right}}]
sinks: [{type: redis-hash, redis: {addr: %[1]q}, key: view}]
admin: {addr: "127.0.0.1:0"}
`, rs.Addr, shards, tc.left, tc.right)
			nodes := startThree(t, t.TempDir(), yml)
			keyed, err := cdcgen.ByJoinKey(lines, map[string]string{"users": "id", "domains": "user_id", "user_settings": "user_id"})
			if err != nil {
				t.Fatal(err)
			}
			p := rc.Pipeline()
			for _, k := range keyed {
				p.XAdd(context.Background(), &redis.XAddArgs{Stream: redisstream.ShardStream("cdc", redisstream.ShardOf(k.Key, shards)),
					Values: map[string]any{streamshard.ValueField: string(k.Line)}})
			}
			if _, err := p.Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
			runAll(t, nodes)
			testutil.WaitFor(t, 90*time.Second, allAcked(rc, shards))
			testutil.WaitFor(t, 30*time.Second, func() error {
				if got := projectedView(t, rc); !reflect.DeepEqual(got, want) {
					return fmt.Errorf("view has %d rows, replay %d", len(got), len(want))
				}
				return nil
			})
			diff(t, tc.name+": fleet view vs replay", projectedView(t, rc), want)
			if tc.name == "foreign-key" {
				// One result per domain, keyed by the domain's id alone.
				for pk, v := range rc.HGetAll(context.Background(), "view").Val() {
					var row map[string]any
					if err := json.Unmarshal([]byte(v), &row); err != nil {
						t.Fatal(err)
					}
					if pk != fmt.Sprint(row["l_id"]) {
						t.Errorf("foreign-key result %s keyed %s, want its domain id", v, pk)
					}
				}
			}
		})
	}
}

// projectedView reads the redis-hash view of a join projected to l_id,
// l_name, r_id, r_name as "l_id,r_id" -> "l_name|r_name" (null ids and
// names for a padded side).
func projectedView(t *testing.T, rc *redis.Client) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, v := range rc.HGetAll(context.Background(), "view").Val() {
		var row map[string]any
		if err := json.Unmarshal([]byte(v), &row); err != nil {
			t.Fatal(err)
		}
		got[fmt.Sprintf("%v,%v", row["l_id"], row["r_id"])] = fmt.Sprintf("%v|%v", row["l_name"], row["r_name"])
	}
	return got
}

// replayView runs the Debezium lines through replay's events mode with the
// job (its join), materializes the changelog and returns it in
// projectedView's form, each side's name being its row's fields[side][0].
func replayView(t *testing.T, yml string, lines [][]byte, left, right string, fields [2][]string) map[string]string {
	t.Helper()
	jb, err := replay.ParseJob([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	for _, l := range lines {
		var env struct {
			Op     string          `json:"op"`
			Before json.RawMessage `json:"before"`
			After  json.RawMessage `json:"after"`
			Source struct {
				Table string `json:"table"`
			} `json:"source"`
		}
		if err := json.Unmarshal(l, &env); err != nil {
			t.Fatal(err)
		}
		ev := map[string]any{"side": env.Source.Table, "op": env.Op}
		if len(env.Before) > 0 && string(env.Before) != "null" {
			ev["before"] = env.Before
		}
		if len(env.After) > 0 && string(env.After) != "null" {
			ev["after"] = env.After
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(b, '\n'))
	}
	var out bytes.Buffer
	if _, err := replay.RunEvents(jb, &in, &out, replay.Options{Ops: replay.OpsAlways}); err != nil {
		t.Fatal(err)
	}
	view := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var o struct {
			Left, Right map[string]any
			Op          string
		}
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatal(err)
		}
		get := func(row map[string]any, col string) any {
			if row == nil {
				return nil
			}
			return row[col]
		}
		k := fmt.Sprintf("%v,%v", get(o.Left, "id"), get(o.Right, "id"))
		switch o.Op {
		case "+I", "+U":
			view[k] = fmt.Sprintf("%v|%v", get(o.Left, fields[0][0]), get(o.Right, fields[1][0]))
		case "-U", "-D":
			if _, ok := view[k]; !ok {
				t.Fatalf("replay retracts %s, which it never emitted", k)
			}
			delete(view, k)
		}
	}
	return view
}

// pinUserID sets the user_id of a Debezium line's rows (when they have one)
// to one per row: 1 + id % users.
func pinUserID(t *testing.T, line []byte, users int) []byte {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(line, &env); err != nil {
		t.Fatal(err)
	}
	for _, img := range []string{"before", "after"} {
		if row, ok := env[img].(map[string]any); ok {
			if _, ok := row["user_id"]; ok {
				row["user_id"] = 1 + int(row["id"].(float64))%users
			}
		}
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
