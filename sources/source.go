// Package sources defines how Joinery reads input: a Source yields raw
// messages with their positions and later commits positions that are durable.
// One subpackage per external system (file, redisstream, …).
package sources

import (
	"context"
	"errors"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

// Message is one raw input record and where it came from. Value is owned by
// the caller after Read returns.
type Message struct {
	Pos   record.Position
	Value []byte
	// Reject, when set, says the source found the record unusable as read
	// (a Kafka record outside its key's partition): the node neither
	// decodes nor joins it, handles it as bad input (sources[].on_bad_input:
	// counted, dead-lettered with Reject's reason by default) and commits
	// past it like any other record, so the rest of the partition is read
	// on.
	Reject *Reject
	// Epoch is, for a Transactional source, its Epoch when the message was
	// read; 0 for other sources.
	Epoch uint64
}

// Reject is why a source refuses one record it read: a reason word
// (sinks/deadletter/reason) and the error that explains it.
type Reject struct {
	Reason reason.Reason
	Err    error
}

// Source reads raw messages. Read and Commit may be called from different
// goroutines, but Read is never called concurrently with itself.
type Source interface {
	// Read blocks until at least one message is available and returns up to max
	// messages in source order. A finite source returns io.EOF after its last
	// message; Read also returns ctx.Err() when ctx ends.
	Read(ctx context.Context, max int) ([]Message, error)
	// Commit acknowledges, per partition, every message up to and including the
	// given position; the source will not deliver them again after a restart.
	// Positions handed to Commit are durable downstream.
	Commit(ctx context.Context, upTo []record.Position) error
	// Close stops the source. It is idempotent.
	Close() error
}

// Transactional is a source whose commits are transactions that also
// carry the job's outputs (a Kafka source under an exactly-once Kafka sink,
// docs/guides/exactly-once.md): the node calls Transact instead of Commit.
type Transactional interface {
	Source
	// Transact runs one transaction: write writes into tx (a sink's
	// sinks.TxnWriter, a dead-letter output's deadletter.TxnWriter), then
	// the positions up to upTo are committed in the same transaction,
	// which ends. An error matching ErrAborted: the transaction aborted
	// (write failed, or the group rebalanced) and the source went back to
	// its committed positions: the messages read before (an Epoch below
	// the new one) are delivered again, and the caller drops what it holds
	// of them. Any other error: the producer was fenced (a newer
	// incarnation of this one took over) or the transaction's end is
	// unknown; the caller stops.
	Transact(ctx context.Context, upTo []record.Position, write func(ctx context.Context, tx any) error) error
	// Epoch counts the transactions aborted so far (see Message.Epoch).
	Epoch() uint64
}

// ErrAborted is matched (errors.Is) by Transact's error for a transaction
// that aborted cleanly: nothing of it is visible to a read_committed
// consumer, and its records are delivered again (see Transactional).
var ErrAborted = errors.New("sources: transaction aborted")

// Transient marks err as a read error worth retrying: the external system
// is unreachable or restarting, and the same Read may succeed later. The
// node retries such errors (stalling its input, with backoff) instead of
// stopping; any other Read error stops the source.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return transientError{err}
}

// IsTransient reports whether err, or an error it wraps, was marked by
// Transient.
func IsTransient(err error) bool {
	var te transientError
	return errors.As(err, &te)
}

type transientError struct{ error }

func (e transientError) Unwrap() error { return e.error }

// ErrLostRange is matched (errors.Is) by a source's error saying that
// records the state store lost can no longer be read again — the store went
// back in time and the source no longer holds the range it must re-read
// (Kafka retention, a trimmed Redis stream). Nothing can recover them: the
// node stops, naming the source, the partition and the lost range.
var ErrLostRange = errors.New("sources: records the state store lost are gone from the source")

// Forward is one record a source repartitions: the raw record at Pos, to
// be written to partition Group of the source's repartition streams.
type Forward struct {
	Pos   record.Position
	Group int
	Value []byte
}

// Repartitioner is a source that can repartition its records (a sharded
// Redis Streams source with repartition: stream): Repartition writes
// each record to its group's repartition stream, atomically per raw
// partition and exactly once per raw record — a record at or below the
// highest raw position a Repartition already wrote (before a crash, or by
// the partition's previous reader) is skipped — so the raw positions may
// be committed once it returns. The records of one raw partition are in
// that partition's order. It returns the backlog, or more: the most
// entries one of the repartition streams it wrote to holds (those written
// and not consumed yet, and some consumed that a stream keeps); Backlog
// returns the backlog itself, of every repartition stream. A caller bounds
// it by waiting, so that a large raw backlog is not copied into the
// repartition streams faster than they are consumed.
type Repartitioner interface {
	Repartition(ctx context.Context, fwd []Forward) (backlog int64, err error)
	Backlog(ctx context.Context) (int64, error)
}

// Lagger is a Source that can say how far behind its input it is: the
// node polls it for joinery_source_lag_records (docs/operations/alerts.md).
type Lagger interface {
	// Lag returns, for each partition this source reads now, how many
	// records the input holds after the last one committed, read or not.
	// Partitions it does not read (another reader holds them) are absent.
	// It is cheap (one round trip or so) and may be called concurrently
	// with Read and Commit.
	Lag(ctx context.Context) (map[int32]int64, error)
}
