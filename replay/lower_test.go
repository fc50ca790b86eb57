package replay

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/job"
)

// sidesOG are the sides orange and green, keyed by k, timed by ts.
const sidesOG = "left: {name: orange, key: k, ts: ts}\nright: {name: green, key: k, ts: ts}\n"

// TestReplaySpecLowers: a replay spec is sugar for a job file's join
// section: it lowers to the job.Join a node's job file would hold, which
// the job package compiles (Spec.build has no join compiler of its own).
func TestReplaySpecLowers(t *testing.T) {
	og := func(j job.Join) job.Join {
		j.Left = job.Side{Name: "orange", Key: "k", Ts: "ts"}
		j.Right = job.Side{Name: "green", Key: "k", Ts: "ts"}
		return j
	}
	for _, c := range []struct {
		spec string
		want job.Join
	}{
		{"type: cogroup-outer\nmode: full\nwindow: {assigner: sliding, size: 3, slide: 2, offset: 1}\nallowed_lateness: 4\n" + sidesOG,
			og(job.Join{Type: "window", Mode: "full", Window: job.Window{Type: "sliding", Size: 3 * time.Millisecond, Slide: 2 * time.Millisecond, Offset: time.Millisecond},
				AllowedLateness: 4 * time.Millisecond})},
		{"type: interval\ninterval: {lower: -2ms, upper: 1, upper_exclusive: true}\ncondition: 'orange.v < green.v'\nproject: [{name: o, from: orange.v}]\n" + sidesOG,
			og(job.Join{Type: "interval", Mode: "inner", Lower: -2 * time.Millisecond, Upper: time.Millisecond, UpperExclusive: true,
				Condition: "orange.v < green.v", Project: []job.Column{{Name: "o", From: "orange.v"}}})},
		{"type: unbounded\nmode: left\nttl: none\n" + sidesOG, og(job.Join{Type: "unbounded", Mode: "left", TTL: job.TTL{None: true}})},
		{"type: time-bounded\nopen: upper\ninterval: {lower: 0, upper: 0}\nttl: 10s\n" + sidesOG,
			og(job.Join{Type: "time-bounded", Mode: "inner", Open: "upper", TTL: job.TTL{D: 10 * time.Second}})},
		{"type: cdc\nleft: {name: u, pk: id, join_on: id}\nright: {name: d, pk: id, join_on: uid}\ncdc: {ts: max}\n",
			job.Join{Type: "cdc", Mode: "inner", Left: job.Side{Name: "u", PK: "id", JoinOn: "id"}, Right: job.Side{Name: "d", PK: "id", JoinOn: "uid"},
				CDC: job.CDCOptions{Ts: "max"}}},
		{"type: cdc-multi\ntables: [{name: a, pk: id, join_on: id}, {name: b, pk: id, join_on: a_id, kind: left}]\n",
			job.Join{Type: "cdc-multi", Tables: []job.Table{{Name: "a", PK: "id", JoinOn: "id"}, {Name: "b", PK: "id", JoinOn: "a_id", Kind: "left"}}}},
	} {
		s := mustSpec(t, c.spec)
		mode := s.Mode
		if mode == "" && s.Type != TypeCDCMulti {
			mode = "inner"
		}
		if got := s.lower(mode); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s\nlowers to %+v\nwant      %+v", c.spec, got, c.want)
		}
	}
}

// TestReplaySpecMillisRange: a length of time a time.Duration cannot hold
// is refused, naming its field, rather than lowered wrapped around.
func TestReplaySpecMillisRange(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"type: window\nwindow: {assigner: tumbling, size: 9223372036854775807}\n" + sidesOG, "replay: spec: window.size: 9223372036854775807 ms is out of range"},
		{"type: interval\ninterval: {lower: -9223372036855, upper: 0}\n" + sidesOG, "replay: spec: interval.lower: -9223372036855 ms is out of range"},
		{"type: unbounded\nttl: 9223372036855\n" + sidesOG, "replay: spec: ttl: 9223372036855 ms is out of range"},
	} {
		_, err := ParseSpec([]byte(c.spec))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.spec, err, c.want)
		}
	}
	// The largest that fits is kept.
	mustSpec(t, "type: unbounded\nttl: 9223372036854\n"+sidesOG)
}
