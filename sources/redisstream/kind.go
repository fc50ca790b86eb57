package redisstream

import (
	"context"
	"fmt"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/sources"
)

// Entry is the configuration of a redis-stream source in a job file.
type Entry struct {
	Redis  redisopts.Config `yaml:"redis"`
	Stream string           `yaml:"stream"`
	Group  string           `yaml:"group"`
	// Shards reads the shard streams <stream>.0 … (see Config.Shards).
	Shards int `yaml:"shards"`
	// Lease is Config.Lease (default 10s).
	Lease time.Duration `yaml:"lease"`
	// Consumer is this node's consumer name (default: the node's name).
	Consumer string `yaml:"consumer"`
	// Repartition "stream" repartitions the shards by the join key
	// (Config.RepartitionTo; job validates it).
	Repartition string `yaml:"repartition"`
	// TrimAcked is Config.TrimAcked.
	TrimAcked bool `yaml:"trim_acked"`
}

// Validate reports every bad field.
func (e *Entry) Validate(v *connectors.Validator) {
	v.Redis("redis", e.Redis)
	v.Require("stream", e.Stream != "")
	v.Require("group", e.Group != "")
	if e.Lease != 0 && e.Lease < 100*time.Millisecond {
		v.Bad("lease", "must be at least 100ms (default 10s)")
	}
	if e.Shards < 0 || e.Shards > MaxShards {
		v.Bad("shards", "must be 0 (one stream) to %d (got %d)", MaxShards, e.Shards)
	}
}

// Kind is the redis-stream source's registry entry (connectors/all). HTTP
// ingest appends to its stream.
var Kind = connectors.SourceKind{
	Type:   "redis-stream",
	Shards: true,
	New:    func() connectors.Config { return new(Entry) },
	Open: func(ctx context.Context, c connectors.Config, env *connectors.SourceEnv) (sources.Source, error) {
		e := c.(*Entry)
		consumer := e.Consumer
		if consumer == "" {
			consumer = env.Consumer
		}
		tc, err := e.Redis.TLS.Config(env.Resolve)
		if err != nil {
			return nil, fmt.Errorf("source %s: redis.tls: %w", env.Name, err)
		}
		o := e.Redis.Options(tc)
		rc := Config{Name: env.Name, Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLS: o.TLS,
			Stream: e.Stream, Group: e.Group, Consumer: consumer, Lease: e.Lease, OnPartitions: env.OnLease, Applied: env.Applied, Lineage: env.Lineage,
			TrimAcked: e.TrimAcked, OnRedisError: env.OnRedisError}
		if e.Repartition != "" {
			rc.RepartitionTo = streamshard.RepartitionStream(e.Stream, e.Group)
		}
		if e.Shards > 0 {
			rc.Shards, rc.Members = e.Shards, env.Members
			if env.Member != nil {
				rc.Member = env.Member(consumer)
			}
		}
		return Open(ctx, rc)
	},
	Append: func(ctx context.Context, c connectors.Config, env connectors.Env) (connectors.Appender, error) {
		e := c.(*Entry)
		tc, err := e.Redis.TLS.Config(env.Resolve)
		if err != nil {
			return nil, fmt.Errorf("redis.tls: %w", err)
		}
		return ingest.RedisStream(e.Redis.Addr, e.Stream, ingest.RedisAuth(e.Redis.Username, e.Redis.Password),
			ingest.RedisDB(e.Redis.DB), ingest.RedisTLS(tc))
	},
}
