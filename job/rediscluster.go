package job

import (
	"fmt"
	"net"
	"strings"

	"github.com/joinery/joinery/connopts/redisopts"
)

// RedisCluster names a Redis Cluster, for state.redis only (see
// redisopts.Cluster).
type RedisCluster = redisopts.Cluster

// EnvRedisCluster overrides state.redis.cluster.addrs (comma separated);
// set, it also clears state.redis.addr of the file, as JOINERY_REDIS_ADDR
// clears the file's cluster.
const EnvRedisCluster = "JOINERY_REDIS_CLUSTER"

// applyRedisClusterEnv applies EnvRedisAddr's and EnvRedisCluster's effect
// on the other form of state.redis; run after applyEnv.
func (s *Spec) applyRedisClusterEnv(getenv func(string) string) {
	addr, cluster := getenv(EnvRedisAddr), getenv(EnvRedisCluster)
	if addr != "" && cluster == "" {
		s.State.Redis.Cluster.Addrs = nil
	}
	if cluster != "" {
		s.State.Redis.Cluster.Addrs = nil
		for a := range strings.SplitSeq(cluster, ",") {
			if a = strings.TrimSpace(a); a != "" {
				s.State.Redis.Cluster.Addrs = append(s.State.Redis.Cluster.Addrs, a)
			}
		}
		if addr == "" {
			s.State.Redis.Addr = ""
		}
	}
}

// checkRedisCluster reports what is wrong with the job's Redis Cluster
// settings: a cluster outside state.redis, one with addr or db set too,
// an address that is not host:port.
func (s *Spec) checkRedisCluster(bad func(field, format string, a ...any)) {
	for _, b := range s.redisBlocks() {
		if b.field != "state.redis" && len(b.cfg.Cluster.Addrs) > 0 {
			bad(b.field+".cluster", "is supported for state.redis only")
		}
	}
	r := s.State.Redis
	if s.State.Store != "redis" || len(r.Cluster.Addrs) == 0 {
		return
	}
	if r.Addr != "" {
		bad("state.redis", "set addr or cluster.addrs, not both")
	}
	if r.DB != 0 {
		bad("state.redis.db", "must be 0 with a cluster (a Redis Cluster has only database 0)")
	}
	for i, a := range r.Cluster.Addrs {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			bad(fmt.Sprintf("state.redis.cluster.addrs[%d]", i), "must be host:port (got %q)", a)
		}
	}
}
