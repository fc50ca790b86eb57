package replay

import (
	"errors"
	"strings"
	"testing"
)

// FuzzReplayEventsInput feeds arbitrary events input to the decoder and to
// RunEvents for every join type. Properties: no panic; every error is a
// *LineError naming an input line that exists; a run that succeeds gives
// the same bytes (outputs and late lines) twice.
func FuzzReplayEventsInput(f *testing.F) {
	for _, s := range []string{
		`{"side":"left","key":"a","ts":1,"value":{"x":[1,2]}}` + "\n" + `{"watermark":5}`,
		`{"side":"right","key":1.0,"ts":1,"value":null,"op":"+U"}` + "\n" + `{"side":"right","key":1,"ts":2,"op":"-D"}`,
		`{"side":"left","key":null,"ts":1}` + "\n" + `{"side":"right","key":true,"ts":-1,"comment":"c"}`,
		`{"side":"left","op":"c","after":{"id":1}}` + "\n" + `{"side":"right","op":"-U","value":{"id":2,"user_id":1}}` + "\n" + `{"snapshot":true}` + "\n" + `{"side":"right","op":"+U","value":{"id":2,"user_id":3}}`,
		`{"side":"right","op":"d","before":{"id":2,"user_id":null}}`,
		`{"watermark":-9223372036854775808}` + "\n" + `{"watermark":9223372036854775807}`,
		`{"side":"left","key":"a","ts":9223372036854775807,"value":1}` + "\n" + `{"side":"right","key":"a","ts":-9223372036854775808,"value":1}`,
		`{"side":"left","key":1e400,"ts":1}`, `{"side":"left","key":"a","ts":"2024-01-01T00:00:00Z"}`,
		`{`, `[]`, `null`, "\x00", `{"comment":"only"}`, "\n\n", `{"side":"left","key":"a","ts":1} x`,
	} {
		f.Add(s)
	}
	sides := "left: {name: orange}\nright: {name: green}\n"
	var jobs []*Job
	for _, y := range []string{
		"type: cdc\nmode: full\nleft: {name: users, pk: id, join_on: id}\nright: {name: domains, pk: id, join_on: user_id}\n",
		"type: window\nwindow: {assigner: session, gap: 2}\nallowed_lateness: 3\n" + sides,
		"type: cogroup-outer\nmode: full\nwindow: {assigner: sliding, size: 3, slide: 2, offset: 1}\n" + sides,
		"type: interval\ninterval: {lower: -2, upper: 1, lower_exclusive: true}\nend_of_input: hold\n" + sides,
		"type: time-bounded\nmode: full\ninterval: {lower: -1, upper: 2}\n" + sides,
		"type: temporal\nmode: left\n" + sides,
		"type: temporal-latest\nmode: left\n" + sides,
	} {
		jobs = append(jobs, mustJob(f, y))
	}
	f.Fuzz(func(t *testing.T, input string) {
		for _, l := range strings.Split(input, "\n") {
			_, _ = decodeEventLine([]byte(l))
		}
		lines := strings.Count(input, "\n") + 1
		for _, jb := range jobs {
			var a, al, b, bl strings.Builder
			_, err := RunEvents(jb, strings.NewReader(input), &a, Options{Late: &al})
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) || le.Line < 1 || le.Line > lines {
					t.Fatalf("%s: error %v is not a *LineError within %d lines", jb.Spec.Type, err, lines)
				}
				continue
			}
			if _, err := RunEvents(jb, strings.NewReader(input), &b, Options{Late: &bl}); err != nil ||
				a.String() != b.String() || al.String() != bl.String() {
				t.Fatalf("%s: second run differs (%v)", jb.Spec.Type, err)
			}
		}
	})
}
