package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

var _ persistence.Store = (*Store)(nil)

// Store is the persistence.Store on Redis. Its methods are safe for
// concurrent use; each takes a context whose deadline bounds the call,
// including connecting and retrying while Redis is unreachable.
type Store struct {
	client *redis.Client
	prefix string
	closed atomic.Bool
}

// New connects to the server cfg names and pings it, so an unreachable or
// misconfigured Redis is reported here (within ctx's deadline) rather than at
// the first Save. It returns cfg.Validate's error for a bad Config.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := &redis.Options{
		Addr:     cfg.Addr,
		Username: cfg.Username,
		Password: cfg.Password,
		DB:       cfg.DB,
		// Socket deadlines follow the caller's context deadline.
		ContextTimeoutEnabled: true,
		// The store needs no server push notifications.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if cfg.TLS != nil {
		opts.TLSConfig = cfg.TLS.Clone()
	}
	client := redis.NewClient(opts)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redisstore: cannot reach redis at %s: %w", cfg.Addr, err)
	}
	return &Store{client: client, prefix: cfg.keyPrefix()}, nil
}

// wrap translates a go-redis error: a closed client is persistence.ErrClosed
// (Close raced with the call), anything else is wrapped with the operation.
func wrap(op string, err error) error {
	if errors.Is(err, redis.ErrClosed) {
		return persistence.ErrClosed
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// Load implements persistence.Store with one GET. It returns
// persistence.ErrNotFound for a key without a snapshot and an error for a
// value it cannot decode. The returned Offsets is never nil.
func (s *Store) Load(ctx context.Context, job string, key record.Key) (persistence.Snapshot, error) {
	if s.closed.Load() {
		return persistence.Snapshot{}, persistence.ErrClosed
	}
	b, err := s.client.Get(ctx, stateKey(jobPrefix(s.prefix, job), key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return persistence.Snapshot{}, persistence.ErrNotFound
	}
	if err != nil {
		return persistence.Snapshot{}, wrap("load", err)
	}
	offsets, state, err := decodeSnapshot(b)
	if err != nil {
		return persistence.Snapshot{}, fmt.Errorf("redisstore: load %q of job %q: %w", key, job, err)
	}
	return persistence.Snapshot{Job: job, Key: key, State: state, Offsets: offsets}, nil
}

// Save implements persistence.Store: the whole batch is one MULTI/EXEC
// transaction sent in one pipeline, applied atomically. When Save returns
// nil the batch is in Redis; how durable that is depends on the server's
// persistence settings (appendonly, appendfsync).
func (s *Store) Save(ctx context.Context, batch []persistence.Snapshot) error {
	if s.closed.Load() {
		return persistence.ErrClosed
	}
	if len(batch) == 0 {
		return nil
	}
	pipe := s.client.TxPipeline()
	for _, sn := range batch {
		jp := jobPrefix(s.prefix, sn.Job)
		if len(sn.State) == 0 {
			pipe.Del(ctx, stateKey(jp, sn.Key))
			pipe.SRem(ctx, keysKey(jp), string(sn.Key))
			continue
		}
		pipe.Set(ctx, stateKey(jp, sn.Key), encodeSnapshot(sn.Offsets, sn.State), 0)
		pipe.SAdd(ctx, keysKey(jp), string(sn.Key))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return wrap("save", err)
	}
	return nil
}

// keysScanCount is the COUNT hint of each SSCAN in Keys.
const keysScanCount = 1000

// Keys implements persistence.Store. It walks the job's keys set with SSCAN,
// so a job with millions of keys does not block the server; keys saved or
// deleted while it runs may or may not be listed.
func (s *Store) Keys(ctx context.Context, job string) ([]record.Key, error) {
	if s.closed.Load() {
		return nil, persistence.ErrClosed
	}
	set := keysKey(jobPrefix(s.prefix, job))
	seen := make(map[string]struct{})
	var cursor uint64
	for {
		members, next, err := s.client.SScan(ctx, set, cursor, "", keysScanCount).Result()
		if err != nil {
			return nil, wrap("keys", err)
		}
		for _, m := range members {
			seen[m] = struct{}{} // SSCAN may return an element more than once
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	out := make([]record.Key, 0, len(seen))
	for m := range seen {
		out = append(out, record.Key(m))
	}
	return out, nil
}

// commitScript sets each field of the hash KEYS[1] named in ARGV (pairs of
// field, offset) to the maximum of its old and new value. Offsets are
// compared as canonical decimal strings: Lua numbers are doubles and would
// round offsets beyond 2^53.
var commitScript = redis.NewScript(`
local function less(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then return na end
  if na then a, b = a:sub(2), b:sub(2) end
  local lt
  if #a ~= #b then lt = #a < #b else lt = a < b end
  if na then return a ~= b and not lt end
  return lt
end
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if not old or less(old, ARGV[i + 1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 0
`)

// CommitOffsets implements persistence.Store with one script call (EVALSHA,
// falling back to EVAL once per server), which applies all offsets
// atomically and never lowers a stored one.
func (s *Store) CommitOffsets(ctx context.Context, job string, offsets map[string]int64) error {
	if s.closed.Load() {
		return persistence.ErrClosed
	}
	if len(offsets) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(offsets))
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		args = append(args, p, strconv.FormatInt(offsets[p], 10))
	}
	if err := commitScript.Run(ctx, s.client, []string{offsetsKey(jobPrefix(s.prefix, job))}, args...).Err(); err != nil {
		return wrap("commit offsets", err)
	}
	return nil
}

// CommittedOffsets implements persistence.Store with one HGETALL. The
// returned map is never nil.
func (s *Store) CommittedOffsets(ctx context.Context, job string) (map[string]int64, error) {
	if s.closed.Load() {
		return nil, persistence.ErrClosed
	}
	h, err := s.client.HGetAll(ctx, offsetsKey(jobPrefix(s.prefix, job))).Result()
	if err != nil {
		return nil, wrap("committed offsets", err)
	}
	out := make(map[string]int64, len(h))
	for p, v := range h {
		o, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redisstore: committed offset %q of job %q: %w", p, job, err)
		}
		out[p] = o
	}
	return out, nil
}

// Close closes the connection pool. Calls in flight fail with
// persistence.ErrClosed. It is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if err := s.client.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("redisstore: close: %w", err)
	}
	return nil
}
