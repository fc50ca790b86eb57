package redishash

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks"
)

// IDsSuffix is appended to Key to name the id hash when Config.IDsKey is
// empty.
const IDsSuffix = ":ids"

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("redishash: sink closed")

// Config configures a Redis hash sink. The zero value of an optional field
// means its default.
type Config struct {
	// Addr is the Redis server, host:port. Required.
	Addr string
	// Username and Password authenticate (ACL or requirepass); optional.
	Username string
	Password string
	// DB is the Redis database number. Default 0.
	DB int
	// Key is the hash holding the view, PK → row JSON. Required.
	Key string
	// IDsKey is the hash holding PK → id of the output that wrote the row.
	// Default Key + IDsSuffix. It must differ from Key.
	IDsKey string
}

// Validate reports every problem with c at once, naming each field.
func (c Config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("redishash: Addr is required"))
	}
	if c.Key == "" {
		errs = append(errs, errors.New("redishash: Key is required"))
	}
	if c.DB < 0 {
		errs = append(errs, fmt.Errorf("redishash: DB %d is negative", c.DB))
	}
	if c.IDsKey != "" && c.IDsKey == c.Key {
		errs = append(errs, fmt.Errorf("redishash: IDsKey %q must differ from Key", c.IDsKey))
	}
	return errors.Join(errs...)
}

// Sink maintains a materialized view in a Redis hash. It is safe for
// concurrent use, though the sinks.Sink contract has one writer at a time.
type Sink struct {
	cfg       Config
	client    *redis.Client
	closeOnce sync.Once
	mu        sync.RWMutex // held for reading by Write, for writing by Close
	closed    bool
}

var _ sinks.Sink = (*Sink)(nil)

// New connects to Redis, checks the connection with PING and returns a sink.
// It does not write into cfg.
func New(ctx context.Context, cfg Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.IDsKey == "" {
		cfg.IDsKey = cfg.Key + IDsSuffix
	}
	client := redis.NewClient(&redis.Options{
		Addr:                  cfg.Addr,
		Username:              cfg.Username,
		Password:              cfg.Password,
		DB:                    cfg.DB,
		ContextTimeoutEnabled: true,
	})
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redishash: ping %s: %w", cfg.Addr, err)
	}
	return &Sink{cfg: cfg, client: client}, nil
}

// change is one command of a batch: a row to set, or a delete when row is
// nil.
type change struct {
	pk, id string
	row    []byte
}

// encodeRow encodes a row as a JSON object (null rows as {}), keys sorted,
// HTML characters not escaped.
func encodeRow(r record.Row) ([]byte, error) {
	if r == nil {
		r = record.Row{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Write applies the batch in order in one MULTI/EXEC round trip: HSET of the
// row and of the output id for +I and +U, HDEL of both for -D; -U is
// skipped. It returns once Redis has executed the transaction. An output that
// cannot be encoded (a row encoding/json rejects, an unknown kind) fails the
// batch before anything is sent. If the round trip fails, the transaction
// either ran completely or not at all; a retry applies it again, which is
// harmless (see the package doc).
func (s *Sink) Write(ctx context.Context, batch []record.Output) error {
	changes := make([]change, 0, len(batch))
	for _, o := range batch {
		switch o.Kind {
		case record.UpdateBefore:
		case record.Delete:
			changes = append(changes, change{pk: o.PK, id: o.ID})
		case record.Insert, record.UpdateAfter:
			row, err := encodeRow(o.Row)
			if err != nil {
				return fmt.Errorf("redishash: output %s: %w", o.ID, err)
			}
			changes = append(changes, change{pk: o.PK, id: o.ID, row: row})
		default:
			return fmt.Errorf("redishash: output %s: unknown kind %v", o.ID, o.Kind)
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if len(changes) == 0 {
		return nil
	}
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range changes {
			if c.row == nil {
				p.HDel(ctx, s.cfg.Key, c.pk)
				p.HDel(ctx, s.cfg.IDsKey, c.pk)
				continue
			}
			p.HSet(ctx, s.cfg.Key, c.pk, c.row)
			p.HSet(ctx, s.cfg.IDsKey, c.pk, c.id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redishash: apply %d outputs to %s: %w", len(changes), s.cfg.Key, err)
	}
	return nil
}

// Close closes the connection pool after any Write in progress. It is
// idempotent.
func (s *Sink) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		err = s.client.Close()
	})
	if err != nil {
		return fmt.Errorf("redishash: close: %w", err)
	}
	return nil
}
