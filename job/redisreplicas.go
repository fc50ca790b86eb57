package job

// checkRedisReplicas reports what is wrong with min_replicas and
// replica_timeout: set outside state.redis, negative, or min_replicas with
// a cluster (WAIT counts the replicas of the connection's own master, and
// a cluster batch spans masters).
func (s *Spec) checkRedisReplicas(bad func(field, format string, a ...any)) {
	for _, b := range s.redisBlocks() {
		if b.field != "state.redis" && (b.cfg.MinReplicas != 0 || b.cfg.ReplicaTimeout != 0) {
			bad(b.field, "min_replicas and replica_timeout are supported for state.redis only")
		}
	}
	r := s.State.Redis
	if r.MinReplicas < 0 {
		bad("state.redis.min_replicas", "must not be negative")
	}
	if r.ReplicaTimeout < 0 {
		bad("state.redis.replica_timeout", "must not be negative")
	}
	if s.State.Store == "redis" && r.MinReplicas > 0 && len(r.Cluster.Addrs) > 0 {
		bad("state.redis.min_replicas", "is not supported with a cluster (one server only)")
	}
}
