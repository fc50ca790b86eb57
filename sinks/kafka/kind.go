package kafka

import (
	"context"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/sinks"
)

// Entry is the configuration of a kafka sink (or dead-letter output) in a
// job file.
type Entry struct {
	connectors.KafkaEntry `yaml:",inline"`
}

// Validate reports every bad field. The consumer settings of a kafka source
// (group, start_offset, revoke_wait) are refused: a producer has none, and a
// job that sets them on a sink or a dead-letter output expects something
// that would not happen.
func (e *Entry) Validate(v *connectors.Validator) {
	v.Kafka("kafka", e.Kafka)
	k := e.Kafka
	for _, f := range []struct {
		name string
		set  bool
	}{{"group", k.Group != ""}, {"start_offset", k.StartOffset != ""}, {"revoke_wait", k.RevokeWait != 0}} {
		if f.set {
			v.Bad("kafka."+f.name, "is a kafka source's consumer setting; a kafka sink or dead-letter output does not consume")
		}
	}
}

// Config is the sink configuration of e with its TLS files read.
func (e *Entry) Config(env connectors.Env) (Config, error) {
	k := e.Kafka
	tc, err := e.TLS(env)
	if err != nil {
		return Config{}, err
	}
	return Config{Brokers: k.Brokers, Topic: k.Topic, ClientID: k.ClientID, TLS: tc, SASL: k.Auth(), ExactlyOnce: k.ExactlyOnce}, nil
}

// Kind is the kafka sink's registry entry (connectors/all); it writes Avro
// when the node passes env.Avro.
var Kind = connectors.SinkKind{
	Type:   "kafka",
	Shared: true,
	Avro:   true,
	New:    func() connectors.Config { return new(Entry) },
	Open: func(ctx context.Context, c connectors.Config, env *connectors.SinkEnv) (sinks.Sink, error) {
		cfg, err := c.(*Entry).Config(env.Env)
		if err != nil {
			return nil, err
		}
		cfg.Format = env.Format
		if a := env.Avro; a != nil {
			cfg.Avro = &Avro{Registry: a.Registry, Subject: a.Subject, Name: a.Name, Columns: a.Columns}
		}
		return New(ctx, cfg)
	},
}
