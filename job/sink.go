package job

import (
	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/connectors"
)

// DeadLetter is where rejected records go. In YAML it is either a path (a
// file, as `dead_letter: dead.jsonl`) or a mapping with a type and the
// connection settings of the matching sink:
//
//	dead_letter: {type: file, path: dead.jsonl}
//	dead_letter: {type: kafka, kafka: {brokers: [...], topic: joinery-dlq}}
//	dead_letter: {type: redis-stream, redis: {addr: ...}, stream: joinery-dlq}
//
// Every dead letter is one JSON object with the reason, the error, the
// source name, its position, the raw bytes and the time (see
// sinks/deadletter).
type DeadLetter struct {
	// Type is file, kafka or redis-stream; empty: none.
	Type string `yaml:"type,omitempty"`
	// Conn holds the output's connector fields (path, redis, stream,
	// kafka), decoded by its kind when the job is compiled.
	Conn connectors.Fields `yaml:",inline"`
}

// UnmarshalYAML accepts a path (a file) or a mapping.
func (d *DeadLetter) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var p string
		if err := n.Decode(&p); err != nil {
			return err
		}
		*d = DeadLetter{}
		if p != "" {
			*d = DeadLetter{Type: "file", Conn: connectors.Fields{"path": *n}}
		}
		return nil
	}
	type plain DeadLetter
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*d = DeadLetter(v)
	return nil
}

// Enabled reports whether a dead-letter output is configured.
func (d DeadLetter) Enabled() bool { return d.Type != "" }

// Sink is one output.
type Sink struct {
	// Type is stdout, file, redis-stream, redis-hash (a queryable view keyed by
	// the result's primary key), kafka, or table (prints the final joined
	// table when the job ends).
	Type string `yaml:"type"`
	// Format is changelog (default), upsert or debezium (Debezium-style
	// envelopes; see formats/changelog).
	Format string `yaml:"format"`
	// Encoding of a kafka sink's values: json (default) or avro (the
	// format's fields in Avro, registered in schema_registry under subject,
	// default "<topic>-value"; see job/registry.go).
	Encoding       string         `yaml:"encoding,omitempty"`
	SchemaRegistry SchemaRegistry `yaml:"schema_registry,omitempty"`
	Subject        string         `yaml:"subject,omitempty"`
	// Conn holds the sink's connector fields (path, redis, stream, key,
	// kafka, shards, …), decoded by its kind when the job is compiled
	// (SinkPlan.Config). A kafka sink's kafka.exactly_once: true writes
	// its outputs in Kafka transactions that commit the job's kafka
	// sources' offsets with them (job/exactlyonce.go, docs/guides/exactly-once.md).
	Conn connectors.Fields `yaml:",inline"`
}
