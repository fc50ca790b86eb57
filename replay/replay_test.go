package replay

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func mustSpec(t testing.TB, y string) *Spec {
	t.Helper()
	s, err := ParseSpec([]byte(y))
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	return s
}

// replayLines runs script and returns the output lines.
func replayLines(t *testing.T, spec, script string) ([]string, Summary) {
	t.Helper()
	var out strings.Builder
	sum, err := Run(mustSpec(t, spec), strings.NewReader(script), &out)
	if err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	s := strings.TrimSuffix(out.String(), "\n")
	if s == "" {
		return nil, sum
	}
	return strings.Split(s, "\n"), sum
}

func eqLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("output\n--- got\n%s\n--- want\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

const orangeGreen = `
left: {name: orange, key: k, ts: ts}
right: {name: green, key: k, ts: ts}
project: [{name: o, from: orange.v}, {name: g, from: green.v}]
`

func TestReplayCDC(t *testing.T) {
	got, sum := replayLines(t, `
type: cdc
mode: left
left: {name: users, pk: id, join_on: id}
right: {name: domains, pk: id, join_on: user_id}
project: [{name: u, from: users.name}, {name: d, from: domains.name}]
`, `{"side":"users","op":"c","after":{"id":1,"name":"Egor"}}
{"side":"domains","op":"c","after":{"id":7,"user_id":1,"name":"Approval"}}
{"snapshot":true}
{"side":"domains","op":"u","before":{"id":7,"user_id":1,"name":"Approval"},"after":{"id":7,"user_id":2,"name":"Approval"}}
`)
	eqLines(t, got, []string{
		`{"id":"replay/0@1/1/0/0","op":"+I","pk":[1,null],"row":{"d":null,"u":"Egor"}}`,
		`{"id":"replay/0@2/1/0/0","op":"-D","pk":[1,null],"row":{"d":null,"u":"Egor"}}`,
		`{"id":"replay/0@2/1/0/1","op":"+I","pk":[1,7],"row":{"d":"Approval","u":"Egor"}}`,
		`{"id":"replay/0@4/1/0/0","op":"-D","pk":[1,7],"row":{"d":"Approval","u":"Egor"}}`,
		`{"id":"replay/0@4/1/0/1","op":"+I","pk":[1,null],"row":{"d":null,"u":"Egor"}}`,
	})
	if want := (Summary{Lines: 4, Inputs: 3, Snapshots: 1, Outputs: 5, Keys: 2}); sum != want {
		t.Fatalf("summary %+v, want %+v", sum, want)
	}
}

func TestReplayWindow(t *testing.T) {
	got, sum := replayLines(t, "type: window\nwindow: {assigner: tumbling, size: 5}\n"+orangeGreen,
		`{"side":"orange","row":{"k":"a","ts":5,"v":"o5"}}
{"side":"green","row":{"k":"a","ts":7,"v":"g7"}}
{"watermark":8}
{"watermark":9}
{"side":"green","row":{"k":"a","ts":6,"v":"late"}}
`)
	eqLines(t, got, []string{
		`{"id":"window|replay/0@1|replay/0@2|10|0","op":"+I","pk":["replay/0@1","replay/0@2",10,0],"row":{"g":"g7","o":"o5"},"ts":9}`,
		`{"late":{"side":"green","key":"a","ts":6,"pos":"replay/0@5","row":{"k":"a","ts":6,"v":"late"}},"reason":"window-closed"}`,
	})
	if sum.Outputs != 1 || sum.Late != 1 || sum.Watermarks != 2 || sum.Inputs != 3 || sum.Keys != 1 {
		t.Fatalf("summary %+v", sum)
	}
}

func TestReplayCoGroupOuter(t *testing.T) {
	got, _ := replayLines(t, "type: cogroup-outer\nmode: right\nwindow: {assigner: tumbling, size: 10ms}\n"+orangeGreen,
		`{"side":"orange","row":{"k":"a","ts":1,"v":"o1"}}
{"side":"green","row":{"k":"b","ts":2,"v":"g2"}}
{"watermark":100}
`)
	eqLines(t, got, []string{
		`{"id":"window|-|replay/0@2|10|0","op":"+I","pk":[null,"replay/0@2",10,0],"row":{"g":"g2","o":null},"ts":9}`,
	})
}

func TestReplayInterval(t *testing.T) {
	got, _ := replayLines(t, "type: interval\ninterval: {lower: -2ms, upper: 1ms, upper_exclusive: true}\n"+orangeGreen,
		`{"side":"green","row":{"k":"a","ts":8,"v":"g8"}}
{"side":"green","row":{"k":"a","ts":11,"v":"g11"}}
{"side":"orange","row":{"k":"a","ts":10,"v":"o10"}}
{"watermark":12}
{"side":"orange","row":{"k":"a","ts":11,"v":"o11"}}
`)
	eqLines(t, got, []string{
		`{"id":"interval|replay/0@3|replay/0@1|10|0","op":"+I","pk":["replay/0@3","replay/0@1",10,0],"row":{"g":"g8","o":"o10"},"ts":10}`,
		`{"late":{"side":"orange","key":"a","ts":11,"pos":"replay/0@5","row":{"k":"a","ts":11,"v":"o11"}},"reason":"behind-watermark"}`,
	})
}

func TestReplayTimeBounded(t *testing.T) {
	got, _ := replayLines(t, "type: time-bounded\nmode: left\ninterval: {lower: 0, upper: 2m}\n"+orangeGreen,
		`{"side":"orange","row":{"k":"a","ts":0,"v":"visit"}}
{"watermark":120000}
{"watermark":120001}
`)
	eqLines(t, got, []string{
		`{"id":"outer|replay/0@1|-|0|0","op":"+I","pk":["replay/0@1",null,0,0],"row":{"g":null,"o":"visit"},"ts":0}`,
	})
}

func TestReplayTemporal(t *testing.T) {
	got, _ := replayLines(t, "type: temporal\nmode: left\n"+orangeGreen,
		`{"side":"green","row":{"k":"a","ts":0,"v":"v0"}}
{"side":"green","op":"d","row":{"k":"a","ts":5}}
{"side":"orange","row":{"k":"a","ts":4,"v":"p4"}}
{"side":"orange","row":{"k":"a","ts":6,"v":"p6"}}
{"watermark":10}
`)
	eqLines(t, got, []string{
		`{"id":"temporal|replay/0@3|replay/0@1|4|0","op":"+I","pk":["replay/0@3","replay/0@1",4,0],"row":{"g":"v0","o":"p4"},"ts":4}`,
		`{"id":"temporal|replay/0@4|-|6|0","op":"+I","pk":["replay/0@4",null,6,0],"row":{"g":null,"o":"p6"},"ts":6}`,
	})
}

func TestReplayTemporalLatest(t *testing.T) {
	got, _ := replayLines(t, "type: temporal-latest\n"+orangeGreen,
		`{"side":"green","row":{"k":"a","ts":9,"v":"v9"}}
{"side":"orange","row":{"k":"a","ts":4,"v":"p4"}}
{"side":"green","op":"d","row":{"k":"a","ts":10}}
{"side":"orange","row":{"k":"a","ts":11,"v":"p11"}}
`)
	eqLines(t, got, []string{
		`{"id":"temporal-latest|replay/0@2|replay/0@1|4|0","op":"+I","pk":["replay/0@2","replay/0@1",4,0],"row":{"g":"v9","o":"p4"},"ts":4}`,
	})
}

// TestReplayTimersFireBeforeLaterLines: a watermark fires the due timers of
// every key, in time order, before the next line sees it.
func TestReplayTimersFireBeforeLaterLines(t *testing.T) {
	got, _ := replayLines(t, "type: window\nwindow: {assigner: tumbling, size: 2}\n"+orangeGreen,
		`{"side":"orange","row":{"k":"b","ts":2,"v":"b2"}}
{"side":"green","row":{"k":"b","ts":3,"v":"b3"}}
{"side":"orange","row":{"k":"a","ts":0,"v":"a0"}}
{"side":"green","row":{"k":"a","ts":1,"v":"a1"}}
{"watermark":3}
{"side":"green","row":{"k":"a","ts":1,"v":"late"}}
`)
	if len(got) != 3 || !strings.Contains(got[0], `"ts":1`) || !strings.Contains(got[1], `"ts":3`) || !strings.Contains(got[2], `"late"`) {
		t.Fatalf("output:\n%s", strings.Join(got, "\n"))
	}
}

func TestReplayDeterministic(t *testing.T) {
	spec := "type: window\nwindow: {assigner: session, gap: 3}\n" + orangeGreen
	var script strings.Builder
	for i := 0; i < 200; i++ {
		side := "orange"
		if i%3 == 0 {
			side = "green"
		}
		script.WriteString(`{"side":"` + side + `","row":{"k":"` + string(rune('a'+i%5)) + `","ts":` + itoa(i*7%50) + `,"v":"x"}}` + "\n")
		if i%20 == 0 {
			script.WriteString(`{"watermark":` + itoa(i/4) + "}\n")
		}
	}
	script.WriteString(`{"watermark":1000}` + "\n")
	a, _ := replayLines(t, spec, script.String())
	b, _ := replayLines(t, spec, script.String())
	eqLines(t, a, b)
	if len(a) == 0 {
		t.Fatal("no output")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestReplayBadLines(t *testing.T) {
	et := "type: interval\ninterval: {lower: 0, upper: 1}\n" + orangeGreen
	cdc := "type: cdc\nleft: {name: users, pk: id, join_on: id}\nright: {name: domains, pk: id, join_on: user_id}\n"
	for _, c := range []struct {
		spec, line, want string
	}{
		{et, `not json`, "not a JSON object"},
		{et, `[1]`, "not a JSON object"},
		{et, `null`, "got null"},
		{et, `{}`, `want one of "side"`},
		{et, `{"watermark":"soon"}`, "watermark"},
		{et, `{"watermark":1.5}`, "not an integer"},
		{et, `{"watermark":1,"side":"orange"}`, "takes no other field"},
		{et, `{"snapshot":false}`, "snapshot: want true"},
		{et, `{"comment":"x","row":{}}`, "takes no other field"},
		{et, `{"side":3,"row":{}}`, "side: want a string"},
		{et, `{"side":"blue","row":{"k":1,"ts":1}}`, `"blue" is neither`},
		{et, `{"side":"orange"}`, "row: missing"},
		{et, `{"side":"orange","row":[1]}`, "row: want a JSON object"},
		{et, `{"side":"orange","row":{"ts":1}}`, `no key column "k"`},
		{et, `{"side":"orange","row":{"k":{},"ts":1}}`, "not a scalar"},
		{et, `{"side":"orange","row":{"k":null,"ts":1}}`, "not a scalar"},
		{et, `{"side":"orange","row":{"k":1}}`, `no time column "ts"`},
		{et, `{"side":"orange","row":{"k":1,"ts":"yesterday"}}`, "RFC 3339"},
		{et, `{"side":"orange","row":{"k":1,"ts":1e40}}`, "not an integer"},
		{et, `{"side":"green","op":"d","row":{"k":1,"ts":1}}`, "only on the right side of a temporal join"},
		{et, `{"side":"green","op":"u","row":{"k":1,"ts":1}}`, `op: want "d"`},
		{et, `{"side":"green","row":{"k":1,"ts":1},"extra":1}`, `unknown field "extra"`},
		{et, `{"side":"green","row":{"k":1,"ts":1}} {}`, "trailing data"},
		{cdc, `{"watermark":1}`, "cdc join has no event time"},
		{cdc, `{"side":"users","op":"x","after":{"id":1}}`, "unknown-op"},
		{cdc, `{"side":"users","op":"c"}`, "missing-after"},
		{cdc, `{"side":"users","op":"c","after":{"name":"no id"}}`, "missing-pk"},
		{cdc, `{"side":"domains","op":"d","before":{"id":1}}`, "unroutable-delete"},
	} {
		script := `{"comment":"line 1"}` + "\n\n" + c.line + "\n"
		var out strings.Builder
		_, err := Run(mustSpec(t, c.spec), strings.NewReader(script), &out)
		var le *LineError
		if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), c.want) ||
			!strings.Contains(err.Error(), "script line 3") {
			t.Errorf("%s: got %v, want a line 3 error containing %q", c.line, err, c.want)
		}
	}
}

func TestReplaySpecValidate(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want []string
	}{
		{"", []string{"empty"}},
		{"type: nope", []string{`type: unknown join type "nope"`}},
		{"type: cdc\nbogus: 1", []string{"field bogus not found"}},
		{"type: cdc\nmode: semi\nleft: {name: u, key: id}\nright: {name: u}",
			[]string{"left.key: not for a cdc join", "right.name: must differ", "mode:", "left.pk: must not be empty", "right.join_on: must not be empty"}},
		{"type: window\n" + orangeGreen, []string{"window: must be set"}},
		{"type: window\nmode: left\nwindow: {assigner: tumbling, size: 0, gap: 3}\n" + orangeGreen,
			[]string{`mode: "left" is not a mode of a window join`}},
		{"type: window\nwindow: {assigner: tumbling, size: 0, gap: 3}\n" + orangeGreen, []string{"window.gap: not used"}},
		{"type: window\nwindow: {assigner: sliding, size: 2, slide: 0}\n" + orangeGreen, []string{"window.slide: must be positive"}},
		{"type: window\nwindow: {assigner: tumbling, size: 10s, offset: 10s}\nallowed_lateness: -1\n" + orangeGreen,
			[]string{"window.offset: must be within", "allowed_lateness: must not be negative"}},
		{"type: window\nwindow: {assigner: weekly}\n" + orangeGreen, []string{"window.assigner: unknown"}},
		{"type: window\nwindow: {assigner: tumbling, size: 1.5ms}\n" + orangeGreen, []string{"whole number of milliseconds"}},
		{"type: window\nwindow: {assigner: tumbling, size: soon}\n" + orangeGreen, []string{"is not a duration"}},
		{"type: interval\ninterval: {lower: 5, upper: 2}\n" + orangeGreen, []string{"interval.lower: must be <= upper"}},
		{"type: time-bounded\ninterval: {lower: 0, upper: 2, lower_exclusive: true}\n" + orangeGreen, []string{"exclusive bounds are for interval joins only"}},
		{"type: temporal\nmode: full\nwindow: {assigner: session, gap: 1}\n" + orangeGreen,
			[]string{"mode:", "window: only for window"}},
		{"type: interval\ninterval: {lower: 0, upper: 1}\nleft: {name: a, key: k, ts: t}\nright: {name: b, key: k}\nproject: [{name: x, from: c.v}, {name: y, from: a}]",
			[]string{"right.ts: must not be empty", `project[0].from: side "c"`, `project[1].from: "a" is not side.field`}},
		{"type: interval\ninterval: {lower: 0, upper: 1}\nleft: {name: a, key: k, ts: t}\nright: {name: b, key: k, ts: t}\nproject: [{name: x, from: a.v}, {name: x, from: b.v}]",
			[]string{`project[1].name: duplicate "x"`}},
	} {
		_, err := ParseSpec([]byte(c.yaml))
		if err == nil {
			t.Errorf("%q: no error", c.yaml)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", c.yaml, err, w)
			}
		}
		if !strings.HasPrefix(err.Error(), "replay: spec: ") {
			t.Errorf("%q: error %q lacks the prefix", c.yaml, err)
		}
	}
}
