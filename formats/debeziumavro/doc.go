// Package debeziumavro decodes Debezium change events in the Confluent
// Schema Registry wire format — a zero magic byte, the writer schema's
// 4-byte big-endian id, then the Avro-encoded envelope — into the same
// record.Change and debezium.Envelope that formats/debezium produces from
// Debezium JSON, so a join sees identical input whichever converter the
// connector uses. It also encodes join outputs as Avro for the Kafka sink
// (Encoder: the schema is registered under a subject on start).
//
// It owns: the header (franz-go's sr.ConfluentHeader), fetching writer
// schemas by id from a registry (an *sr.Client, or anything with its
// SchemaByID) and caching them — an id's schema never changes, so a new id
// mid-stream (schema evolution: an added optional column) is simply fetched
// once more — the Avro decoding (hamba/avro) and the mapping of Avro values
// to the JSON values formats/debezium yields (numbers as json.Number, bytes
// as base64 strings, Connect logical types as the integers the JSON
// converter writes; see Decoder.DecodeEnvelope). The envelope rules (ops,
// before/after, ts_ms, source positions) are formats/debezium's
// (debezium.DecodeMap), with the same reason codes; the Avro-specific
// rejects are bad-header, unknown-schema, bad-schema and bad-avro, all
// *debezium.DecodeError, and bad-utf8 for a string or map key that is not
// UTF-8 (as the JSON decoders refuse it, internal/utf8json). A registry that cannot be reached is not bad
// input: those calls fail with a *RegistryError, which callers retry.
//
// DecodeJSONSchema reads Confluent's JsonSchemaConverter framing (the
// header, then Debezium JSON) with formats/debezium, without the registry.
//
// It must not: read Kafka, decide what to do with bad input (the node
// dead-letters), or parse schemas other than Avro (a Protobuf or JSON
// Schema id is bad-schema). Unlike the other format packages it does I/O,
// but only through the registry client it is given.
//
// Libraries: github.com/twmb/franz-go/pkg/sr (the registry REST client and
// the Confluent header, from the franz-go Kafka client Joinery already
// uses) and github.com/hamba/avro/v2 (Avro schemas and binary encoding,
// pure Go, maintained, decodes with the writer schema into generic values).
package debeziumavro
