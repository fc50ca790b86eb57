package deadletter

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/joinery/joinery/internal/linefile"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/kafka"
	"github.com/joinery/joinery/sinks/redisstream"
)

// MaxRawBytes bounds the raw bytes a record keeps: a longer input (a record
// rejected as too large) keeps its first MaxRawBytes bytes and sets
// Truncated, so a dead letter fits a Kafka message.
const MaxRawBytes = 64 << 10

// Record is one dead letter.
type Record struct {
	// Reason is the stable reason code (not-json, missing-key, …: the
	// list is package reason).
	Reason string `json:"reason"`
	// Error is a human-readable detail; it is not stable.
	Error string `json:"error"`
	// Source is the name of the source that read the record.
	Source string `json:"source"`
	// Position is where the record sits in its source.
	Position record.Position `json:"position"`
	// Raw is the raw bytes when they are valid UTF-8; RawBase64 holds them
	// (standard base64) otherwise. At most one is set.
	Raw       string `json:"raw,omitempty"`
	RawBase64 string `json:"raw_base64,omitempty"`
	// Size is the length of the raw record in bytes; Truncated says Raw (or
	// RawBase64) holds only its first MaxRawBytes bytes.
	Size      int  `json:"size"`
	Truncated bool `json:"truncated,omitempty"`
	// Time is when the record was rejected.
	Time time.Time `json:"time"`
}

// New builds the dead letter of raw, read at pos and rejected for reason
// (err, when not nil, is the detail). It copies raw.
func New(reason string, err error, pos record.Position, raw []byte, now time.Time) Record {
	r := Record{Reason: reason, Source: pos.Source, Position: pos, Size: len(raw), Time: now.UTC()}
	if err != nil {
		r.Error = err.Error()
	}
	if len(raw) > MaxRawBytes {
		raw, r.Truncated = raw[:MaxRawBytes], true
	}
	if utf8.Valid(raw) {
		r.Raw = string(raw)
	} else {
		r.RawBase64 = base64.StdEncoding.EncodeToString(raw)
	}
	return r
}

// Bytes returns the raw bytes the record holds (a prefix when Truncated).
func (r Record) Bytes() ([]byte, error) {
	if r.RawBase64 != "" {
		return base64.StdEncoding.DecodeString(r.RawBase64)
	}
	return []byte(r.Raw), nil
}

// Marshal encodes r as one JSON object (no trailing newline).
func (r Record) Marshal() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		// Strings, ints, a bool and a time: only a time outside years
		// 0-9999 fails, which New never makes from a clock.
		panic(fmt.Sprintf("deadletter: marshal: %v", err))
	}
	return b
}

// Decode decodes what Marshal wrote.
func Decode(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("deadletter: decode: %w", err)
	}
	return r, nil
}

// Writer is a dead-letter output. Write is called from one goroutine at a
// time per source, possibly from several sources at once; it returns once
// the records are durable. Close is idempotent.
type Writer interface {
	Write(ctx context.Context, rs []Record) error
	Close() error
}

// TxnWriter is a Writer that can write into a transaction of a
// sources.Transactional source (the Kafka output, WriteTxn): the dead
// letters of an exactly-once job commit with the offsets that pass them.
type TxnWriter interface {
	Writer
	WriteTxn(ctx context.Context, tx any, rs []Record) error
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("deadletter: closed")

// File appends dead letters to a JSON-lines file.
type File struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	cut    int64
	closed bool
}

var _ Writer = (*File)(nil)

// OpenFile opens path for appending, creating it (mode 0644) if needed. A
// partial last line (a writer killed mid-write left it; its records are
// written again, as the source's offsets were not committed) is cut off
// first: Cut says how many bytes.
func OpenFile(path string) (*File, error) {
	f, cut, err := linefile.OpenAppend(path)
	if err != nil {
		return nil, fmt.Errorf("deadletter: %w", err)
	}
	return &File{f: f, w: bufio.NewWriter(f), cut: cut}, nil
}

// Cut is the number of bytes of a partial last line OpenFile cut off.
func (d *File) Cut() int64 { return d.cut }

// Write appends one line per record, flushes and fsyncs.
func (d *File) Write(ctx context.Context, rs []Record) error {
	if len(rs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	for _, r := range rs {
		d.w.Write(r.Marshal())
		d.w.WriteByte('\n')
	}
	if err := d.w.Flush(); err != nil {
		return fmt.Errorf("deadletter: %w", err)
	}
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("deadletter: %w", err)
	}
	return nil
}

// Close flushes and closes the file.
func (d *File) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	return errors.Join(d.w.Flush(), d.f.Close())
}

// Stream field names of a Redis Stream dead letter; the record's JSON
// (Marshal) is in streamshard.ValueField, as every stream Joinery writes.
const (
	ReasonField   = "reason"
	SourceField   = "source"
	PositionField = "position"
)

// RedisStream appends dead letters to a Redis Stream.
type RedisStream struct{ s *redisstream.Sink }

var _ Writer = (*RedisStream)(nil)

// OpenRedisStream connects (cfg as for a redis-stream sink; Format is unused).
func OpenRedisStream(ctx context.Context, cfg redisstream.Config) (*RedisStream, error) {
	s, err := redisstream.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("deadletter: %w", err)
	}
	return &RedisStream{s: s}, nil
}

// Write appends one entry per record with one pipelined round trip.
func (d *RedisStream) Write(ctx context.Context, rs []Record) error {
	entries := make([][]string, len(rs))
	for i, r := range rs {
		entries[i] = []string{ReasonField, r.Reason, SourceField, r.Source, PositionField, r.Position.String(), streamshard.ValueField, string(r.Marshal())}
	}
	if err := d.s.Append(ctx, entries); err != nil {
		return fmt.Errorf("deadletter: %w", err)
	}
	return nil
}

// Close closes the connection.
func (d *RedisStream) Close() error { return d.s.Close() }

// Kafka header names of a Kafka dead letter.
const (
	ReasonHeader = "reason"
	SourceHeader = "source"
)

// Kafka produces dead letters to a Kafka topic.
type Kafka struct{ s *kafka.Sink }

var _ TxnWriter = (*Kafka)(nil)

// OpenKafka connects (cfg as for a kafka sink; Format is unused).
func OpenKafka(ctx context.Context, cfg kafka.Config) (*Kafka, error) {
	s, err := kafka.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("deadletter: %w", err)
	}
	return &Kafka{s: s}, nil
}

// Write produces one record per dead letter (key: the position) and returns
// once all are acknowledged.
func (d *Kafka) Write(ctx context.Context, rs []Record) error {
	if err := d.s.Produce(ctx, kafkaMessages(rs)); err != nil {
		return fmt.Errorf("deadletter: %w", err)
	}
	return nil
}

// WriteTxn writes as Write does, into the open transaction tx (a
// kafka.TxnProducer on the output's brokers; see kafka.Sink.WriteTxn): the
// dead letters commit with the offsets that pass their records.
func (d *Kafka) WriteTxn(ctx context.Context, tx any, rs []Record) error {
	if err := d.s.ProduceTxn(ctx, tx, kafkaMessages(rs)); err != nil {
		return fmt.Errorf("deadletter: %w", err)
	}
	return nil
}

func kafkaMessages(rs []Record) []kafka.Message {
	msgs := make([]kafka.Message, len(rs))
	for i, r := range rs {
		msgs[i] = kafka.Message{Key: []byte(r.Position.String()), Value: r.Marshal(),
			Headers: [][2]string{{ReasonHeader, r.Reason}, {SourceHeader, r.Source}}}
	}
	return msgs
}

// Close flushes and closes the client.
func (d *Kafka) Close() error { return d.s.Close() }
