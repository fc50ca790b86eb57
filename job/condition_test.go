package job

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

const condJob = `
name: ads
join:
  type: time-bounded
  mode: left
  left:  {name: visits, key: user, ts: ts}
  right: {name: ads,    key: user, ts: ts}
  lower: 0s
  upper: 2m
%s
sources:
  - {name: v, type: file, path: v.jsonl, side: left}
`

// TestJobConditionRuns compiles condition, left_condition and
// right_condition from a job file and runs them through the time-bounded
// machine: a visit from a country the left condition refuses is padded at
// once; a cheap ad fails the pair condition; a failing expression (a string
// price) counts in ExprErrors and does not match.
func TestJobConditionRuns(t *testing.T) {
	s, err := Parse([]byte(fmt.Sprintf(condJob, `  condition: 'ads.price >= visits.min_price'
  left_condition: 'visits.country != "XX"'
  right_condition: 'ads.active'
  late: {rule: "ts<=wm"}`)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.TimedFactory()
	if err != nil {
		t.Fatal(err)
	}
	j := f()
	var fx joins.Effects
	el := func(side record.Side, ts int64, js string) {
		var row record.Row
		d := json.NewDecoder(strings.NewReader(js))
		d.UseNumber()
		if err := d.Decode(&row); err != nil {
			t.Fatal(err)
		}
		j.OnElement(joins.Element{Side: side, Ts: ts, Row: row, Pos: record.Position{Source: "s", Offset: ts}}, 0, &fx)
	}
	el(record.Left, 1, `{"id":"v1","country":"NL","min_price":10}`)
	el(record.Left, 2, `{"id":"v2","country":"XX","min_price":0}`) // padded at once
	el(record.Right, 3, `{"id":"a1","price":5,"active":true}`)     // too cheap
	el(record.Right, 4, `{"id":"a2","price":12,"active":true}`)    // matches v1
	el(record.Right, 5, `{"id":"a3","price":99,"active":false}`)   // inactive: dropped
	before := ExprErrors.Load()
	el(record.Right, 6, `{"id":"a4","price":"cheap","active":true}`) // the pair condition fails to run
	if ExprErrors.Load() != before+1 {
		t.Errorf("expression errors %d → %d, want one more", before, ExprErrors.Load())
	}
	el(record.Left, 0, `{"id":"v0","country":"NL","min_price":0}`) // ts 0 <= watermark 0: late under ts<=wm
	j.OnTimer(math.MaxInt64, math.MaxInt64, &fx)
	var got []string
	for _, o := range fx.Out {
		id := func(v any) string {
			if r, ok := v.(record.Row); ok {
				return fmt.Sprint(r["id"])
			}
			return "-"
		}
		got = append(got, id(o.Row["visits"])+","+id(o.Row["ads"]))
	}
	if want := "v2,- v1,a2"; strings.Join(got, " ") != want {
		t.Errorf("outputs %q, want %q", strings.Join(got, " "), want)
	}
	if len(fx.Late) != 1 || fx.Late[0].Element.Ts != 0 {
		t.Errorf("late %+v, want the element at 0", fx.Late)
	}
}

// TestJobConditionErrors: each bad condition or late rule is reported
// with its field.
func TestJobConditionErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{`  condition: 'ads.price > '`, "join.condition:"},
		{`  condition: 'ads.price > vists.min_price'`, `join.condition: "ads.price > vists.min_price" names vists; it may name only visits and ads`},
		{`  left_condition: 'ads.price > 1'`, "join.left_condition: \"ads.price > 1\" names ads; it may name only visits"},
		{`  right_condition: 'visits.x'`, "join.right_condition:"},
		{`  condition: 'ads.ts > now().Unix()'`, "join.condition: \"ads.ts > now().Unix()\" reads the clock"},
		{`  late: {rule: "ts<watermark"}`, "join.late.rule: must be ts<wm, ts<=wm or none"},
		{`  type: window
  window: {type: tumbling, size: 1s}
  lower: 0s
  upper: 0s
  late: {rule: none}`, "join.late: rule none is for interval, time-bounded and unbounded joins"},
		{`  type: temporal
  lower: 0s
  upper: 0s
  condition: 'true'`, "join.condition: only for window, interval, time-bounded, unbounded and cdc joins"},
	} {
		yml := fmt.Sprintf(condJob, c.yaml)
		if strings.Contains(c.yaml, "type:") { // replace the join type and bounds
			yml = strings.Replace(strings.Replace(strings.Replace(yml, "  type: time-bounded\n", "", 1), "  lower: 0s\n  upper: 2m\n", "", 1), "  mode: left\n", "", 1)
		}
		_, err := Parse([]byte(yml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n error %v\n want one containing %q", c.yaml, err, c.want)
		}
	}
	// Builtins, let-bound names, closures and nil-safe access are not side names.
	for _, ok := range []string{
		`  condition: 'len(ads.tags) > 0 && lower(visits.country) == "nl"'`,
		`  condition: 'let p = ads.price; p > visits.min_price'`,
		`  condition: 'any(ads.tags, # == visits.country)'`,
		`  left_condition: '(visits?.country ?? "") != ""'`,
	} {
		if _, err := Parse([]byte(fmt.Sprintf(condJob, ok))); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	// A cdc join takes a condition on its pairs; one naming another side
	// is refused.
	if _, err := Parse([]byte(strings.Replace(good, "join:\n", "join:\n  condition: 'users.id > 1'\n", 1))); err != nil {
		t.Errorf("cdc with condition: %v", err)
	}
	_, err := Parse([]byte(strings.Replace(good, "join:\n", "join:\n  condition: 'ads.id > 1'\n", 1)))
	if err == nil || !strings.Contains(err.Error(), "join.condition:") {
		t.Errorf("cdc with a condition naming another side: %v", err)
	}
}

// TestJobUnbounded: type unbounded needs a positive ttl; ttl belongs to it
// alone.
func TestJobUnbounded(t *testing.T) {
	base := strings.Replace(strings.Replace(condJob, "type: time-bounded", "type: unbounded", 1), "  lower: 0s\n  upper: 2m\n", "", 1)
	s, err := Parse([]byte(fmt.Sprintf(base, "  ttl: 1h\n  condition: 'ads.price > 1'")))
	if err != nil {
		t.Fatal(err)
	}
	if f, err := s.TimedFactory(); err != nil || f() == nil {
		t.Fatalf("factory: %v", err)
	}
	for _, c := range []struct{ yaml, want string }{
		{fmt.Sprintf(base, ""), "join.ttl: must be positive"},
		{fmt.Sprintf(condJob, "  ttl: 1h"), "join.ttl: only for unbounded joins"},
	} {
		if _, err := Parse([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}
