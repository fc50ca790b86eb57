package replay

import (
	"strings"
	"testing"
)

func runString(t *testing.T, spec, script string) (string, Summary) {
	t.Helper()
	s, err := ParseSpec([]byte(spec))
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	var out strings.Builder
	sum, err := Run(s, strings.NewReader(script), &out)
	if err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	return out.String(), sum
}

func TestReplayScratch(t *testing.T) {
	out, sum := runString(t, `
type: window
left: {name: orange, key: k, ts: ts}
right: {name: green, key: k, ts: ts}
window: {assigner: tumbling, size: 2ms}
project: [{name: o, from: orange.v}, {name: g, from: green.v}]
`, `{"side":"orange","row":{"k":"a","ts":0,"v":"o0"}}
{"side":"green","row":{"k":"a","ts":1,"v":"g1"}}
{"watermark":1}
{"side":"green","row":{"k":"a","ts":1,"v":"g1"}}
`)
	t.Logf("%s%+v", out, sum)
}
