// Package sinks defines where join outputs go. One subpackage per external
// system (stdout/file JSON lines, redisstream, …).
package sinks

import (
	"context"

	"github.com/joinery/joinery/record"
)

// Sink writes join outputs. Write is called from one goroutine at a time and
// returns only once the batch is written to the sink's standard (flushed for a
// file, acknowledged for Redis). The batch is not retained.
type Sink interface {
	Write(ctx context.Context, batch []record.Output) error
	// Close flushes and releases the sink. It is idempotent.
	Close() error
}

// TxnWriter is a sink that writes exactly once: only inside a transaction
// of a sources.Transactional source (tx, which Transact hands its write
// function). Its Write refuses.
type TxnWriter interface {
	Sink
	WriteTxn(ctx context.Context, tx any, batch []record.Output) error
}
