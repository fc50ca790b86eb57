package kafka

import (
	"context"
	"fmt"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/sources"
)

// Entry is the configuration of a kafka source in a job file (kafka.group
// is the consumer group): its connector fields, decoded once when the job
// is compiled (connectors.Table.Compile).
type Entry struct {
	connectors.KafkaEntry `yaml:",inline"`
	// PartitionedBy "join_key" says the topic is keyed by the join column
	// (Debezium's message.key.columns) and written with Kafka's default
	// partitioner: its partitions are the key groups, the record key
	// bytes of a join key are kafka.partition_key, and every join_key
	// kafka source of a job has that template and, checked when a node
	// starts, the same partition count (Config.KeyGroups). "pk" or unset:
	// the topic is read as it comes.
	PartitionedBy string `yaml:"partitioned_by,omitempty"`
}

// partitionedByJoinKey is the value of sources[].partitioned_by of a topic
// keyed by the join column.
const partitionedByJoinKey = "join_key"

// Validate reports every bad field.
func (e *Entry) Validate(v *connectors.Validator) {
	v.Kafka("kafka", e.Kafka)
	v.Require("kafka.group", e.Kafka.Group != "")
	switch e.Kafka.StartOffset {
	case "", "earliest", "latest", "committed":
	default:
		v.Bad("kafka.start_offset", "must be earliest, latest or committed (got %q)", e.Kafka.StartOffset)
	}
	if e.Kafka.ExactlyOnce {
		v.Bad("kafka.exactly_once", "is a kafka sink's setting: a job with an exactly-once kafka sink commits its kafka sources' offsets in the sink's transactions")
	}
	if err := ValidateRevokeWait(e.Kafka.RevokeWait); err != nil {
		v.Bad("kafka.revoke_wait", "%v", err)
	}
	switch e.PartitionedBy {
	case "", "pk", partitionedByJoinKey:
	default:
		v.Bad("partitioned_by", "must be pk or join_key (got %q)", e.PartitionedBy)
	}
	switch {
	case e.PartitionedBy == partitionedByJoinKey && e.Kafka.PartitionKey == "":
		v.Bad("kafka.partition_key", "is required with partitioned_by: join_key: the record key the producer writes for a join key, e.g. %s for Debezium JSON with message.key.columns set to the join column user_id", `'{"user_id":{key}}'`)
	case e.PartitionedBy == partitionedByJoinKey:
		if err := ValidatePartitionKey(e.Kafka.PartitionKey); err != nil {
			v.Bad("kafka.partition_key", "%v", err)
		}
	case e.Kafka.PartitionKey != "":
		v.Bad("kafka.partition_key", "is only for a source with partitioned_by: join_key")
	}
}

// KeyGrouping is the key groups of a topic partitioned by the join key:
// its partitions, counted when the node starts (Kind.KeyGroups).
func (e *Entry) KeyGrouping() (connectors.KeyGrouping, bool) {
	if e.PartitionedBy != partitionedByJoinKey {
		return connectors.KeyGrouping{}, false
	}
	return connectors.KeyGrouping{Field: "partitioned_by", RuleField: "kafka.partition_key",
		Rule: fmt.Sprintf("Kafka's default partitioner over the record key %q", e.Kafka.PartitionKey)}, true
}

// AppendRefused refuses HTTP ingest into a topic partitioned by the join
// key: ingest produces records without a key, which would follow no key
// group.
func (e *Entry) AppendRefused() string {
	if e.PartitionedBy == partitionedByJoinKey {
		return "a kafka source partitioned by the join key"
	}
	return ""
}

// Config is the source configuration of e with its TLS files read; Open
// adds what the node gives (name, hooks, member name).
func (e *Entry) Config(env connectors.Env) (Config, error) {
	k := e.Kafka
	tc, err := e.TLS(env)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Brokers: k.Brokers, Topic: k.Topic, Group: k.Group, StartOffset: k.StartOffset, ClientID: k.ClientID, TLS: tc, SASL: k.Auth(),
		RevokeWait: k.RevokeWait}
	if e.PartitionedBy == partitionedByJoinKey {
		cfg.KeyGroups, cfg.PartitionKey = true, k.PartitionKey
	}
	return cfg, nil
}

// Kind is the kafka source's registry entry (connectors/all). HTTP ingest
// produces to its topic.
var Kind = connectors.SourceKind{
	Type: "kafka",
	New:  func() connectors.Config { return new(Entry) },
	Open: func(ctx context.Context, c connectors.Config, env *connectors.SourceEnv) (sources.Source, error) {
		cfg, err := c.(*Entry).Config(env.Env)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", env.Name, err)
		}
		cfg.Name, cfg.OnPartitions, cfg.Applied, cfg.Lineage = env.Name, env.OnPartitions, env.Applied, env.Lineage
		cfg.OnRevokeTimeout = env.OnRevokeTimeout
		cfg.TransactionalID = env.TransactionalID
		cfg.Members, cfg.Expect, cfg.ExpectWait = env.Members, env.Expect, env.ExpectWait
		if cfg.KeyGroups && env.Member != nil {
			cfg.Member = env.Member(env.Consumer)
		}
		return New(ctx, cfg)
	},
	KeyGroups: func(ctx context.Context, c connectors.Config, env connectors.Env) (connectors.KeyGroups, error) {
		cfg, err := c.(*Entry).Config(env)
		if err != nil {
			return connectors.KeyGroups{}, err
		}
		counts, err := TopicPartitions(ctx, cfg.Brokers, cfg.ClientID, cfg.TLS, cfg.SASL, []string{cfg.Topic})
		if err != nil {
			return connectors.KeyGroups{}, err
		}
		template := cfg.PartitionKey
		return connectors.KeyGroups{What: "topic " + cfg.Topic, Partitions: counts[cfg.Topic],
			Of: func(key string, partitions int) int { return KeyGroup(template, key, partitions) }}, nil
	},
	Append: func(ctx context.Context, c connectors.Config, env connectors.Env) (connectors.Appender, error) {
		cfg, err := c.(*Entry).Config(env)
		if err != nil {
			return nil, err
		}
		var opts []ingest.KafkaOption
		if cfg.TLS != nil {
			opts = append(opts, ingest.KafkaTLS(cfg.TLS))
		}
		if cfg.SASL != nil {
			opts = append(opts, ingest.KafkaSASL(cfg.SASL))
		}
		return ingest.Kafka(cfg.Brokers, cfg.Topic, opts...)
	},
}
