// Package formats groups the wire encodings Joinery reads and writes. It holds
// no code itself: formats/debezium decodes Debezium JSON change events into
// record.Change, and formats/changelog encodes join outputs (record.Output)
// as JSON lines for sinks. Format packages do no I/O.
package formats
