// Package changelog encodes join outputs (record.Output) as JSON lines for
// sinks, in one of three formats:
//
//   - Changelog: every output, {"id":…,"op":"+I","pk":[…],"row":{…}};
//   - Upsert: keyed by primary key, {"id":…,"key":[…],"value":{…}} for +I and
//     +U, value null (a tombstone) for -D, and -U outputs dropped, as
//     Kafka-style upsert sinks expect;
//   - Debezium: Debezium-style envelopes, {"op":"c"|"u"|"d","before":…,
//     "after":…,"source":{"connector":"joinery","id":…,"pk":[…]}}, -U
//     dropped, so another Joinery or a Debezium consumer reads the result
//     as a change stream (formats/debezium decodes it).
//
// Encodings are deterministic: object keys are sorted and HTML characters are
// not escaped, so a replay of the same outputs writes the same bytes. Lines
// carry no trailing newline; sinks add it. The package does no I/O.
//
// Usage:
//
//	f, err := changelog.ParseFormat("upsert")
//	line, ok, err := f.Marshal(out)
//	if ok { w.Write(append(line, '\n')) }
package changelog
