package job

import (
	"crypto/tls"
	"fmt"

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

// redisBlocks lists every Redis setting the job uses.
func (s *Spec) redisBlocks() []redisBlock {
	var bs []redisBlock
	if s.State.Store == "redis" {
		bs = append(bs, redisBlock{"state.redis", s.State.Redis})
	}
	for i, src := range s.Sources {
		if src.Type == "redis-stream" {
			bs = append(bs, redisBlock{fmt.Sprintf("sources[%d].redis", i), src.Redis})
		}
	}
	for i, sk := range s.Sinks {
		if sk.Type == "redis-stream" || sk.Type == "redis-hash" {
			bs = append(bs, redisBlock{fmt.Sprintf("sinks[%d].redis", i), sk.Redis})
		}
	}
	if s.DeadLetter.Type == "redis-stream" {
		bs = append(bs, redisBlock{"dead_letter.redis", s.DeadLetter.Redis})
	}
	return bs
}
