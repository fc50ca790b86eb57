package job

import (
	"strings"
	"testing"
	"time"
)

func TestJobRedisReplicas(t *testing.T) {
	for _, c := range []struct {
		state   string
		want    string // error substring; "" = valid
		min     int
		timeout time.Duration
	}{
		{state: "{store: redis, redis: {addr: 'r:1', min_replicas: 1}}", min: 1},
		{state: "{store: redis, redis: {addr: 'r:1', min_replicas: 2, replica_timeout: 250ms}}", min: 2, timeout: 250 * time.Millisecond},
		{state: "{store: redis, redis: {addr: 'r:1'}}"},
		{state: "{store: redis, redis: {addr: 'r:1', min_replicas: -1}}", want: "state.redis.min_replicas: must not be negative"},
		{state: "{store: redis, redis: {addr: 'r:1', replica_timeout: -1s}}", want: "state.redis.replica_timeout: must not be negative"},
		{state: "{store: redis, redis: {cluster: {addrs: ['r0:1']}, min_replicas: 1}}", want: "state.redis.min_replicas: is not supported with a cluster"},
		{state: "{store: redis, redis: {addr: 'r:1', min_replicas: x}}", want: "cannot unmarshal"},
	} {
		s, err := Parse([]byte(good + "state: " + c.state + "\n"))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.state, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.state, err, c.want)
		case c.want == "" && (s.State.Redis.MinReplicas != c.min || s.State.Redis.ReplicaTimeout != c.timeout):
			t.Errorf("%s: parsed %+v", c.state, s.State.Redis)
		}
	}
	sink := strings.Replace(good, "sinks:", "sinks:\n  - {type: redis-hash, key: h, redis: {addr: 'a:1', min_replicas: 1}}", 1)
	if _, err := Parse([]byte(sink)); err == nil || !strings.Contains(err.Error(), "sinks[0].redis: min_replicas and replica_timeout are supported for state.redis only") {
		t.Errorf("min_replicas on a sink: %v", err)
	}
}
