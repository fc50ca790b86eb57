package ingest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/streamshard"

	"github.com/redis/go-redis/v9"
)

// RedisOption configures RedisStream.
type RedisOption interface{ applyRedis(*redisOptions) }

type redisOptions struct {
	conn   redisopts.Options // Addr is RedisStream's addr
	maxLen int64
}

type redisOpt func(*redisOptions)

func (f redisOpt) applyRedis(o *redisOptions) { f(o) }

// RedisAuth authenticates with an ACL user (or "" for requirepass) and a
// password. Default: no authentication.
func RedisAuth(username, password string) RedisOption {
	return redisOpt(func(o *redisOptions) { o.conn.Username, o.conn.Password = username, password })
}

// RedisDB selects the database number. Default 0.
func RedisDB(db int) RedisOption { return redisOpt(func(o *redisOptions) { o.conn.DB = db }) }

// RedisTLS connects with TLS using c (cloned). Default: plain TCP.
func RedisTLS(c *tls.Config) RedisOption {
	return redisOpt(func(o *redisOptions) {
		if c != nil {
			o.conn.TLS = c.Clone()
		}
	})
}

// RedisConnection connects as c says (its Addr aside: RedisStream's addr
// is the server): the connection a Redis connector's configuration gives
// (redisopts.Config.Options), credentials, database, TLS and error hook
// at once.
func RedisConnection(c redisopts.Options) RedisOption {
	return redisOpt(func(o *redisOptions) { o.conn = c })
}

// RedisMaxLen trims the stream to about n entries on each XADD (MAXLEN ~).
// Default 0: no trimming.
func RedisMaxLen(n int64) RedisOption { return redisOpt(func(o *redisOptions) { o.maxLen = n }) }

// RedisStreamAppender appends to a Redis stream. It is safe for concurrent
// use.
type RedisStreamAppender struct {
	client *redis.Client
	stream string
	maxLen int64
}

var _ Appender = (*RedisStreamAppender)(nil)

// RedisStream returns an Appender that adds each value to stream on the
// Redis server at addr as an entry with the field "value". It does not
// connect until the first Append. It fails for an empty addr or stream, a
// negative DB or MaxLen.
func RedisStream(addr, stream string, opts ...RedisOption) (*RedisStreamAppender, error) {
	var o redisOptions
	for _, opt := range opts {
		opt.applyRedis(&o)
	}
	var errs []error
	if addr == "" {
		errs = append(errs, errors.New("ingest: redis addr is required"))
	}
	if stream == "" {
		errs = append(errs, errors.New("ingest: redis stream is required"))
	}
	if o.conn.DB < 0 {
		errs = append(errs, fmt.Errorf("ingest: RedisDB %d is negative", o.conn.DB))
	}
	if o.maxLen < 0 {
		errs = append(errs, fmt.Errorf("ingest: RedisMaxLen %d is negative", o.maxLen))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	o.conn.Addr = addr
	client := o.conn.Client()
	return &RedisStreamAppender{client: client, stream: stream, maxLen: o.maxLen}, nil
}

// Append adds one entry per value with pipelined XADDs (one round trip) and
// returns once Redis answered all of them. On error a prefix of the values
// may have been added.
func (a *RedisStreamAppender) Append(ctx context.Context, values [][]byte) error {
	if len(values) == 0 {
		return nil
	}
	_, err := a.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, v := range values {
			p.XAdd(ctx, &redis.XAddArgs{
				Stream: a.stream,
				MaxLen: a.maxLen,
				Approx: a.maxLen > 0,
				Values: []any{streamshard.ValueField, v},
			})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ingest: xadd %d entries to %s: %w", len(values), a.stream, err)
	}
	return nil
}

// Close closes the connection pool.
func (a *RedisStreamAppender) Close() error {
	if err := a.client.Close(); err != nil {
		return fmt.Errorf("ingest: close redis: %w", err)
	}
	return nil
}
