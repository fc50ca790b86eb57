package replay

import (
	"slices"
	"strings"
	"testing"
)

// TestReplayEventsConditions runs residual conditions in the events mode,
// where a side's name stands for the input's value: objects (a job file)
// and plain numbers (a bare spec), with a snapshot and restore between
// lines (the decoded value must survive it).
func TestReplayEventsConditions(t *testing.T) {
	job := `join:
  type: time-bounded
  mode: left
  left: {name: visits}
  right: {name: ads}
  lower: 0s
  upper: 10ms
  condition: 'ads.price >= visits.min_price'
  left_condition: 'visits.country != "XX"'
`
	in := `{"side":"visits","key":"k","ts":1,"value":{"v":1,"country":"NL","min_price":10}}
{"side":"visits","key":"k","ts":2,"value":{"v":2,"country":"XX","min_price":0}}
{"snapshot":true}
{"side":"ads","key":"k","ts":3,"value":{"a":1,"price":5}}
{"side":"ads","key":"k","ts":4,"value":{"a":2,"price":12.5}}
`
	out, late, _ := runEvents(t, job, in, Options{})
	want := []string{
		`{"left":{"v":2,"country":"XX","min_price":0},"right":null,"ts":2}`,
		`{"left":{"v":1,"country":"NL","min_price":10},"right":{"a":2,"price":12.5},"ts":4}`,
	}
	if !slices.Equal(out, want) || len(late) != 0 {
		t.Fatalf("out\n%s\nlate %v", strings.Join(out, "\n"), late)
	}

	spec := "type: interval\ninterval: {lower: -5, upper: 5}\ncondition: 'left < right'\nlate: {rule: \"ts<=wm\"}\n"
	out, late, _ = runEvents(t, spec, elems("k", "left:3", "right:1", "right:4", `left:0`)+`{"watermark":2}`+"\n"+elems("k", "left:2"), Options{})
	// left 3 < right 4 only; left 0 < right 1 and 4; left 2 at watermark 2 is late under ts<=wm.
	if w := pairs([3]any{3, 4, 4}, [3]any{0, 1, 1}, [3]any{0, 4, 4}); !slices.Equal(out, w) {
		t.Errorf("spec out %v, want %v", out, w)
	}
	if len(late) != 1 || !strings.Contains(late[0], `"reason":"behind-watermark"`) {
		t.Errorf("spec late %v", late)
	}
}

func TestReplayConditionErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"join: {type: interval, condition: 'left.x > rigth.y'}\n", `replay: job: join.condition: "left.x > rigth.y" names rigth`},
		{"join: {type: interval, left_condition: 'right.x'}\n", "replay: job: join.left_condition:"},
		{"join: {type: interval, late: {rule: 'ts<=watermark'}}\n", "join.late.rule: must be ts<wm, ts<=wm or none"},
		{"join: {type: window, window: {type: tumbling, size: 2ms}, late: {rule: none}}\n", "join.late: rule none is for interval, time-bounded and unbounded joins"},
		{"join: {type: temporal, condition: 'true'}\n", "join.condition: only for window, interval, time-bounded, unbounded and cdc joins"},
		{"join: {type: temporal-latest, late: {rule: none}}\n", "join.late.rule: only for window, interval, time-bounded and unbounded joins"},
		{"join: {type: cdc, condition: 'x.a', left: {name: u, pk: id, join_on: id}, right: {name: d, pk: id, join_on: uid}}\n", `join.condition: "x.a" names x`},
		{"join: {type: cdc, late: {rule: none}, left: {name: u, pk: id, join_on: id}, right: {name: d, pk: id, join_on: uid}}\n", "join.late.rule: only for window"},
		{"type: cdc\nlate: {rule: none}\nleft: {name: u, pk: id, join_on: id}\nright: {name: d, pk: id, join_on: uid}\n", "replay: spec: late.rule: only for"},
		{"type: interval\ninterval: {lower: 0, upper: 1}\ncondition: 'left.x >'\n", "replay: spec: condition:"},
		{"type: interval\ninterval: {lower: 0, upper: 1}\nright_condition: 'left.x'\n", `replay: spec: right_condition: "left.x" names left; it may name only right`},
		{"type: window\nwindow: {assigner: tumbling, size: 2}\nlate: {rule: none}\n", "replay: spec: late.rule: rule none is for interval, time-bounded and unbounded joins"},
		{"type: temporal\ncondition: 'true'\n", "replay: spec: condition: only for window"},
	} {
		_, err := ParseJob([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s error %v\nwant one containing %q", c.yaml, err, c.want)
		}
	}
}

// TestReplayUnbounded runs the unbounded join in both file forms and checks
// that ttl is required there and refused elsewhere.
func TestReplayUnbounded(t *testing.T) {
	in := elems("k", "left:0", "right:100") + `{"watermark":111}` + "\n" + elems("k", "left:120") + `{"watermark":131}` + "\n" + elems("k", "right:200")
	for _, job := range []string{
		"join: {type: unbounded, mode: left, ttl: 10ms}\n",
		"type: unbounded\nmode: left\nttl: 10\n",
	} {
		out, late, _ := runEvents(t, job, in, Options{})
		// 0 and 100 meet (100 ms apart, both kept); 120 expires (watermark
		// 131 > 120 + 10) before 200 comes: padded.
		if w := pairs([3]any{0, 100, 100}, [3]any{120, "null", 120}); !slices.Equal(out, w) || len(late) != 0 {
			t.Errorf("%s out %v, want %v; late %v", job, out, w, late)
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{"join: {type: unbounded}\n", "join.ttl: must be positive"},
		{"type: unbounded\n", "replay: spec: ttl: must be positive"},
		{"join: {type: interval, ttl: 1s}\n", "join.ttl: only for unbounded joins"},
		{"join: {type: cdc, ttl: 1s, left: {name: u, pk: id, join_on: id}, right: {name: d, pk: id, join_on: uid}}\n", "ttl: only for unbounded joins"},
		{"type: window\nwindow: {assigner: tumbling, size: 2}\nttl: 5\n", "replay: spec: ttl: only for unbounded joins"},
	} {
		if _, err := ParseJob([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s error %v\nwant one containing %q", c.yaml, err, c.want)
		}
	}
}

// TestReplayScriptCondition: in the script mode a side's name stands for its
// row's columns.
func TestReplayScriptCondition(t *testing.T) {
	spec := `type: interval
left:  {name: orange, key: k, ts: ts}
right: {name: green, key: k, ts: ts}
interval: {lower: -5, upper: 5}
condition: 'orange.v < green.v'
right_condition: 'green.v != 7'
project: [{name: o, from: orange.v}, {name: g, from: green.v}]
`
	script := `{"side":"orange","row":{"k":"a","ts":1,"v":5}}
{"side":"green","row":{"k":"a","ts":2,"v":4}}
{"side":"green","row":{"k":"a","ts":3,"v":6}}
{"side":"green","row":{"k":"a","ts":4,"v":7}}
`
	out, _ := replayLines(t, spec, script)
	if len(out) != 1 || !strings.Contains(out[0], `"row":{"g":6,"o":5}`) {
		t.Fatalf("outputs %v, want the one pair 5,6", out)
	}
}
