package failpoint

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want point
	}{
		{"exit-after-state-write:7", point{exitAfter: 7}},
		{"delay-state-write:150ms", point{delay: 150 * time.Millisecond}},
	} {
		if got, err := parse(tc.v); err != nil || got != tc.want {
			t.Errorf("parse(%q) = %+v, %v; want %+v", tc.v, got, err, tc.want)
		}
	}
	for _, bad := range []string{"exit-after-state-write:0", "exit-after-state-write:x", "exit-after-state-write:", "crash:3", "delay-state-write:", "delay-state-write:-1s", "delay-state-write:5"} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
}
