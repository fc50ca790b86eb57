package kafka

import (
	"context"
	"fmt"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connopts/kafkaopts"
	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/sources"
)

// Entry is the configuration of a kafka source in a job file (kafka.group
// is the consumer group).
type Entry struct {
	Kafka kafkaopts.Config `yaml:"kafka"`
}

// Validate reports every bad field.
func (e *Entry) Validate(v *connectors.Validator) {
	v.Kafka("kafka", e.Kafka)
	v.Require("kafka.group", e.Kafka.Group != "")
	switch e.Kafka.StartOffset {
	case "", "earliest", "latest", "committed":
	default:
		v.Bad("kafka.start_offset", "must be earliest, latest or committed (got %q)", e.Kafka.StartOffset)
	}
}

// Kind is the kafka source's registry entry (connectors/all). HTTP ingest
// produces to its topic.
var Kind = connectors.SourceKind{
	Type: "kafka",
	New:  func() connectors.Config { return new(Entry) },
	Open: func(ctx context.Context, c connectors.Config, env *connectors.SourceEnv) (sources.Source, error) {
		k := c.(*Entry).Kafka
		tc, err := k.TLS.Config(env.Resolve)
		if err != nil {
			return nil, fmt.Errorf("source %s: kafka.tls: %w", env.Name, err)
		}
		return New(ctx, Config{Name: env.Name, Brokers: k.Brokers, Topic: k.Topic, Group: k.Group,
			StartOffset: k.StartOffset, ClientID: k.ClientID, TLS: tc, SASL: k.Auth(), OnPartitions: env.OnPartitions, Applied: env.Applied, Lineage: env.Lineage})
	},
	Append: func(ctx context.Context, c connectors.Config, env connectors.Env) (connectors.Appender, error) {
		k := c.(*Entry).Kafka
		tc, err := k.TLS.Config(env.Resolve)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls: %w", err)
		}
		var opts []ingest.KafkaOption
		if tc != nil {
			opts = append(opts, ingest.KafkaTLS(tc))
		}
		if s := k.Auth(); s != nil {
			opts = append(opts, ingest.KafkaSASL(s))
		}
		return ingest.Kafka(k.Brokers, k.Topic, opts...)
	},
}
