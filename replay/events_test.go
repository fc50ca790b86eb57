package replay

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func mustJob(t testing.TB, y string) *Job {
	t.Helper()
	j, err := ParseJob([]byte(y))
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	return j
}

// runEvents runs input through the job and returns the output and late
// lines.
func runEvents(t *testing.T, jobYAML, input string, opts Options) (out, late []string, sum EventsSummary) {
	t.Helper()
	var o, l strings.Builder
	opts.Late = &l
	sum, err := RunEvents(mustJob(t, jobYAML), strings.NewReader(input), &o, opts)
	if err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, o.String())
	}
	return lines(o.String()), lines(l.String()), sum
}

func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// elems writes one element line per "side:ts" (value = ts) of key k.
func elems(k string, es ...string) string {
	var b strings.Builder
	for _, e := range es {
		side, ts, _ := strings.Cut(e, ":")
		fmt.Fprintf(&b, `{"side":%q,"key":%q,"ts":%s,"value":%s}`+"\n", side, k, ts, ts)
	}
	return b.String()
}

// pairs renders expected {left,right,ts} lines of values l,r at ts.
func pairs(ps ...[3]any) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf(`{"left":%v,"right":%v,"ts":%v}`, p[0], p[1], p[2])
	}
	return out
}

const figureSides = "left: {name: orange}\n  right: {name: green}\n"

// The figures of seed flink-joining (the element times as the figures and
// the seed's text give them: tumbling window [6,7] holds orange 6 and 7 and
// no green; in the sliding figure orange 2 joins green 3 in window [2,3] and
// nothing in [1,2]; the session figure has three sessions, the third orange
// 8 and 9 alone; the interval join uses bounds -2 ms and +1 ms).
func TestReplayEventsSeedFigures(t *testing.T) {
	for _, tc := range []struct {
		name, join, input string
		want              []string
	}{{
		name: "tumbling 2ms",
		join: "type: window\n  window: {type: tumbling, size: 2ms}\n",
		input: elems("k", "orange:0", "orange:1", "green:0", "green:1", "orange:2", "orange:3", "green:3",
			"orange:4", "orange:5", "green:4", "green:5", "orange:6", "orange:7"),
		// [0,1]: 2×2 pairs at 1; [2,3]: orange 2, 3 × green 3 at 3; [4,5]: 2×2
		// at 5; [6,7]: no green, nothing.
		want: pairs([3]any{0, 0, 1}, [3]any{0, 1, 1}, [3]any{1, 0, 1}, [3]any{1, 1, 1},
			[3]any{2, 3, 3}, [3]any{3, 3, 3},
			[3]any{4, 4, 5}, [3]any{4, 5, 5}, [3]any{5, 4, 5}, [3]any{5, 5, 5}),
	}, {
		name:  "sliding 2ms/1ms",
		join:  "type: window\n  window: {type: sliding, size: 2ms, slide: 1ms}\n",
		input: elems("k", "orange:0", "green:0", "orange:2", "green:3"),
		// [-1,0] and [0,1] pair orange 0 and green 0 (at 0 and 1); [1,2] holds
		// orange 2 alone; [2,3] pairs orange 2 and green 3 (at 3); [3,4] holds
		// green 3 alone.
		want: pairs([3]any{0, 0, 0}, [3]any{0, 0, 1}, [3]any{2, 3, 3}),
	}, {
		name:  "session gap 1ms",
		join:  "type: window\n  window: {type: session, gap: 1ms}\n",
		input: elems("k", "orange:0", "orange:1", "green:1", "green:3", "orange:4", "green:5", "orange:8", "orange:9"),
		// Sessions [0,2) (orange 0, 1, green 1), [3,6) (green 3, orange 4,
		// green 5), [8,10) (orange 8, 9 alone: nothing).
		want: pairs([3]any{0, 1, 1}, [3]any{1, 1, 1}, [3]any{4, 3, 5}, [3]any{4, 5, 5}),
	}, {
		name: "interval -2ms/+1ms",
		join: "type: interval\n  lower: -2ms\n  upper: 1ms\n",
		input: elems("k", "orange:0", "orange:2", "orange:3", "orange:4", "orange:5", "orange:7",
			"green:0", "green:1", "green:6", "green:8"),
		// Emitted on arrival of the green, in orange time order, stamped
		// max(orange, green): green g joins orange o when o-2 <= g <= o+1:
		// green 0 joins orange 0 and 2; green 1 joins orange 0, 2 and 3;
		// green 6 joins 5 and 7; green 8 joins 7.
		want: pairs([3]any{0, 0, 0}, [3]any{2, 0, 2}, [3]any{0, 1, 1}, [3]any{2, 1, 2}, [3]any{3, 1, 3},
			[3]any{5, 6, 6}, [3]any{7, 6, 7}, [3]any{7, 8, 8}),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, late, _ := runEvents(t, "join:\n  "+tc.join+"  "+figureSides, tc.input, Options{})
			eqLines(t, got, tc.want)
			if len(late) > 0 {
				t.Fatalf("late: %v", late)
			}
		})
	}
}

// TestReplayEventsWatermarks: a window fires when the watermark reaches its
// end - 1, not before, and is stamped end - 1; an interval pair is emitted at
// once; elements behind the watermark are late, with the join's reason.
func TestReplayEventsWatermarks(t *testing.T) {
	job := "type: window\nwindow: {assigner: tumbling, size: 5}\nend_of_input: hold\n"
	in := elems("k", "left:5", "right:7") + `{"watermark":8}` + "\n"
	got, _, sum := runEvents(t, job, in, Options{})
	if len(got) != 0 || sum.Watermark != int64(8) {
		t.Fatalf("fired before the watermark reached 9: %v (summary %+v)", got, sum)
	}
	got, late, sum := runEvents(t, job, in+`{"watermark":9}`+"\n"+elems("k", "right:6"), Options{})
	eqLines(t, got, pairs([3]any{5, 7, 9}))
	eqLines(t, late, []string{`{"side":"right","key":"k","ts":6,"value":6,"line":5,"reason":"window-closed"}`})
	if sum.Late != 1 || sum.Outputs != 1 || sum.Watermarks != 2 || sum.Inputs != 3 {
		t.Fatalf("summary %+v", sum)
	}
	// A watermark that goes back changes nothing.
	got, _, _ = runEvents(t, job, elems("k", "left:5")+`{"watermark":20}`+"\n"+`{"watermark":3}`+"\n"+elems("k", "right:7"), Options{})
	if len(got) != 0 {
		t.Fatalf("late element joined: %v", got)
	}

	ij := "type: interval\ninterval: {lower: -2, upper: 1}\n"
	got, late, _ = runEvents(t, ij, `{"watermark":10}`+"\n"+elems("k", "left:10", "right:11", "right:9"), Options{})
	eqLines(t, got, pairs([3]any{10, 11, 11}))
	eqLines(t, late, []string{`{"side":"right","key":"k","ts":9,"value":9,"line":4,"reason":"behind-watermark"}`})
}

// TestReplayEventsEndOfInput: flush (the default) moves the watermark to
// +inf at the end; hold (job option or override) keeps it.
func TestReplayEventsEndOfInput(t *testing.T) {
	const in = `{"side":"left","key":"k","ts":5,"value":"a"}` + "\n" + `{"side":"right","key":"k","ts":7,"value":"b"}` + "\n"
	want := []string{`{"left":"a","right":"b","ts":9}`}
	for _, tc := range []struct {
		name, job string
		opts      Options
		want      []string
		wm        any
	}{
		{"default flush", "type: window\nwindow: {assigner: tumbling, size: 5}\n", Options{}, want, "+inf"},
		{"spec hold", "type: window\nwindow: {assigner: tumbling, size: 5}\nend_of_input: hold\n", Options{}, nil, nil},
		{"job hold", "join:\n  type: window\n  window: {type: tumbling, size: 5ms}\nreplay: {end_of_input: hold}\n", Options{}, nil, nil},
		{"override flush", "type: window\nwindow: {assigner: tumbling, size: 5}\nend_of_input: hold\n", Options{EndOfInput: EndFlush}, want, "+inf"},
		{"override hold", "type: window\nwindow: {assigner: tumbling, size: 5}\n", Options{EndOfInput: EndHold}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, sum := runEvents(t, tc.job, in, tc.opts)
			eqLines(t, got, tc.want)
			if sum.Watermark != tc.wm {
				t.Fatalf("watermark %v, want %v", sum.Watermark, tc.wm)
			}
		})
	}
}

// TestReplayEventsOutputs: values come out as they went in (white space
// aside), keys compare by canonical JSON, op appears for changelogs (or
// always with OpsAlways), null keys are dropped with a reason.
func TestReplayEventsOutputs(t *testing.T) {
	tb := "type: time-bounded\nmode: full\ninterval: {lower: 0, upper: 0}\nleft: {name: visits}\nright: {name: ads}\n"
	in := `{"side":"visits","key":1,"ts":1,"value":{"z":1,"a":[1.50, 2e3, "x"]}}
{"side":"ads","key":1.0,"ts":1,"value":null}
{"side":"right","key":"1","ts":1}
{"side":"left","key":true,"ts":2,"value":"t","comment":"ignored"}
{"side":"left","key":null,"ts":2,"value":"n"}
`
	got, late, sum := runEvents(t, tb, in, Options{})
	eqLines(t, got, []string{
		`{"left":{"z":1,"a":[1.50,2e3,"x"]},"right":null,"ts":1}`,
		`{"left":null,"right":null,"ts":1}`,
		`{"left":"t","right":null,"ts":2}`,
	})
	eqLines(t, late, []string{`{"side":"left","key":null,"ts":2,"value":"n","line":5,"reason":"null-key"}`})
	if sum.Dropped != 1 || sum.Keys != 3 {
		t.Fatalf("summary %+v", sum)
	}
	got, _, _ = runEvents(t, tb, in, Options{Ops: OpsAlways})
	if !strings.HasSuffix(got[0], `,"ts":1,"op":"+I"}`) {
		t.Fatalf("OpsAlways: %s", got[0])
	}
}

// TestReplayEventsTemporalOps: +I/+U start a version, -D ends it, -U ends it
// too unless a +U at the same time replaces it (Flink's versioned table).
func TestReplayEventsTemporalOps(t *testing.T) {
	job := "type: temporal\nmode: left\n"
	in := `{"side":"right","key":"k","ts":0,"value":"v0","op":"+I"}
{"side":"right","key":"k","ts":10,"value":"v0","op":"-U"}
{"side":"right","key":"k","ts":10,"value":"v10","op":"+U"}
{"side":"right","key":"k","ts":20,"value":"v10","op":"-U"}
{"side":"right","key":"k","ts":30,"value":"v30","op":"+U"}
{"side":"right","key":"k","ts":40,"op":"-D"}
{"side":"left","key":"k","ts":5,"value":"p5"}
{"side":"left","key":"k","ts":15,"value":"p15"}
{"side":"left","key":"k","ts":25,"value":"p25"}
{"side":"left","key":"k","ts":35,"value":"p35"}
{"side":"left","key":"k","ts":45,"value":"p45"}
`
	got, _, _ := runEvents(t, job, in, Options{})
	eqLines(t, got, []string{
		`{"left":"p5","right":"v0","ts":5}`,
		`{"left":"p15","right":"v10","ts":15}`,
		`{"left":"p25","right":null,"ts":25}`,
		`{"left":"p35","right":"v30","ts":35}`,
		`{"left":"p45","right":null,"ts":45}`,
	})
	got, _, _ = runEvents(t, "type: temporal-latest\n", in, Options{})
	// Processing time: every probe arrives after the -D, so none joins.
	if len(got) != 0 {
		t.Fatalf("temporal-latest after a delete: %v", got)
	}
}

// TestReplayEventsCDCOps: Debezium ops and Flink changelog ops give the same
// result; a -U then +U of one row is an update, also across a snapshot; a
// -U alone is a delete.
func TestReplayEventsCDCOps(t *testing.T) {
	job := "type: cdc\nleft: {name: users, pk: id, join_on: id}\nright: {name: domains, pk: id, join_on: user_id}\n"
	deb := `{"side":"users","op":"c","after":{"id":1,"n":"a"}}
{"side":"domains","op":"c","after":{"id":7,"user_id":1}}
{"side":"domains","op":"u","before":{"id":7,"user_id":1},"after":{"id":7,"user_id":2}}
{"side":"users","op":"c","after":{"id":2,"n":"b"}}
{"side":"users","op":"d","before":{"id":2,"n":"b"}}
`
	flink := `{"side":"left","op":"+I","value":{"id":1,"n":"a"}}
{"side":"right","op":"+I","after":{"id":7,"user_id":1}}
{"side":"right","op":"-U","before":{"id":7,"user_id":1}}
{"snapshot":true}
{"watermark":3}
{"side":"right","op":"+U","value":{"id":7,"user_id":2}}
{"side":"left","op":"+I","value":{"id":2,"n":"b"}}
{"side":"left","op":"-U","value":{"id":2,"n":"b"}}
`
	a, _, _ := runEvents(t, job, deb, Options{})
	b, _, sum := runEvents(t, job, flink, Options{})
	eqLines(t, b, a)
	eqLines(t, a, []string{
		`{"left":{"id":1,"n":"a"},"right":{"id":7,"user_id":1},"ts":null,"op":"+I"}`,
		`{"left":{"id":1,"n":"a"},"right":{"id":7,"user_id":1},"ts":null,"op":"-D"}`,
		`{"left":{"id":2,"n":"b"},"right":{"id":7,"user_id":2},"ts":null,"op":"+I"}`,
		`{"left":{"id":2,"n":"b"},"right":{"id":7,"user_id":2},"ts":null,"op":"-D"}`,
	})
	if sum.Watermark != nil || sum.Watermarks != 1 {
		t.Fatalf("summary %+v", sum)
	}
}

// TestReplayEventsErrors: a line that cannot be applied stops the replay
// with a *LineError naming it.
func TestReplayEventsErrors(t *testing.T) {
	const win = "type: window\nwindow: {assigner: tumbling, size: 2}\nleft: {name: orange}\nright: {name: green}\n"
	const tmp = "type: temporal\n"
	const cdc = "type: cdc\nleft: {name: users, pk: id, join_on: id}\nright: {name: domains, pk: id, join_on: user_id}\n"
	ok := `{"side":"left","key":"k","ts":1,"value":1}` + "\n"
	for _, tc := range []struct {
		name, job, input string
		line             int
		want             string
	}{
		{"not json", win, ok + "{\n", 2, "not a JSON object"},
		{"not an object", win, ok + ok + "[1]\n", 3, "not a JSON object"},
		{"null", win, "null\n", 1, "got null"},
		{"trailing", win, ok + `{"watermark":1} x` + "\n", 2, "trailing data"},
		{"unknown side", win, ok + `{"side":"blue","key":"k","ts":1}` + "\n", 2, `unknown side "blue"`},
		{"side not a string", win, `{"side":1,"key":"k","ts":1}`, 1, "side: want a string"},
		{"no side", win, `{"key":"k","ts":1}`, 1, `want "side"`},
		{"unknown field", win, `{"side":"left","key":"k","ts":1,"vaule":1}`, 1, `unknown field "vaule"`},
		{"missing key", win, `{"side":"left","ts":1}`, 1, "key: missing"},
		{"object key", win, `{"side":"left","key":{"a":1},"ts":1}`, 1, "key: want a JSON scalar"},
		{"missing ts", win, `{"side":"orange","key":"k"}`, 1, "ts: missing"},
		{"fractional ts", win, `{"side":"orange","key":"k","ts":1.5}`, 1, "not an integer"},
		{"bad ts", win, `{"side":"orange","key":"k","ts":true}`, 1, "ts:"},
		{"bad watermark", win, `{"watermark":"soon"}`, 1, "watermark:"},
		{"watermark and more", win, `{"watermark":1,"side":"left"}`, 1, `takes no other field`},
		{"update on append-only", win, `{"side":"left","key":"k","ts":1,"op":"+U"}`, 1, "append-only"},
		{"delete on probe side", tmp, `{"side":"left","key":"k","ts":1,"op":"-D"}`, 1, "append-only"},
		{"debezium op on event time", tmp, `{"side":"right","key":"k","ts":1,"op":"u"}`, 1, "for a cdc join"},
		{"before on event time", win, `{"side":"left","key":"k","ts":1,"after":{}}`, 1, "only for a cdc join"},
		{"bad after", cdc, `{"side":"users","op":"c","after":[1]}`, 1, "after: want a JSON object"},
		{"cdc without op", cdc, `{"side":"users","after":{"id":1}}`, 1, "op: missing"},
		{"cdc bad op", cdc, `{"side":"users","op":"x","after":{"id":1}}`, 1, `op: "x"`},
		{"cdc key", cdc, `{"side":"users","op":"c","key":1,"after":{"id":1}}`, 1, "key: not for a cdc join"},
		{"cdc create without after", cdc, `{"side":"users","op":"+I"}`, 1, "after: missing"},
		{"cdc delete without before", cdc, `{"side":"users","op":"d","after":{"id":1}}`, 1, "before: missing"},
		{"cdc value on debezium op", cdc, `{"side":"users","op":"c","value":{"id":1}}`, 1, "carries before and after"},
		{"cdc scalar value", cdc, `{"side":"users","op":"+I","value":3}`, 1, "must be a JSON object"},
		{"bad snapshot", win, `{"snapshot":1}`, 1, "snapshot: want true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			_, err := RunEvents(mustJob(t, tc.job), strings.NewReader(tc.input), &out, Options{})
			var le *LineError
			if !errors.As(err, &le) || le.Line != tc.line || le.Input != "input" {
				t.Fatalf("got %v, want a *LineError at input line %d", err, tc.line)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fmt.Sprintf("input line %d:", tc.line)) {
				t.Fatalf("error %q does not say %q at input line %d", err, tc.want, tc.line)
			}
		})
	}
}

// TestReplayParseJob: node job files and bare specs, and what each rejects,
// naming the field.
func TestReplayParseJob(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       string // error substring; "" = valid
		form, typ  string
	}{
		{name: "node job file with everything", yaml: `name: j
join:
  type: interval
  left: {name: orange, key: k, ts: ts}
  right: {name: green, key: k, ts: ts}
  lower: -2ms
  upper: 1ms
  project: [{name: o, from: orange.v}]
sources:
  - {name: o, type: file, path: o.jsonl, side: orange}
sinks: [{type: stdout}]
state: {store: embedded}
`, form: FormJob, typ: TypeInterval},
		{name: "job without name or sides", yaml: "join: {type: window, window: {type: session, gap: 1s}}\n", form: FormJob, typ: TypeWindow},
		{name: "job outer window", yaml: "join: {type: window, mode: full, window: {type: tumbling, size: 2ms}}\n", form: FormJob, typ: TypeWindow},
		{name: "job temporal-latest", yaml: "join: {type: temporal-latest, mode: left}\n", form: FormJob, typ: TypeTemporalLatest},
		{name: "job cdc", yaml: "join: {type: cdc, left: {name: u, pk: id, join_on: id}, right: {name: d, pk: id, join_on: uid}}\n", form: FormJob, typ: TypeCDC},
		{name: "bare spec", yaml: "type: interval\ninterval: {lower: -2ms, upper: 1ms}\n", form: FormSpec, typ: TypeInterval},
		{name: "bare spec with columns", yaml: "type: window\nwindow: {assigner: tumbling, size: 2}\nleft: {name: a, key: k, ts: t}\nright: {name: b, key: k, ts: t}\nproject: [{name: x, from: a.v}]\n", form: FormSpec, typ: TypeWindow},
		{name: "job lower > upper", yaml: "join: {type: interval, lower: 5ms, upper: 2ms}\n", want: "join.lower: must be <= upper (5 > 2)"},
		{name: "spec lower > upper", yaml: "type: interval\ninterval: {lower: 5, upper: 2}\n", want: "interval.lower: must be <= upper (5 > 2)"},
		{name: "job exclusive leaves nothing", yaml: "join: {type: interval, lower: 0ms, upper: 1ms, lower_exclusive: true, upper_exclusive: true}\n", want: "leave no time"},
		{name: "job exclusive time-bounded", yaml: "join: {type: time-bounded, upper: 1ms, lower_exclusive: true}\n", want: "join.lower_exclusive"},
		{name: "job sub-ms", yaml: "join: {type: interval, lower: 0ms, upper: 1500us}\n", want: "join.upper: 1.5ms is not a whole number"},
		{name: "job bounds on window", yaml: "join: {type: window, window: {type: tumbling, size: 2ms}, upper: 1ms}\n", want: "join.lower: lower, upper"},
		{name: "job window on interval", yaml: "join: {type: interval, window: {type: tumbling, size: 2ms}}\n", want: "join.window: only for window joins"},
		{name: "job bad window type", yaml: "join: {type: window, window: {type: hopping, size: 2ms}}\n", want: "join.window.type"},
		{name: "job interval outer", yaml: "join: {type: interval, mode: left}\n", want: "join.mode"},
		{name: "job temporal full", yaml: "join: {type: temporal, mode: full}\n", want: "type: must be inner or left"},
		{name: "job unknown type", yaml: "join: {type: lookup}\n", want: "join.type: must be"},
		{name: "job unknown field", yaml: "join: {type: window}\nextra: 1\n", want: "field extra not found"},
		{name: "job bad end", yaml: "join: {type: temporal}\nreplay: {end_of_input: drain}\n", want: "replay.end_of_input: must be flush or hold"},
		{name: "spec bad end", yaml: "type: temporal\nend_of_input: later\n", want: "end_of_input: must be flush or hold"},
		{name: "cdc missing pk", yaml: "join: {type: cdc, left: {name: u, join_on: id}, right: {name: d, pk: id, join_on: uid}}\n", want: "join.left.pk"},
		{name: "same side names", yaml: "type: temporal\nleft: {name: a}\nright: {name: a}\n", want: "right.name: must differ"},
		{name: "neither", yaml: "name: x\n", want: "neither a node job file"},
		{name: "both", yaml: "type: window\njoin: {}\n", want: "both join:"},
		{name: "empty", yaml: "", want: "neither"},
		{name: "not yaml", yaml: "join: [", want: "replay: job:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := ParseJob([]byte(tc.yaml))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want an error saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Join is the join in the job package's dialect, whichever the form.
			if j.Form != tc.form || j.Join.Type != tc.typ || j.Form == FormSpec && j.Spec.Type != tc.typ {
				t.Fatalf("form %s type %s (spec %q), want %s %s", j.Form, j.Join.Type, j.Spec.Type, tc.form, tc.typ)
			}
		})
	}
}

// TestReplayEventsIntervalOracle compares random interval joins, all
// elements on time, with the brute-force pairs.
func TestReplayEventsIntervalOracle(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for range 50 {
		lo := rng.Int64N(7) - 4
		hi := lo + rng.Int64N(4)
		type el struct {
			side string
			ts   int64
		}
		var es []el
		var in strings.Builder
		for i := range 30 {
			e := el{[]string{"left", "right"}[rng.IntN(2)], rng.Int64N(20)}
			es = append(es, e)
			fmt.Fprintf(&in, `{"side":%q,"key":"k","ts":%d,"value":%d}`+"\n", e.side, e.ts, i)
		}
		var want []string
		for i, a := range es {
			for k, b := range es {
				if a.side == "left" && b.side == "right" && a.ts+lo <= b.ts && b.ts <= a.ts+hi {
					want = append(want, fmt.Sprintf(`{"left":%d,"right":%d,"ts":%d}`, i, k, max(a.ts, b.ts)))
				}
			}
		}
		got, _, _ := runEvents(t, fmt.Sprintf("type: interval\ninterval: {lower: %d, upper: %d}\n", lo, hi), in.String(), Options{})
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d bounds [%d,%d]:\n--- got\n%s\n--- want\n%s", seed, lo, hi, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
