package fleetbench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestWorkloadInputs checks that every input record of a workload goes to
// its table's topic, keyed by table and primary key, and that its probes
// are Debezium changes of the right table that carry the stamp.
func TestWorkloadInputs(t *testing.T) {
	c := Config{Users: 40, Domains: 120, Changes: 400}
	for _, name := range workloadNames {
		t.Run(name, func(t *testing.T) {
			w, err := newWorkload(name, c)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := inputs(w, 5)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 || len(msgs) != len(w.lines) {
				t.Fatalf("%d records of %d lines", len(msgs), len(w.lines))
			}
			perTable := map[string]int{}
			for _, m := range msgs {
				if m.topic != m.table+"-5" || !bytes.HasPrefix(m.key, []byte(m.table+":")) {
					t.Fatalf("record of %s: topic %s, key %s", m.table, m.topic, m.key)
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
