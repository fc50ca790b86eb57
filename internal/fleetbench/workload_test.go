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
			msgs, err := inputs(w)
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
