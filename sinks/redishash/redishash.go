package redishash

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/jsonenc"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks"
)

// IDsSuffix is appended to Key to name the id hash when Config.IDsKey is
// empty.
const IDsSuffix = ":ids"

// SeqsSuffix is appended to Key to name the sequence hash when
// Config.SeqsKey is empty.
const SeqsSuffix = ":seq"

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("redishash: sink closed")

// Config configures a Redis hash sink. The zero value of an optional field
// means its default.
type Config struct {
	// Options are the connection to the Redis server (Addr required; see
	// redisopts.Options): OnRedisError is the node's
	// joinery_redis_errors_total.
	redisopts.Options
	// Key is the hash holding the view, PK → row JSON. Required.
	Key string
	// IDsKey is the hash holding PK → id of the output that wrote the row.
	// Default Key + IDsSuffix. It must differ from Key.
	IDsKey string
	// SeqsKey is the hash holding PK → Seq of the output that last changed
	// the row (kept after a delete, so a late older output cannot bring the
	// row back). Default Key + SeqsSuffix.
	SeqsKey string
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
	if c.SeqsKey != "" && (c.SeqsKey == c.Key || c.SeqsKey == c.IDsKey) {
		errs = append(errs, fmt.Errorf("redishash: SeqsKey %q must differ from Key and IDsKey", c.SeqsKey))
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
	if cfg.SeqsKey == "" {
		cfg.SeqsKey = cfg.Key + SeqsSuffix
	}
	client := cfg.Client()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redishash: ping %s: %w", cfg.Addr, err)
	}
	return &Sink{cfg: cfg, client: client}, nil
}

// encodeRow encodes a row as a JSON object (null rows as {}), keys sorted,
// HTML characters not escaped.
func encodeRow(r record.Row) ([]byte, error) {
	if r == nil {
		r = record.Row{}
	}
	return jsonenc.Marshal(r)
}

// Write applies the batch in order in one round trip (a Lua script, atomic
// like MULTI/EXEC): HSET of the row and of the output id for +I and +U, HDEL
// of both for -D; -U is skipped. An output with a Seq (record.Output.Seq) is
// applied only when its Seq is above the one the view holds for its PK, and
// its Seq is kept (in SeqsKey, also after a delete), so outputs that arrive
// out of order — two sources or two nodes writing one key's outputs — never
// leave an older row in the view. It returns once Redis has run the script.
// An output that cannot be encoded (a row encoding/json rejects, an unknown
// kind) fails the batch before anything is sent. A retry applies the batch
// again, which is harmless (see the package doc).
func (s *Sink) Write(ctx context.Context, batch []record.Output) error {
	args := make([]any, 0, 4*len(batch))
	for _, o := range batch {
		var row []byte
		switch o.Kind {
		case record.UpdateBefore:
			continue
		case record.Delete:
		case record.Insert, record.UpdateAfter:
			var err error
			if row, err = encodeRow(o.Row); err != nil {
				return fmt.Errorf("redishash: output %s: %w", o.ID, err)
			}
		default:
			return fmt.Errorf("redishash: output %s: unknown kind %v", o.ID, o.Kind)
		}
		seq := ""
		if o.Seq > 0 {
			seq = fmt.Sprintf("%020d", o.Seq) // fixed width: compares as a string
		}
		args = append(args, o.PK, o.ID, seq, row)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if len(args) == 0 {
		return nil
	}
	if err := applyScript.Run(ctx, s.client, []string{s.cfg.Key, s.cfg.IDsKey, s.cfg.SeqsKey}, args...).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redishash: apply %d outputs to %s: %w", len(args)/4, s.cfg.Key, err)
	}
	return nil
}

// applyScript applies (pk, id, seq, row) quadruples in order: an empty row
// deletes, an empty seq applies unconditionally.
var applyScript = redis.NewScript(`
for i = 1, #ARGV, 4 do
  local pk, id, seq, row = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3]
  local newer = true
  if seq ~= "" then
    local cur = redis.call('HGET', KEYS[3], pk)
    if cur and cur >= seq then newer = false end
  end
  if newer then
    if row == "" then
      redis.call('HDEL', KEYS[1], pk)
      redis.call('HDEL', KEYS[2], pk)
    else
      redis.call('HSET', KEYS[1], pk, row)
      redis.call('HSET', KEYS[2], pk, id)
    end
    if seq ~= "" then redis.call('HSET', KEYS[3], pk, seq) end
  end
end
return 0
`)

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
