// Package formats groups the wire encodings Joinery reads and writes. It holds
// no code itself: formats/debezium decodes Debezium JSON change events into
// record.Change, formats/debeziumavro decodes Debezium Avro (Confluent wire
// format, Schema Registry) into the same changes and encodes outputs as Avro,
// and formats/changelog encodes join outputs (record.Output) as JSON lines
// for sinks. Format packages do no I/O, except that formats/debeziumavro
// fetches schemas through the registry client it is given.
package formats
