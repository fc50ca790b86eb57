package job

import (
	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/transform"
)

// Source is one input.
type Source struct {
	// Name identifies the source in positions and committed offsets.
	Name string `yaml:"name"`
	// Type is the connector kind: file, redis-stream or kafka
	// (connectors/all).
	Type string `yaml:"type"`
	// Format is the record format: debezium (default for cdc joins),
	// debezium-avro (Debezium's envelope in Avro with a Schema Registry, cdc
	// joins; needs schema_registry), debezium-jsonschema (Debezium JSON
	// behind the registry's header), changelog (another job's changelog
	// sink output, read as changes of one table: a chain of joins, see
	// FormatChangelog) or json (plain events, default for event-time
	// joins).
	Format string `yaml:"format"`
	// SchemaRegistry of a debezium-avro source (see job/registry.go).
	SchemaRegistry SchemaRegistry `yaml:"schema_registry,omitempty"`
	// Watermark configures event-time watermarks of an event-time join's source.
	Watermark Watermark `yaml:"watermark"`
	// Side binds every record to one join input: left or right (or the table name of that side).
	Side string `yaml:"side"`
	// Tables binds records by their Debezium source.table instead: table name -> left|right.
	Tables map[string]string `yaml:"tables"`
	// Rate paces the source to this many records per second (0: as fast as possible). Demos use it.
	Rate float64 `yaml:"rate"`
	// OnBadInput is what a record the source cannot use (not JSON, no key,
	// no timestamp, a wrong type, an unknown op, over max_record_bytes)
	// does: dead-letter (default: counted, logged and written to the job's
	// dead_letter output when it names one), skip (counted and logged at a
	// rate-limited level) or fail (the job stops with an error naming the
	// source, position and reason; no offset at or past it is committed).
	// Offsets advance past dead-lettered and skipped records.
	OnBadInput string `yaml:"on_bad_input,omitempty"`
	// MaxRecordBytes rejects a record longer than this with reason
	// too-large (default DefaultMaxRecordBytes).
	MaxRecordBytes int `yaml:"max_record_bytes,omitempty"`
	// OnTruncate is what a Debezium truncate event (op t) does: dead-letter
	// (default), ignore (counted and logged) or fail. The join's state is
	// not cleared either way: re-snapshot the table to rebuild it.
	OnTruncate string `yaml:"on_truncate,omitempty"`
	// Dedup drops a Debezium change whose source position (source.lsn,
	// source.file/pos/row, source.commit_lsn/change_lsn/event_serial_no,
	// source.scn) is not newer than the last one applied to the same row:
	// Debezium's at-least-once replays at new offsets. Default true; set
	// false for connectors whose positions are not ordered (a MySQL
	// failover to a server with other binlog file names).
	Dedup *bool `yaml:"dedup,omitempty"`
	// Filter keeps only the records for which this expr-lang expression is
	// true (transform package), e.g. `status == "active" && amount > 10`.
	// It sees a row's columns, and _table (a CDC record's source table). A
	// CDC change is filtered per row image, so the changelog stays one: an
	// update that leaves the filter becomes a delete, one that enters it an
	// insert. A record whose filter fails (a wrong type) is bad input.
	Filter string `yaml:"filter,omitempty"`
	// Conn holds the entry's other fields, its connector's (path, redis,
	// stream, kafka, shards, …), as written: the kind of Type decodes them
	// once, when the job is compiled (SourcePlan.Config), and reports a
	// field it does not take (connectors.Table.Decode).
	Conn connectors.Fields `yaml:",inline"`
}

// CompiledFilter compiles the source's filter; nil without one.
func (s Source) CompiledFilter() (*transform.Filter, error) {
	if s.Filter == "" {
		return nil, nil
	}
	return transform.CompileFilter(s.Filter)
}

// RepartitionSuffix ends the name of a repartitioned source's reader of
// its repartition streams (SourcePlan.RepartitionReader): "cdc:repart".
const RepartitionSuffix = ":repart"

// DefaultMaxRecordBytes is the record size limit of a source without
// max_record_bytes.
const DefaultMaxRecordBytes = 1 << 20

// Bad-input policies (sources[].on_bad_input, sources[].on_truncate).
const (
	PolicyDeadLetter = "dead-letter"
	PolicySkip       = "skip"
	PolicyFail       = "fail"
	PolicyIgnore     = "ignore" // on_truncate only
)

// BadInputPolicy is the effective on_bad_input of a source.
func (s Source) BadInputPolicy() string {
	if s.OnBadInput == "" {
		return PolicyDeadLetter
	}
	return s.OnBadInput
}

// TruncatePolicy is the effective on_truncate of a source.
func (s Source) TruncatePolicy() string {
	if s.OnTruncate == "" {
		return PolicyDeadLetter
	}
	return s.OnTruncate
}

// RecordLimit is the effective max_record_bytes of a source.
func (s Source) RecordLimit() int {
	if s.MaxRecordBytes == 0 {
		return DefaultMaxRecordBytes
	}
	return s.MaxRecordBytes
}

// DedupOn reports whether Debezium duplicates are dropped (default true).
func (s Source) DedupOn() bool { return s.Dedup == nil || *s.Dedup }
