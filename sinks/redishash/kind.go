package redishash

import (
	"context"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/sinks"
)

// Entry is the configuration of a redis-hash sink in a job file.
type Entry struct {
	connectors.RedisEntry `yaml:",inline"`
	// Key is the Redis hash.
	Key string `yaml:"key"`
}

// Validate reports every bad field.
func (e *Entry) Validate(v *connectors.Validator) {
	e.ValidateRedis(v)
	v.Require("key", e.Key != "")
}

// Config is the sink configuration of e with its TLS files read.
func (e *Entry) Config(env connectors.Env) (Config, error) {
	o, err := e.Options(env)
	if err != nil {
		return Config{}, err
	}
	return Config{Options: o, Key: e.Key}, nil
}

// Kind is the redis-hash sink's registry entry (connectors/all).
var Kind = connectors.SinkKind{
	Type:   "redis-hash",
	Shared: true,
	New:    func() connectors.Config { return new(Entry) },
	Open: func(ctx context.Context, c connectors.Config, env *connectors.SinkEnv) (sinks.Sink, error) {
		cfg, err := c.(*Entry).Config(env.Env)
		if err != nil {
			return nil, err
		}
		return New(ctx, cfg)
	},
}
