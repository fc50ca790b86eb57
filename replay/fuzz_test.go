package replay

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzReplayScript feeds arbitrary scripts to Run for a cdc and an
// event-time spec. Properties: no panic; every error is a *LineError naming
// a line that exists; a script that runs gives the same bytes twice.
func FuzzReplayScript(f *testing.F) {
	for _, s := range []string{
		`{"side":"orange","row":{"k":"a","ts":1,"v":"x"}}` + "\n" + `{"watermark":5}`,
		`{"side":"green","op":"d","row":{"k":"a","ts":1}}`,
		`{"snapshot":true}` + "\n" + `{"comment":"c"}` + "\n\n",
		`{"side":"users","op":"c","after":{"id":1,"name":"a"}}` + "\n" + `{"side":"domains","op":"u","before":{"id":2,"user_id":1},"after":{"id":2,"user_id":3}}`,
		`{"side":"domains","schema":{},"payload":{"op":"d","before":{"id":2,"user_id":3}}}`,
		`{"side":"users","payload":null}`,
		`{"watermark":"2024-01-01T00:00:00Z"}`,
		`{"watermark":-9223372036854775808}` + "\n" + `{"watermark":9223372036854775807}`,
		`{"side":"orange","row":{"k":"a","ts":9223372036854775807}}` + "\n" + `{"watermark":9223372036854775807}`,
		`{`, `[]`, `null`, "\x00", `{"side":"orange","row":{"k":true,"ts":-1}} x`,
	} {
		f.Add(s)
	}
	specs := []*Spec{
		mustSpec(f, "type: cdc\nmode: full\nleft: {name: users, pk: id, join_on: id}\nright: {name: domains, pk: id, join_on: user_id}\n"),
		mustSpec(f, "type: window\nwindow: {assigner: session, gap: 2}\nallowed_lateness: 3\n"+orangeGreen),
		mustSpec(f, "type: cogroup-outer\nmode: full\nwindow: {assigner: sliding, size: 3, slide: 2, offset: 1}\n"+orangeGreen),
		mustSpec(f, "type: interval\ninterval: {lower: -2, upper: 1, lower_exclusive: true}\n"+orangeGreen),
		mustSpec(f, "type: time-bounded\nmode: full\ninterval: {lower: -1, upper: 2}\n"+orangeGreen),
		mustSpec(f, "type: temporal\nmode: left\n"+orangeGreen),
		mustSpec(f, "type: temporal-latest\nmode: left\n"+orangeGreen),
	}
	f.Fuzz(func(t *testing.T, script string) {
		lines := strings.Count(script, "\n") + 1
		for _, spec := range specs {
			var a, b strings.Builder
			_, err := Run(spec, strings.NewReader(script), &a)
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) || le.Line < 1 || le.Line > lines {
					t.Fatalf("%s: error %v is not a *LineError within %d lines", spec.Type, err, lines)
				}
				continue
			}
			if _, err := Run(spec, strings.NewReader(script), &b); err != nil || a.String() != b.String() {
				t.Fatalf("%s: second run differs (%v)", spec.Type, err)
			}
		}
	})
}

// TestReplayWriteError: a failing writer stops the replay with its error.
func TestReplayWriteError(t *testing.T) {
	spec := mustSpec(t, "type: temporal-latest\nmode: left\n"+orangeGreen)
	_, err := Run(spec, strings.NewReader(strings.Repeat(`{"side":"orange","row":{"k":"a","ts":1,"v":"xxxxxxxx"}}`+"\n", 1000)), failWriter{})
	if !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("got %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }
