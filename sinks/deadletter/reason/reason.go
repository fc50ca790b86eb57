// Package reason owns the one list of reasons a record is rejected: the
// "reason" of a dead letter (sinks/deadletter.Record), of a bad-input log
// line and error, of the joinery_rejected_total metric label, and of an
// HTTP ingest refusal. Every producer (formats/debezium,
// formats/debeziumavro, ingest, node) names its reasons from here, so a
// reason means one thing wherever it is read.
//
// The words are stable: dead-letter files, dashboards and alerts match on
// them, so a reason is never renamed, only added. The package is a leaf
// (standard library only) so that the decoders can import it; it decides
// nothing about policy (skip, dead-letter, fail: node/deadletter.go).
package reason

// Reason is one stable reason word.
type Reason string

// The reasons, by who finds them.
const (
	// Decoders (formats/debezium, formats/debeziumavro, ingest, the
	// node's event-time decoder).

	// NotJSON: the value is not a single well-formed JSON value
	// (including trailing data after the value).
	NotJSON Reason = "not-json"
	// NotObject: the value (or the wrapped payload) is not a JSON object.
	NotObject Reason = "not-object"
	// MissingOp: a Debezium envelope has no "op" field (or it is null).
	MissingOp Reason = "missing-op"
	// UnknownOp: "op" is not one of the strings "c", "r", "u", "d" ("t",
	// truncate, is Truncate).
	UnknownOp Reason = "unknown-op"
	// MissingAfter: a c, r or u event has a null or absent "after".
	MissingAfter Reason = "missing-after"
	// MissingBefore: a d event has a null or absent "before".
	MissingBefore Reason = "missing-before"
	// BadRow: "before" or "after" is neither an object nor null.
	BadRow Reason = "bad-row"
	// BadTs: a timestamp that does not parse: Debezium's "ts_ms" is not an
	// int64, or an event-time string is not RFC 3339.
	BadTs Reason = "bad-ts"
	// BadHeader: a Confluent-framed value is shorter than the 5-byte
	// header or its first byte is not the magic 0.
	BadHeader Reason = "bad-header"
	// UnknownSchema: the schema registry does not know the header's id.
	UnknownSchema Reason = "unknown-schema"
	// BadSchema: the id's schema is not Avro, or does not parse.
	BadSchema Reason = "bad-schema"
	// BadAvro: the payload does not decode with the writer schema
	// (truncated, corrupt, trailing bytes), or is not a record.
	BadAvro Reason = "bad-avro"
	// BadUTF8: the record holds bytes that are not UTF-8, or a \u escape
	// of an unpaired UTF-16 surrogate ("\ud800k"): a JSON decoder would
	// silently rewrite either to U+FFFD, merging keys (internal/utf8json).
	BadUTF8 Reason = "bad-utf8"
	// DuplicateField: an object of the record names a field twice
	// (decoders disagree on which one wins).
	DuplicateField Reason = "duplicate-field"
	// Decode: a decoder failed without a reason of its own.
	Decode Reason = "decode"

	// The node, routing a decoded record (node/route.go, node/eventtime.go).

	// TooLarge: the record is over the source's max_record_bytes.
	TooLarge Reason = "too-large"
	// MissingKey: the join key field is absent or null.
	MissingKey Reason = "missing-key"
	// MissingPK: a cdc row's primary key is absent or null.
	MissingPK Reason = "missing-pk"
	// MissingTs: an event-time record's timestamp is absent or null.
	MissingTs Reason = "missing-ts"
	// WrongType: a key, primary key, timestamp or row kind of the wrong
	// JSON type.
	WrongType Reason = "wrong-type"
	// UnknownTable: source.table is not bound in sources[].tables.
	UnknownTable Reason = "unknown-table"
	// UnknownSide: an event-time source is on no side of the join.
	UnknownSide Reason = "unknown-side"
	// Unroutable: a delete whose before lacks the join column.
	Unroutable Reason = "unroutable-delete"
	// ReservedKey: a string join value in the form of the key of a row
	// whose join value is null ("\u0000null/…", joins.NullRowKey), which
	// no real join value may take.
	ReservedKey Reason = "reserved-key"
	// Truncate: a Debezium truncate (on_truncate: dead-letter).
	Truncate Reason = "truncate"
	// Filter: the source's filter (or key_expr) failed on the record
	// (e.g. a wrong type).
	Filter Reason = "filter-error"
	// Route: the join could not route the record for a reason of none of
	// the above.
	Route Reason = "route"
	// Encode: the node could not encode the decoded row for its key.
	Encode Reason = "encode"

	// The sources, as they read (sources.Message.Reject).

	// Misplaced: a record of a Kafka topic co-partitioned with the join
	// (partitioned_by: join_key) is not in the partition its key belongs
	// to — Kafka's default partitioner puts its key elsewhere, it has no
	// key, or its key is not what kafka.partition_key writes — so it is
	// outside its key group (sources/kafka.MisplacedError).
	Misplaced Reason = "misplaced"
)

// All lists every Reason above, in their order (tests and docs walk it).
var All = []Reason{
	NotJSON, NotObject, MissingOp, UnknownOp, MissingAfter, MissingBefore, BadRow, BadTs,
	BadHeader, UnknownSchema, BadSchema, BadAvro, BadUTF8, DuplicateField, Decode,
	TooLarge, MissingKey, MissingPK, MissingTs, WrongType, UnknownTable, UnknownSide,
	Unroutable, ReservedKey, Truncate, Filter, Route, Encode, Misplaced,
}

// LatePrefix starts the reason of an input an event-time join found late;
// the join's own word follows (joins.Late…: window-closed,
// behind-watermark, unknown-side).
const LatePrefix = "late: "

// Late is the dead-letter reason of an input found late for why.
func Late(why string) Reason { return Reason(LatePrefix + why) }
