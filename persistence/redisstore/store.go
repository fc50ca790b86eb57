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

// saveScript applies a Save batch. Per snapshot i (0-based) it takes four
// keys, KEYS[4i+1..4i+4] = epoch key, state key, keys set, timers sorted
// set, and four arguments, ARGV[4i+1..4i+4] = the writer's epoch (decimal),
// the join key (the set members), the encoded value ("" deletes), the next
// timer (decimal; "" = no timer). It first compares every epoch key's value
// (a missing key counts as "0") with the writer's epoch, then writes the
// snapshots that match, in batch order: SET, SADD and ZADD (or ZREM without
// a timer), or DEL, SREM and ZREM. Checking everything before writing
// anything means a failing GET (a key of the wrong type) aborts the script
// before it wrote. It returns a flat array of the refused snapshots:
// 1-based batch index, then the holder's epoch (a decimal string), per
// refused snapshot.
//
// The epochs compare as strings: both sides are canonical decimals (INCR's
// and strconv's), and Lua numbers are doubles. The timer goes to ZADD as
// the decimal string, which Redis parses into the double score exactly
// because Save keeps it within ±2^53.
var saveScript = redis.NewScript(`
local fenced = {}
local ok = {}
for i = 1, #ARGV, 4 do
  local cur = redis.call('GET', KEYS[i]) or '0'
  if cur == ARGV[i] then
    ok[#ok + 1] = i
  else
    fenced[#fenced + 1] = (i + 3) / 4
    fenced[#fenced + 1] = cur
  end
end
for _, i in ipairs(ok) do
  if ARGV[i + 2] == '' then
    redis.call('DEL', KEYS[i + 1])
    redis.call('SREM', KEYS[i + 2], ARGV[i + 1])
    redis.call('ZREM', KEYS[i + 3], ARGV[i + 1])
  else
    redis.call('SET', KEYS[i + 1], ARGV[i + 2])
    redis.call('SADD', KEYS[i + 2], ARGV[i + 1])
    if ARGV[i + 3] == '' then
      redis.call('ZREM', KEYS[i + 3], ARGV[i + 1])
    else
      redis.call('ZADD', KEYS[i + 3], ARGV[i + 3], ARGV[i + 1])
    end
  end
end
return fenced
`)

// Save implements persistence.Store: the whole batch is one call of a Lua
// script (EVALSHA, falling back to EVAL once per server), which checks every
// snapshot's epoch and writes the ones that pass, snapshot and timer index
// together, atomically and in one round trip. A timer outside
// [persistence.MinTimer, persistence.MaxTimer] (which a double score could
// not hold exactly) fails the batch before anything is sent. When Save
// returns nil the batch is in Redis; how durable that is depends on the
// server's persistence settings (appendonly, appendfsync).
func (s *Store) Save(ctx context.Context, batch []persistence.Snapshot) error {
	if s.closed.Load() {
		return persistence.ErrClosed
	}
	if len(batch) == 0 {
		return nil
	}
	if err := persistence.CheckTimers(batch); err != nil {
		return fmt.Errorf("redisstore: save: %w", err)
	}
	keys := make([]string, 0, 4*len(batch))
	args := make([]any, 0, 4*len(batch))
	for _, sn := range batch {
		jp := jobPrefix(s.prefix, sn.Job)
		keys = append(keys, epochKey(jp, sn.Key), stateKey(jp, sn.Key), keysKey(jp), timersKey(jp))
		var value []byte // empty: delete
		timer := ""      // empty: no timer
		if len(sn.State) > 0 {
			value = encodeSnapshot(sn.Offsets, sn.State)
			if sn.HasTimer {
				timer = strconv.FormatInt(sn.NextTimer, 10)
			}
		}
		args = append(args, strconv.FormatInt(sn.Epoch, 10), string(sn.Key), value, timer)
	}
	res, err := saveScript.Run(ctx, s.client, keys, args...).Slice()
	if err != nil {
		return wrap("save", err)
	}
	return fencedErrors(batch, res)
}

// DueTimers implements persistence.Store with one ZRANGE of the job's
// timers set: BYSCORE from -inf to upTo, LIMIT 0 limit, WITHSCORES. Redis
// orders equal scores by member bytes, which is the contract's key order.
// upTo is clamped to persistence.MaxTimer, the largest score Save writes,
// so it is exact as a double. A score that is not an integer within
// [MinTimer, MaxTimer] (the set was written by something else) is an error.
func (s *Store) DueTimers(ctx context.Context, job string, upTo int64, limit int) ([]persistence.TimerDue, error) {
	if s.closed.Load() {
		return nil, persistence.ErrClosed
	}
	if limit <= 0 || upTo < persistence.MinTimer {
		return []persistence.TimerDue{}, nil
	}
	upTo = min(upTo, persistence.MaxTimer)
	zs, err := s.client.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
		Key:     timersKey(jobPrefix(s.prefix, job)),
		Start:   "-inf",
		Stop:    strconv.FormatInt(upTo, 10),
		ByScore: true,
		Offset:  0,
		Count:   int64(limit),
	}).Result()
	if err != nil {
		return nil, wrap("due timers", err)
	}
	out := make([]persistence.TimerDue, 0, len(zs))
	for _, z := range zs {
		m, ok := z.Member.(string)
		at := int64(z.Score)
		if !ok || float64(at) != z.Score || at < persistence.MinTimer || at > persistence.MaxTimer {
			return nil, fmt.Errorf("redisstore: due timers of job %q: bad entry %v with score %v", job, z.Member, z.Score)
		}
		out = append(out, persistence.TimerDue{Key: record.Key(m), At: at})
	}
	return out, nil
}

// fencedErrors turns saveScript's reply into the joined *FencedErrors of
// the refused snapshots of batch (nil when none was).
func fencedErrors(batch []persistence.Snapshot, res []any) error {
	if len(res)%2 != 0 {
		return fmt.Errorf("redisstore: save: script replied %d values, want pairs", len(res))
	}
	var errs []error
	for i := 0; i < len(res); i += 2 {
		idx, ok1 := res[i].(int64)
		holder, ok2 := res[i+1].(string)
		if !ok1 || !ok2 || idx < 1 || idx > int64(len(batch)) {
			return fmt.Errorf("redisstore: save: unexpected script reply %v, %v", res[i], res[i+1])
		}
		h, err := strconv.ParseInt(holder, 10, 64)
		if err != nil {
			return fmt.Errorf("redisstore: save: owner epoch %q: %w", holder, err)
		}
		sn := batch[idx-1]
		errs = append(errs, &persistence.FencedError{Job: sn.Job, Key: sn.Key, Epoch: sn.Epoch, Holder: h})
	}
	return errors.Join(errs...)
}

// Acquire implements persistence.Store with one INCR of the key's epoch
// key. With appendonly and appendfsync always, an epoch Acquire returned
// survives a crash of Redis; with weaker settings a restarted Redis may hand
// out an epoch again, so fencing is only as durable as the server.
func (s *Store) Acquire(ctx context.Context, job string, key record.Key) (int64, error) {
	if s.closed.Load() {
		return 0, persistence.ErrClosed
	}
	e, err := s.client.Incr(ctx, epochKey(jobPrefix(s.prefix, job), key)).Result()
	if err != nil {
		return 0, wrap("acquire", err)
	}
	return e, nil
}

// Epoch implements persistence.Store with one GET of the key's epoch key.
func (s *Store) Epoch(ctx context.Context, job string, key record.Key) (int64, error) {
	if s.closed.Load() {
		return 0, persistence.ErrClosed
	}
	v, err := s.client.Get(ctx, epochKey(jobPrefix(s.prefix, job), key)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap("epoch", err)
	}
	e, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redisstore: owner epoch %q of key %q of job %q: %w", v, key, job, err)
	}
	return e, nil
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
