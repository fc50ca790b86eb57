package fleetbench

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestWorkloadInputs checks that every input record of a workload is of
// one of its tables, keyed by table and primary key with the primary key
// as a JSON array beside, and that its probes are Debezium changes of the
// right table that carry the stamp.
func TestWorkloadInputs(t *testing.T) {
	c := Config{Users: 40, Domains: 120, Changes: 400}
	for _, name := range workloadNames {
		t.Run(name, func(t *testing.T) {
			w, err := newWorkload(name, c)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := inputs(w, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 || len(msgs) != len(w.lines) {
				t.Fatalf("%d records of %d lines", len(msgs), len(w.lines))
			}
			perTable := map[string]int{}
			for _, m := range msgs {
				var pk []int64
				if (m.table != w.left && m.table != w.right) || json.Unmarshal(m.pk, &pk) != nil || len(pk) != 1 ||
					string(m.key) != fmt.Sprintf("%s:%d", m.table, pk[0]) {
					t.Fatalf("record of %s: key %s, pk %s", m.table, m.key, m.pk)
				}
				perTable[m.table]++
			}
			if perTable[w.left] == 0 || perTable[w.right] == 0 {
				t.Fatalf("records per table %v: want both %s and %s", perTable, w.left, w.right)
			}
			probe, err := w.probes()
			if err != nil {
				t.Fatal(err)
			}
			keys := map[string]bool{}
			for i := range 3 {
				m := probe("lat-5-", i)
				var env struct {
					Op     string         `json:"op"`
					After  map[string]any `json:"after"`
					Source struct{ Table string }
				}
				if err := json.Unmarshal(m.value, &env); err != nil {
					t.Fatal(err)
				}
				stamp, _ := env.After[w.stampField].(string)
				if m.table != w.right || env.Source.Table != w.right || !strings.HasPrefix(stamp, "lat-5-") {
					t.Fatalf("probe %d: table %s/%s, %s = %q", i, m.table, env.Source.Table, w.stampField, stamp)
				}
				var raw struct{ After map[string]json.RawMessage }
				if err := json.Unmarshal(m.value, &raw); err != nil || string(m.pk) != fmt.Sprintf("[%s]", raw.After["id"]) {
					t.Fatalf("probe %d: pk %s of row id %s (%v)", i, m.pk, raw.After["id"], err)
				}
				keys[string(m.key)] = true
			}
			if len(keys) != 3 {
				t.Fatalf("probes hit %d keys, want 3 different rows", len(keys))
			}
			if _, err := newWorkload("q99", c); err == nil {
				t.Fatal("unknown workload: no error")
			}
		})
	}
}

// TestWorkloadInputsByJoinKey checks the co-partitioned input: every
// record's join key is its row's join column, and no update changes it (a
// move between keys is a delete keyed by the old value, then a create
// keyed by the new one).
func TestWorkloadInputsByJoinKey(t *testing.T) {
	c := Config{Users: 40, Domains: 120, Changes: 2000}
	for _, name := range workloadNames {
		t.Run(name, func(t *testing.T) {
			w, err := newWorkload(name, c)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := inputs(w, true)
			if err != nil {
				t.Fatal(err)
			}
			moves := 0
			for _, m := range msgs {
				var env struct {
					Op            string
					Before, After map[string]json.RawMessage
				}
				if err := json.Unmarshal(m.value, &env); err != nil {
					t.Fatal(err)
				}
				col := w.joinCols[m.table]
				row := env.After
				if row == nil {
					row = env.Before
				}
				if want := "[" + string(row[col]) + "]"; string(m.jk) != want {
					t.Fatalf("%s record keyed %s, its %s is %s", m.table, m.jk, col, want)
				}
				if env.Op == "u" && string(env.Before[col]) != string(env.After[col]) {
					t.Fatalf("an update moves a %s row from %s to %s: %s", m.table, env.Before[col], env.After[col], m.value)
				}
				if env.Op == "d" && len(env.Before) > 0 {
					moves++
				}
			}
			if name == "cdc" && moves == 0 {
				t.Errorf("no delete in the cdc input: the history has no move or delete to check")
			}
			if len(msgs) < len(w.lines) {
				t.Errorf("%d records of %d lines", len(msgs), len(w.lines))
			}
		})
	}
}
