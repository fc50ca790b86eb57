package redisstream

import (
	"context"
	"fmt"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/sources"
)

// Entry is the configuration of a redis-stream source in a job file: its
// connector fields, decoded once when the job is compiled
// (connectors.Table.Compile).
type Entry struct {
	connectors.RedisEntry `yaml:",inline"`
	Stream                string `yaml:"stream"`
	Group                 string `yaml:"group"`
	// Shards reads the shard streams <stream>.0 … <stream>.<shards-1>
	// instead of the one stream: shard i is partition i, each shard has
	// its own lease, and the shards are spread evenly over the live nodes
	// of the fleet (see Config.Shards and docs/guides/producers.md). 0
	// (default): the one stream, read by one node at a time. At most
	// MaxShards.
	Shards int `yaml:"shards,omitempty"`
	// PartitionedBy says which key the producer shards the stream by:
	// "pk" (default), the row's primary key, or "join_key", the join
	// column (the row's join key as a JSON array, `[42]`:
	// streamshard.KeyGroup). A join_key source is co-partitioned with the
	// join: shard i holds exactly the keys of key group i, so the key
	// actors of group i are placed on the node that reads shard i
	// (docs/concepts/key-groups.md, "Key groups").
	PartitionedBy string `yaml:"partitioned_by,omitempty"`
	// Repartition "stream", on a sharded source partitioned by the
	// primary key, repartitions it by the join key once: the reader of raw
	// shard i writes each record to the repartition stream of its join
	// key's key group (streamshard.RepartitionStream, in the source's
	// Redis) before it acknowledges the raw entry, and the key group's
	// owner reads that stream (RepartitionReader). "" (the default): each
	// event goes to its key's owner over the network.
	Repartition string `yaml:"repartition,omitempty"`
	// Lease is Config.Lease (default 10s).
	Lease time.Duration `yaml:"lease"`
	// Consumer is this node's consumer name (default: the node's name).
	Consumer string `yaml:"consumer"`
	// TrimAcked is Config.TrimAcked (RepartitionReader sets it).
	TrimAcked bool `yaml:"trim_acked,omitempty"`
}

// The values of partitioned_by and repartition.
const (
	PartitionedByPK      = "pk"
	PartitionedByJoinKey = "join_key"
	RepartitionStream    = "stream"
)

// Validate reports every bad field.
func (e *Entry) Validate(v *connectors.Validator) {
	e.ValidateRedis(v)
	v.Require("stream", e.Stream != "")
	v.Require("group", e.Group != "")
	if e.Lease != 0 && e.Lease < 100*time.Millisecond {
		v.Bad("lease", "must be at least 100ms (default 10s)")
	}
	if e.Shards < 0 || e.Shards > MaxShards {
		v.Bad("shards", "must be 0 (one stream) to %d (got %d)", MaxShards, e.Shards)
	}
	switch e.PartitionedBy {
	case "", PartitionedByPK:
	case PartitionedByJoinKey:
		if e.Shards <= 0 {
			v.Bad("partitioned_by", "join_key needs a sharded source (shards > 0): the shards are the key groups")
		}
	default:
		v.Bad("partitioned_by", "must be pk or join_key (got %q)", e.PartitionedBy)
	}
	switch e.Repartition {
	case "":
	case RepartitionStream:
		switch {
		case e.Shards <= 0:
			v.Bad("repartition", "stream needs a sharded redis-stream source (shards > 0): its raw shards are repartitioned into as many key groups")
		case e.PartitionedBy == PartitionedByJoinKey:
			v.Bad("repartition", "a join_key source is co-partitioned already: repartition one partitioned_by pk")
		case v.EventTime:
			v.Bad("repartition", "is for changelog (cdc) joins; an event-time join's source is read where it is")
		}
	default:
		v.Bad("repartition", "must be stream, or unset (got %q)", e.Repartition)
	}
}

// KeyGrouping is the key groups of a source partitioned by the join key or
// repartitioned by it: its shards, by streamshard.KeyGroup.
func (e *Entry) KeyGrouping() (connectors.KeyGrouping, bool) {
	g := connectors.KeyGrouping{Rule: "the shards' FNV-1a (streamshard.KeyGroup)", Groups: e.Shards, Of: streamshard.KeyGroup}
	switch {
	case e.Shards > 0 && e.PartitionedBy == PartitionedByJoinKey:
		g.Field = "partitioned_by"
	case e.Shards > 0 && e.Repartition == RepartitionStream:
		g.Field = "repartition"
	default:
		return connectors.KeyGrouping{}, false
	}
	return g, true
}

// RepartitionReader is, for a source with repartition: stream, the
// source that reads its repartition streams: the same Redis, group,
// lease and shard count over streamshard.RepartitionStream(stream,
// group).0 … .<shards-1>, partitioned by the join key, each trimmed once
// acknowledged.
func (e *Entry) RepartitionReader() (connectors.Config, bool) {
	if e.Repartition != RepartitionStream {
		return nil, false
	}
	r := *e
	r.Stream = streamshard.RepartitionStream(e.Stream, e.Group)
	r.PartitionedBy, r.Repartition, r.TrimAcked = PartitionedByJoinKey, "", true
	return &r, true
}

// AppendRefused refuses HTTP ingest into a sharded source: ingest appends
// to one stream, knowing no primary key.
func (e *Entry) AppendRefused() string {
	if e.Shards > 0 {
		return "a sharded redis-stream source"
	}
	return ""
}

// Config is the source configuration of e with its TLS files read; Open
// adds what the node gives (name, default consumer, hooks, members).
func (e *Entry) Config(env connectors.Env) (Config, error) {
	o, err := e.Options(env)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Options: o, Stream: e.Stream, Group: e.Group, Consumer: e.Consumer, Lease: e.Lease, TrimAcked: e.TrimAcked, Shards: e.Shards}
	if e.Repartition == RepartitionStream {
		cfg.RepartitionTo = streamshard.RepartitionStream(e.Stream, e.Group)
	}
	return cfg, nil
}

// Kind is the redis-stream source's registry entry (connectors/all). HTTP
// ingest appends to its stream.
var Kind = connectors.SourceKind{
	Type: "redis-stream",
	New:  func() connectors.Config { return new(Entry) },
	Open: func(ctx context.Context, c connectors.Config, env *connectors.SourceEnv) (sources.Source, error) {
		cfg, err := c.(*Entry).Config(env.Env)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", env.Name, err)
		}
		if cfg.Consumer == "" {
			cfg.Consumer = env.Consumer
		}
		cfg.Name, cfg.OnPartitions, cfg.Applied, cfg.Lineage = env.Name, env.OnLease, env.Applied, env.Lineage
		if cfg.TrimAcked {
			cfg.KeptFloor = env.KeptFloor
		}
		if cfg.Shards > 0 {
			cfg.Members, cfg.Expect, cfg.ExpectWait = env.Members, env.Expect, env.ExpectWait
			if env.Member != nil {
				cfg.Member = env.Member(cfg.Consumer)
			}
		}
		return Open(ctx, cfg)
	},
	Append: func(ctx context.Context, c connectors.Config, env connectors.Env) (connectors.Appender, error) {
		cfg, err := c.(*Entry).Config(env)
		if err != nil {
			return nil, err
		}
		return ingest.RedisStream(cfg.Addr, cfg.Stream, ingest.RedisConnection(cfg.Options))
	},
}
