package job

import (
	"crypto/tls"

	"github.com/joinery/joinery/connopts"
)

// RedisTLS configures TLS to a Redis server (Redis 6+ `tls-port`, managed
// Redis services); see connopts.TLS. Paths are relative to the job file.
type RedisTLS = connopts.TLS

// RedisTLSConfig builds the TLS configuration of r: nil when r does not use
// TLS, an error naming what is wrong (an unreadable file, a bad PEM, a
// certificate without its key).
func (s *Spec) RedisTLSConfig(r Redis) (*tls.Config, error) {
	return r.TLS.Config(s.Resolve)
}

// redisBlock is one Redis connection setting of the job and its field path.
type redisBlock struct {
	field string
	cfg   Redis
}

// redisBlocks lists the Redis settings the job checks itself: state.redis
// (a connector checks its own redis block: connectors.Validator.Redis).
func (s *Spec) redisBlocks() []redisBlock {
	if s.State.Store == "redis" {
		return []redisBlock{{"state.redis", s.State.Redis}}
	}
	return nil
}
