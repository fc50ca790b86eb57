package redisstream

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks"
)

// ShardOf is the shard of an output among shards: FNV-1a 32 of its primary
// key (record.Output.PK), mod shards — the producer's rule of a sharded
// Redis Streams source (internal/streamshard.Of, which sources/redisstream reads by).
func ShardOf(o record.Output, shards int) int { return streamshard.Of([]byte(o.PK), shards) }

// IDField is the entry field that holds an output's id (the record is in
// streamshard.ValueField).
const IDField = "id"

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("redisstream: sink closed")

// Config configures a Redis Streams sink. The zero value of an optional field
// means its default.
type Config struct {
	// Options are the connection to the Redis server (Addr required; see
	// redisopts.Options): OnRedisError is the node's
	// joinery_redis_errors_total.
	redisopts.Options
	// Stream is the stream key written to. Required.
	Stream string
	// Format encodes the "value" field. Default changelog.Changelog.
	Format changelog.Format
	// MaxLen, when positive, trims the stream to about MaxLen entries on each
	// XADD (MAXLEN ~). Default 0: no trimming.
	MaxLen int64
	// Shards, when positive, writes the shard streams Stream.0 …
	// Stream.<Shards-1> instead of Stream: each output goes to shard
	// ShardOf(its primary key, Shards) — FNV-1a 32 of record.Output.PK
	// (the result's primary key as a JSON array), mod Shards — so every
	// change of an output row lands in one shard, in order, as a sharded
	// Redis Streams source expects. Default 0: the one stream.
	Shards int
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("redisstream: Addr is required"))
	}
	if c.Stream == "" {
		errs = append(errs, errors.New("redisstream: Stream is required"))
	}
	if c.DB < 0 {
		errs = append(errs, fmt.Errorf("redisstream: DB %d is negative", c.DB))
	}
	if c.MaxLen < 0 {
		errs = append(errs, fmt.Errorf("redisstream: MaxLen %d is negative", c.MaxLen))
	}
	if c.Shards < 0 || c.Shards > streamshard.MaxShards {
		errs = append(errs, fmt.Errorf("redisstream: Shards %d is not in 0..%d", c.Shards, streamshard.MaxShards))
	}
	if !c.Format.Valid() {
		errs = append(errs, fmt.Errorf("redisstream: unknown Format %v", c.Format))
	}
	return errors.Join(errs...)
}

// Sink appends outputs to a Redis stream. It is safe for concurrent use,
// though the sinks.Sink contract has one writer at a time.
type Sink struct {
	cfg       Config
	client    *redis.Client
	closeOnce sync.Once
	mu        sync.RWMutex // held for reading by Write, for writing by Close
	closed    bool
}

var _ sinks.Sink = (*Sink)(nil)

// New connects to Redis, checks the connection with PING and returns a sink.
// It does not write into cfg.
func New(ctx context.Context, cfg Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client := cfg.Client()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redisstream: ping %s: %w", cfg.Addr, err)
	}
	return &Sink{cfg: cfg, client: client}, nil
}

// Write appends one entry per output the format does not skip, in batch
// order, with one pipelined round trip, and returns once Redis has answered
// every XADD. An output that cannot be encoded fails the batch before
// anything is sent. If the round trip fails, a prefix of the batch may have
// been appended; a retry appends it again (readers dedupe by id).
func (s *Sink) Write(ctx context.Context, batch []record.Output) error {
	values := make([][]string, 0, len(batch))
	var streams []string
	for _, o := range batch {
		line, ok, err := s.cfg.Format.Marshal(o)
		if err != nil {
			return fmt.Errorf("redisstream: %w", err)
		}
		if ok {
			values = append(values, []string{IDField, o.ID, streamshard.ValueField, string(line)})
			if s.cfg.Shards > 0 {
				streams = append(streams, streamshard.Stream(s.cfg.Stream, ShardOf(o, s.cfg.Shards)))
			}
		}
	}
	return s.appendTo(ctx, streams, values)
}

// Append adds one stream entry per element of entries, each a list of
// field, value pairs, in order, with one pipelined round trip, and returns
// once Redis has answered every XADD (trimmed as MaxLen says). The dead-letter
// output uses it for entries that are not join outputs. A sharded sink puts
// an entry in the shard of FNV-1a 32 of its "id" field's value (shard 0
// without one). If the round trip fails, a prefix may have been appended.
func (s *Sink) Append(ctx context.Context, entries [][]string) error {
	var streams []string
	if s.cfg.Shards > 0 {
		streams = make([]string, len(entries))
		for i, e := range entries {
			shard := 0
			for k := 0; k+1 < len(e); k += 2 {
				if e[k] == IDField {
					shard = streamshard.Of([]byte(e[k+1]), s.cfg.Shards)
					break
				}
			}
			streams[i] = streamshard.Stream(s.cfg.Stream, shard)
		}
	}
	return s.appendTo(ctx, streams, entries)
}

// appendTo appends entries[i] to streams[i] (nil streams: all to Stream).
func (s *Sink) appendTo(ctx context.Context, streams []string, entries [][]string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if len(entries) == 0 {
		return nil
	}
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			stream := s.cfg.Stream
			if streams != nil {
				stream = streams[i]
			}
			p.XAdd(ctx, &redis.XAddArgs{
				Stream: stream,
				MaxLen: s.cfg.MaxLen,
				Approx: s.cfg.MaxLen > 0,
				Values: e,
			})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstream: xadd %d entries to %s: %w", len(entries), s.cfg.Stream, err)
	}
	return nil
}

// Close closes the connection pool after any Write in progress. It is
// idempotent.
func (s *Sink) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		err = s.client.Close()
	})
	if err != nil {
		return fmt.Errorf("redisstream: close: %w", err)
	}
	return nil
}
