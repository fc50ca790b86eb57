package job

import (
	"slices"
	"strings"
	"testing"
)

func TestJobRedisCluster(t *testing.T) {
	for _, c := range []struct{ state, want string }{
		{"{store: redis, redis: {cluster: {addrs: ['r0:6379', 'r1:6379']}}}", ""},
		{"{store: redis, redis: {addr: 'r:6379'}}", ""}, // single server, unchanged
		{"{store: redis, redis: {cluster: {addrs: [r0]}}}", "state.redis.cluster.addrs[0]: must be host:port"},
		{"{store: redis, redis: {cluster: {addrs: [':1']}}}", "state.redis.cluster.addrs[0]: must be host:port"},
		{"{store: redis, redis: {addr: 'r:1', cluster: {addrs: ['r0:1']}}}", "state.redis: set addr or cluster.addrs, not both"},
		{"{store: redis, redis: {db: 2, cluster: {addrs: ['r0:1']}}}", "state.redis.db: must be 0 with a cluster"},
		{"{store: redis, redis: {cluster: {}}}", "state.redis.addr: must be set"},
		{"{store: redis, redis: {cluster: {addrs: ['r0:1'], nodes: 3}}}", "field nodes not found"},
	} {
		s, err := Parse([]byte(good + "state: " + c.state + "\n"))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.state, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.state, err, c.want)
		case c.want == "" && strings.Contains(c.state, "cluster") && !slices.Equal(s.State.Redis.Cluster.Addrs, []string{"r0:6379", "r1:6379"}):
			t.Errorf("%s: parsed %+v", c.state, s.State.Redis)
		}
	}
	// A cluster is for the state store only.
	sink := strings.Replace(good, "sinks:", "sinks:\n  - {type: redis-hash, key: h, redis: {addr: 'a:1', cluster: {addrs: ['c:1']}}}", 1)
	if _, err := Parse([]byte(sink)); err == nil || !strings.Contains(err.Error(), "sinks[0].redis.cluster: is supported for state.redis only") {
		t.Errorf("cluster on a sink: %v", err)
	}
}

func TestJobRedisClusterEnv(t *testing.T) {
	file := good + "state: {store: redis, redis: {addr: 'file:1'}}\n"
	t.Setenv(EnvRedisCluster, "a:1, b:2,")
	s, err := Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if r := s.State.Redis; r.Addr != "" || !slices.Equal(r.Cluster.Addrs, []string{"a:1", "b:2"}) {
		t.Errorf("%s did not replace the file's addr: %+v", EnvRedisCluster, r)
	}
	t.Setenv(EnvRedisCluster, "")
	t.Setenv(EnvRedisAddr, "env:1")
	s, err = Parse([]byte(good + "state: {store: redis, redis: {cluster: {addrs: ['c:1']}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := s.State.Redis; r.Addr != "env:1" || len(r.Cluster.Addrs) != 0 {
		t.Errorf("%s did not replace the file's cluster: %+v", EnvRedisAddr, r)
	}
	t.Setenv(EnvRedisCluster, "a:1")
	if _, err := Parse([]byte(file)); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("both env variables: %v", err)
	}
}
