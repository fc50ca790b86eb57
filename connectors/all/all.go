// Package all is the one list of Joinery's connector kinds: the tables
// the job validates its entries with and the node opens them from. Every
// kind is listed here explicitly, so registration does not depend on
// import order or on which package imported which connector. Adding a
// connector is adding its package's Kind to a list below.
//
// It must not hold connector code: each kind lives in its connector's
// package.
package all

import (
	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/sinks"
	"github.com/joinery/joinery/sinks/deadletter"
	"github.com/joinery/joinery/sinks/jsonl"
	sinkkafka "github.com/joinery/joinery/sinks/kafka"
	"github.com/joinery/joinery/sinks/redishash"
	sinkredis "github.com/joinery/joinery/sinks/redisstream"
	"github.com/joinery/joinery/sources/file"
	"github.com/joinery/joinery/sources/httpingest"
	srckafka "github.com/joinery/joinery/sources/kafka"
	srcredis "github.com/joinery/joinery/sources/redisstream"
)

// Sources are the source kinds (sources[].type).
var Sources = connectors.NewTable("source",
	file.Kind,
	srcredis.Kind,
	srckafka.Kind,
)

// Sinks are the sink kinds (sinks[].type).
var Sinks = connectors.NewTable("sink",
	jsonl.Stdout,
	jsonl.File,
	sinkredis.Kind,
	redishash.Kind,
	sinkkafka.Kind,
	TableSink,
)

// DeadLetters are the dead-letter outputs (dead_letter.type).
var DeadLetters = connectors.NewTable("dead-letter output",
	deadletter.FileKind,
	deadletter.KafkaKind,
	deadletter.RedisStreamKind,
)

// Ingest is the ingest endpoint (the job's ingest block).
var Ingest = httpingest.Kind

// TableSink is the table sink: the node keeps the final joined table in
// memory and prints it when the job ends, so it has no constructor.
var TableSink = connectors.Kind[*connectors.SinkEnv, sinks.Sink]{
	Type:  "table",
	New:   func() connectors.Config { return connectors.None{} },
	Table: true,
}

// DeadLetterKind is the kind of a dead-letter output (DeadLetters' rows).
type DeadLetterKind = deadletter.Kind
