package replay

import (
	"strings"
	"testing"
)

// TestReplaySemanticsOptions: temporal: {semantics} and cdc: {kinds, ts}
// are accepted where they apply, in both file forms, and refused elsewhere
// or with an unknown value, naming the field.
func TestReplaySemanticsOptions(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"job temporal flink", "join: {type: temporal, temporal: {semantics: flink}}\n", ""},
		{"job temporal-latest flink", "join: {type: temporal-latest, temporal: {semantics: flink}}\n", ""},
		{"spec temporal strict", "type: temporal\ntemporal: {semantics: strict}\n", ""},
		{"job temporal-latest kafka", "join: {type: temporal-latest, mode: left, temporal: {semantics: kafka}}\n", ""},
		{"spec temporal-latest kafka", "type: temporal-latest\ntemporal: {semantics: kafka}\n", ""},
		{"job temporal kafka", "join: {type: temporal, mode: left, temporal: {semantics: kafka, grace: 10ms, history: 5m}}\n", ""},
		{"spec temporal kafka", "type: temporal\ntemporal: {semantics: kafka, history: 1h}\n", ""},
		{"job temporal kafka no history", "join: {type: temporal, temporal: {semantics: kafka}}\n", "join.temporal.history: required for type temporal with semantics kafka"},
		{"spec temporal kafka no history", "type: temporal\ntemporal: {semantics: kafka, grace: 2ms}\n", "temporal.history: required for type temporal with semantics kafka"},
		{"job grace over history", "join: {type: temporal, temporal: {semantics: kafka, grace: 2h, history: 1h}}\n", "join.temporal.grace: must not exceed temporal.history (2h0m0s > 1h0m0s)"},
		{"spec grace over history", "type: temporal\ntemporal: {semantics: kafka, grace: 2h, history: 1h}\n", "temporal.grace: must not exceed temporal.history"},
		{"job negative grace", "join: {type: temporal, temporal: {semantics: kafka, grace: -1s, history: 1h}}\n", "join.temporal.grace: must not be negative (got -1s)"},
		{"job grace not ms", "join: {type: temporal, temporal: {semantics: kafka, grace: 1500us, history: 1h}}\n", "join.temporal.grace: must be a whole number of milliseconds"},
		{"job grace on temporal-latest", "join: {type: temporal-latest, temporal: {semantics: kafka, grace: 1s}}\n", "join.temporal.grace: only for type temporal with semantics kafka"},
		{"job history under flink", "join: {type: temporal, temporal: {semantics: flink, history: 1h}}\n", "join.temporal.history: only for type temporal with semantics kafka"},
		{"spec grace under strict", "type: temporal\ntemporal: {grace: 1s}\n", "temporal.grace: only for type temporal with semantics kafka"},
		{"job grace on window", "join: {type: window, window: {type: tumbling, size: 2ms}, temporal: {grace: 1s}}\n", "join.temporal: only for temporal joins"},
		{"job kafka probe kind", "join: {type: temporal, temporal: {semantics: kafka, history: 1h}, left: {kind: op}}\n", "join.left.kind: only for temporal joins with temporal: {semantics: flink}"},
		{"job cdc flink max", "join: {type: cdc, cdc: {kinds: flink, ts: max}, left: {name: u, pk: id, join_on: id}, right: {name: d, pk: id, join_on: uid}}\n", ""},
		{"spec cdc update none", "type: cdc\ncdc: {kinds: update, ts: none}\nleft: {name: u, pk: id, join_on: id}\nright: {name: d, pk: id, join_on: uid}\n", ""},
		{"job bad semantics", "join: {type: temporal, temporal: {semantics: spark}}\n", "join.temporal.semantics: must be strict, flink or kafka"},
		{"spec bad semantics", "type: temporal\ntemporal: {semantics: spark}\n", "temporal.semantics: must be strict, flink or kafka"},
		{"job temporal on window", "join: {type: window, window: {type: tumbling, size: 2ms}, temporal: {semantics: flink}}\n", "join.temporal: only for temporal joins"},
		{"spec cdc on interval", "type: interval\ninterval: {lower: 0, upper: 1}\ncdc: {ts: max}\n", "cdc: only for cdc joins"},
		{"job bad kinds", "join: {type: cdc, cdc: {kinds: spark}, left: {name: u, pk: id, join_on: id}, right: {name: d, pk: id, join_on: uid}}\n", "join.cdc.kinds: must be update, flink or kafka"},
		{"job cdc kafka max", "join: {type: cdc, mode: left, cdc: {kinds: kafka, ts: max}, left: {name: u, pk: id, join_on: id}, right: {name: d, pk: id, join_on: uid}}\n", ""},
		{"spec cdc kafka", "type: cdc\ncdc: {kinds: kafka}\nleft: {name: u, pk: id, join_on: id}\nright: {name: d, pk: id, join_on: uid}\n", ""},
		{"spec bad kinds", "type: cdc\ncdc: {kinds: spark}\nleft: {name: u, pk: id, join_on: id}\nright: {name: d, pk: id, join_on: uid}\n", "cdc.kinds: must be update, flink or kafka"},
		{"job cdc kinds on temporal", "join: {type: temporal, cdc: {kinds: kafka}}\n", "join.cdc: only for cdc joins"},
		{"job bad ts", "join: {type: cdc, cdc: {ts: min}, left: {name: u, pk: id, join_on: id}, right: {name: d, pk: id, join_on: uid}}\n", "join.cdc.ts: must be none or max"},
		{"job kind fields", "join: {type: temporal, temporal: {semantics: flink}, left: {kind: op}, right: {kind: op}}\n", ""},
		{"job probe kind under strict", "join: {type: temporal, left: {kind: op}}\n", "join.left.kind: only for temporal joins with temporal: {semantics: flink}"},
		{"job kind on interval", "join: {type: interval, upper: 1ms, right: {kind: op}}\n", "join.right.kind: only for temporal joins"},
		{"job temporal on cdc", "join: {type: cdc, temporal: {semantics: flink}, left: {name: u, pk: id, join_on: id}, right: {name: d, pk: id, join_on: uid}}\n", "join.temporal: only for temporal joins"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJob([]byte(tc.yaml))
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestReplaySemanticsProbeKinds: under strict semantics a probe is
// append-only; under flink a changelog probe keeps its kind, needs its
// value, and outputs carry op; temporal-latest keeps kinds too.
func TestReplaySemanticsProbeKinds(t *testing.T) {
	in := `{"side":"right","key":"k","ts":0,"value":"v0"}
{"side":"left","key":"k","ts":5,"value":"p5"}
{"side":"left","key":"k","ts":5,"value":"p5","op":"-U"}
{"side":"left","key":"k","ts":5,"value":"p5b","op":"+U"}
{"side":"left","key":"k","ts":6,"value":"p6","op":"-D"}
`
	jb := mustJob(t, "type: temporal\nmode: left\n")
	if _, err := RunEvents(jb, strings.NewReader(in), new(strings.Builder), Options{}); err == nil || !strings.Contains(err.Error(), "semantics: flink") {
		t.Fatalf("a -U probe under strict semantics: %v", err)
	}
	for _, typ := range []string{"temporal", "temporal-latest"} {
		got, late, _ := runEvents(t, "type: "+typ+"\nmode: left\ntemporal: {semantics: flink}\n", in, Options{})
		eqLines(t, got, []string{
			`{"left":"p5","right":"v0","ts":5,"op":"+I"}`,
			`{"left":"p5","right":"v0","ts":5,"op":"-U"}`,
			`{"left":"p5b","right":"v0","ts":5,"op":"+U"}`,
			`{"left":"p6","right":"v0","ts":6,"op":"-D"}`,
		})
		if len(late) != 0 {
			t.Fatalf("%s: late %v", typ, late)
		}
	}
	jb = mustJob(t, "type: temporal\ntemporal: {semantics: flink}\n")
	if _, err := RunEvents(jb, strings.NewReader(`{"side":"left","key":"k","ts":5,"op":"-D"}`+"\n"), new(strings.Builder), Options{}); err == nil || !strings.Contains(err.Error(), "value") {
		t.Fatalf("a -D probe without its row: %v", err)
	}
}
