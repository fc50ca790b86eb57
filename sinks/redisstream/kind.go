package redisstream

import (
	"context"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/sinks"
)

// Entry is the configuration of a redis-stream sink (or dead-letter
// output) in a job file.
type Entry struct {
	connectors.RedisEntry `yaml:",inline"`
	Stream                string `yaml:"stream"`
	// Shards writes the shard streams <stream>.0 … (see Config.Shards).
	Shards int `yaml:"shards"`
}

// Validate reports every bad field.
func (e *Entry) Validate(v *connectors.Validator) {
	e.ValidateRedis(v)
	v.Require("stream", e.Stream != "")
	if e.Shards < 0 || e.Shards > streamshard.MaxShards {
		v.Bad("shards", "must be 0 (one stream) to %d (got %d)", streamshard.MaxShards, e.Shards)
	}
}

// Config is the sink configuration of e with its TLS files read.
func (e *Entry) Config(env connectors.Env) (Config, error) {
	o, err := e.Options(env)
	if err != nil {
		return Config{}, err
	}
	return Config{Options: o, Stream: e.Stream, Shards: e.Shards}, nil
}

// Kind is the redis-stream sink's registry entry (connectors/all).
var Kind = connectors.SinkKind{
	Type:   "redis-stream",
	Shared: true,
	New:    func() connectors.Config { return new(Entry) },
	Open: func(ctx context.Context, c connectors.Config, env *connectors.SinkEnv) (sinks.Sink, error) {
		cfg, err := c.(*Entry).Config(env.Env)
		if err != nil {
			return nil, err
		}
		cfg.Format = env.Format
		return New(ctx, cfg)
	},
}
