package deadletter

import (
	"context"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/sinks/jsonl"
	"github.com/joinery/joinery/sinks/kafka"
	"github.com/joinery/joinery/sinks/redisstream"
)

// Kind is a dead-letter output's registry entry (connectors/all): the
// configuration of the matching sink (dead_letter's type, path, redis,
// stream, kafka) and a Writer.
type Kind = connectors.Kind[connectors.Env, Writer]

// FileKind, KafkaKind and RedisStreamKind are the dead-letter outputs.
var (
	FileKind = Kind{
		Type: "file",
		New:  func() connectors.Config { return new(jsonl.Entry) },
		Open: func(_ context.Context, c connectors.Config, env connectors.Env) (Writer, error) {
			path := env.Resolve(c.(*jsonl.Entry).Path)
			f, err := OpenFile(path)
			if err == nil && f.Cut() > 0 {
				env.Logger().Warn("dead_letter: cut a partial last line off the file (a write cut short by a kill; its records are written again)", "path", path, "bytes", f.Cut())
			}
			return f, err
		},
	}
	KafkaKind = Kind{
		Type: "kafka",
		New:  func() connectors.Config { return new(kafka.Entry) },
		Open: func(ctx context.Context, c connectors.Config, env connectors.Env) (Writer, error) {
			cfg, err := c.(*kafka.Entry).Config(env)
			if err != nil {
				return nil, err
			}
			return OpenKafka(ctx, cfg)
		},
	}
	RedisStreamKind = Kind{
		Type: "redis-stream",
		New:  func() connectors.Config { return new(redisstream.Entry) },
		Open: func(ctx context.Context, c connectors.Config, env connectors.Env) (Writer, error) {
			cfg, err := c.(*redisstream.Entry).Config(env)
			if err != nil {
				return nil, err
			}
			cfg.Shards = 0
			return OpenRedisStream(ctx, cfg)
		},
	}
)
