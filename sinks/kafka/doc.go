// Package kafka is the Kafka sink: it produces each join output as one record
// to a topic, keyed by the output's primary key, and returns from Write only
// once every record of the batch is acknowledged by all in-sync replicas.
//
// It owns the record layout:
//
//   - key: the output's primary key, the JSON array text of Output.PK
//     (records of one key land in one partition, in order);
//   - value: the line encoded by a changelog.Format — as JSON, or with
//     Config.Avro as Avro in the Confluent wire format, its schema
//     registered under "<topic>-value" on start (formats/debeziumavro); in
//     the Upsert format a -D output is a tombstone (null value) so log
//     compaction drops the key, and -U outputs are not produced;
//   - header "id": the output id.
//
// The producer is franz-go's default idempotent producer (acks=all, no
// duplicates or reordering from internal retries). It does not dedupe across
// Writes: outputs replayed after a restart are produced again with the same
// ids, so readers dedupe by the "id" header (or, in Upsert, the key simply
// takes the same value again).
//
// With Config.ExactlyOnce (kafka.exactly_once) the sink writes only inside
// a transaction of a transactional Kafka source on the same brokers
// (WriteTxn, into the source's producer; Write refuses): the outputs commit
// with the source offsets, and a read_committed consumer reads each once
// (docs/guides/exactly-once.md). The dead-letter output writes the same way
// (ProduceTxn).
//
// Why franz-go (github.com/twmb/franz-go): the Kafka client made for the job:
// pure Go, consumer groups, idempotent producer, in-process kfake for tests.
// franz-go types stay inside the Kafka packages; connection options (TLS,
// SASL) come from connopts/kafkaopts, shared with the source and ingest.
//
// Usage:
//
//	s, err := kafka.New(ctx, kafka.Config{Brokers: []string{"localhost:9092"},
//		Topic: "joined", Format: changelog.Upsert})
//	defer s.Close()
//	err = s.Write(ctx, outputs)
package kafka
