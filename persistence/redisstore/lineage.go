package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

var _ persistence.LineageStore = (*Store)(nil)

// incarnationKey and seqKey hold a job's lineage, in group 0 (the fixed
// group of the watermark board), so one script reads and bumps both on a
// cluster too.
func incarnationKey(l *jobLayout) string { return l.prefixes[0] + "incarnation" }
func seqKey(l *jobLayout) string         { return l.prefixes[0] + "seq" }

// luaLess compares two canonical decimal strings exactly (Lua numbers are
// doubles and would round beyond 2^53).
const luaLess = `
local function less(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then return na end
  if na then a, b = a:sub(2), b:sub(2) end
  local lt
  if #a ~= #b then lt = #a < #b else lt = a < b end
  if na then return a ~= b and not lt end
  return lt
end
`

// luaIncarnation reads the incarnation key KEYS[1], setting it to the
// candidate ARGV[1] when missing.
const luaIncarnation = `
local inc = redis.call('GET', KEYS[1])
if not inc then
  redis.call('SET', KEYS[1], ARGV[1])
  inc = ARGV[1]
end
`

// lineageScript returns {incarnation value, seq} of the job, creating the
// incarnation (KEYS[1], from ARGV[1]) when missing. KEYS[2] is the seq key.
var lineageScript = redis.NewScript(luaIncarnation + `
return {inc, redis.call('GET', KEYS[2]) or '0'}
`)

// commitSeenScript checks and bumps the lineage and (on one server)
// commits offsets in one atomic step. KEYS[1], KEYS[2]: incarnation and
// seq key; KEYS[3..]: offsets hashes. ARGV[1]: candidate incarnation;
// ARGV[2], ARGV[3]: the seen incarnation value ("" = no check) and seq;
// then triples (index into KEYS, partition id, offset). When the store is
// behind what was seen it writes nothing and returns {0, inc, seq}; else
// it bumps seq, sets each offset to the maximum of old and new, and
// returns {1, inc, new seq}.
var commitSeenScript = redis.NewScript(luaLess + luaIncarnation + `
local seq = redis.call('GET', KEYS[2]) or '0'
if ARGV[2] ~= '' and (inc ~= ARGV[2] or less(seq, ARGV[3])) then
  return {0, inc, seq}
end
redis.call('INCR', KEYS[2])
seq = redis.call('GET', KEYS[2])
for i = 4, #ARGV, 3 do
  local k = KEYS[tonumber(ARGV[i])]
  local old = redis.call('HGET', k, ARGV[i + 1])
  if not old or less(old, ARGV[i + 2]) then
    redis.call('HSET', k, ARGV[i + 1], ARGV[i + 2])
  end
end
return {1, inc, seq}
`)

// refoundScript replaces the incarnation KEYS[1] by ARGV[2] when it is
// still ARGV[1], and returns {incarnation, seq (KEYS[2])}.
var refoundScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
end
return {redis.call('GET', KEYS[1]) or '', redis.call('GET', KEYS[2]) or '0'}
`)

// acquireScript issues an owner epoch above the incarnation's floor.
// ARGV[2] is the number of the key's names at the end of KEYS: its hash,
// its outbox hash (unused but for migrate3) and, when "3", its layout-2
// hash, from which a key not yet under its names is moved first
// (migrate3). On one server KEYS[1] is the job's incarnation key before
// them (created from ARGV[1] when missing); on a cluster there is none and
// ARGV[1] is the floor itself, read before. An epoch field below the floor
// is raised to it, then HINCRBY. It returns the new epoch as the field's
// string: Lua would round HINCRBY's integer reply (beyond 2^53) to a
// double.
var acquireScript = redis.NewScript(luaLess + luaMigrate3 + `
local floor, stride = ARGV[1], tonumber(ARGV[2])
if #KEYS > stride then
` + luaIncarnation + `
  floor = string.match(inc, ':(%d+)$') or '0'
end
local hk = KEYS[#KEYS - stride + 1]
if stride == 3 then
  migrate3(hk, KEYS[#KEYS - 1], KEYS[#KEYS])
end
local cur = redis.call('HGET', hk, '_e') or '0'
if less(cur, floor) then
  redis.call('HSET', hk, '_e', floor)
end
redis.call('HINCRBY', hk, '_e', 1)
return redis.call('HGET', hk, '_e')
`)

// candidate is the incarnation value a script stores when the job has
// none: a fresh id and a floor from the clock.
func candidate() string {
	return encodeIncarnation(persistence.NewIncarnationID(), persistence.FloorAt(time.Now(), 0))
}

func encodeIncarnation(id string, floor int64) string { return id + ":" + strconv.FormatInt(floor, 10) }

// parseLineage reads a script's {incarnation value, seq} pair.
func parseLineage(job string, inc, seq any) (persistence.Lineage, error) {
	v, ok1 := inc.(string)
	q, ok2 := seq.(string)
	if !ok1 || !ok2 {
		return persistence.Lineage{}, fmt.Errorf("redisstore: lineage of job %q: unexpected reply %v, %v", job, inc, seq)
	}
	id, f, ok := strings.Cut(v, ":")
	floor, err1 := strconv.ParseInt(f, 10, 64)
	n, err2 := strconv.ParseInt(q, 10, 64)
	if !ok || id == "" || err1 != nil || err2 != nil {
		return persistence.Lineage{}, fmt.Errorf("redisstore: lineage of job %q: bad incarnation %q or seq %q", job, v, q)
	}
	return persistence.Lineage{Incarnation: id, Floor: floor, Seq: n}, nil
}

func replyPair(reply any, n int) ([]any, bool) {
	r, ok := reply.([]any)
	return r, ok && len(r) == n
}

// Lineage implements persistence.LineageStore with one script call on the
// job's group 0.
func (s *Store) Lineage(ctx context.Context, job string) (persistence.Lineage, error) {
	if s.closed.Load() {
		return persistence.Lineage{}, persistence.ErrClosed
	}
	names, err := s.names(ctx, job) // registered before the incarnation exists
	if err != nil {
		return persistence.Lineage{}, err
	}
	l := names.jobLayout
	v, err := lineageScript.Run(ctx, s.client, []string{incarnationKey(l), seqKey(l)}, candidate()).Result()
	if err != nil {
		return persistence.Lineage{}, wrap("lineage", err)
	}
	r, ok := replyPair(v, 2)
	if !ok {
		return persistence.Lineage{}, fmt.Errorf("redisstore: lineage of job %q: unexpected reply %v", job, v)
	}
	return parseLineage(job, r[0], r[1])
}

// CommitOffsets implements persistence.Store: CommitOffsetsSeen without a
// check. The commit sequence is bumped as with every commit.
func (s *Store) CommitOffsets(ctx context.Context, job string, offsets map[string]int64) error {
	_, err := s.CommitOffsetsSeen(ctx, job, offsets, persistence.Lineage{})
	return err
}

// CommitOffsetsSeen implements persistence.LineageStore. On one server it
// is one script: the lineage check, the seq bump and every offset (each
// set to the maximum of its old and new value, compared as exact decimal
// strings), atomically. On a cluster the offsets lie in up to 256 slots:
// the check and bump run first, as one script on group 0, and only when
// they pass are the offsets committed per group (one pipeline); a failure
// between them leaves the seq bumped and some offsets old, which only
// means more is replayed. With Config.MinReplicas the call waits for the
// replicas (WAIT) before it returns.
func (s *Store) CommitOffsetsSeen(ctx context.Context, job string, offsets map[string]int64, seen persistence.Lineage) (persistence.Lineage, error) {
	if s.closed.Load() {
		return persistence.Lineage{}, persistence.ErrClosed
	}
	names, err := s.names(ctx, job) // registered before the incarnation exists
	if err != nil {
		return persistence.Lineage{}, err
	}
	l := names.jobLayout
	seenInc, seenSeq := "", "0"
	if seen.Incarnation != "" {
		seenInc, seenSeq = encodeIncarnation(seen.Incarnation, seen.Floor), strconv.FormatInt(seen.Seq, 10)
	}
	call := scriptCall{keys: []string{incarnationKey(l), seqKey(l)}, args: []any{candidate(), seenInc, seenSeq}}
	var rest []scriptCall // cluster: the offsets, per group, after the check
	parts := map[int]int{}
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		g := groupOf(p)
		o := strconv.FormatInt(offsets[p], 10)
		if !s.cluster {
			i, ok := parts[g]
			if !ok {
				call.keys = append(call.keys, offsetsKey(l.prefixes[g]))
				i = len(call.keys)
				parts[g] = i
			}
			call.args = append(call.args, strconv.Itoa(i), p, o)
			continue
		}
		i, ok := parts[g]
		if !ok {
			rest = append(rest, scriptCall{keys: []string{offsetsKey(l.prefixes[g])}})
			i = len(rest) - 1
			parts[g] = i
		}
		rest[i].args = append(rest[i].args, p, o)
	}
	replies, err := s.runScripts(ctx, commitSeenScript, []scriptCall{call})
	if err != nil {
		return persistence.Lineage{}, wrap("commit offsets", err)
	}
	r, ok := replyPair(replies[0], 3)
	if !ok {
		return persistence.Lineage{}, fmt.Errorf("redisstore: commit offsets of job %q: unexpected reply %v", job, replies[0])
	}
	found, err := parseLineage(job, r[1], r[2])
	if err != nil {
		return persistence.Lineage{}, err
	}
	if passed, _ := r[0].(int64); passed != 1 {
		return found, &persistence.RollbackError{Job: job, Seen: seen, Found: found}
	}
	if len(rest) > 0 {
		if _, err := s.runScripts(ctx, commitScript, rest); err != nil {
			return persistence.Lineage{}, wrap("commit offsets", err)
		}
		s.copyFloors(job, l, offsets) // floors.go
	}
	return found, nil
}

// Refound implements persistence.LineageStore with one script on group 0.
func (s *Store) Refound(ctx context.Context, job string, found persistence.Lineage) (persistence.Lineage, error) {
	if s.closed.Load() {
		return persistence.Lineage{}, persistence.ErrClosed
	}
	l := layoutOf(s.prefix, job)
	next := encodeIncarnation(persistence.NewIncarnationID(), persistence.FloorAt(time.Now(), found.Floor))
	replies, err := s.runScripts(ctx, refoundScript, []scriptCall{{
		keys: []string{incarnationKey(l), seqKey(l)},
		args: []any{encodeIncarnation(found.Incarnation, found.Floor), next},
	}})
	if err != nil {
		return persistence.Lineage{}, wrap("refound", err)
	}
	r, ok := replyPair(replies[0], 2)
	if !ok {
		return persistence.Lineage{}, fmt.Errorf("redisstore: refound job %q: unexpected reply %v", job, replies[0])
	}
	return parseLineage(job, r[0], r[1])
}

// Acquire implements persistence.Store with one script call (two round
// trips on a cluster, whose incarnation key is in another slot than the
// key's hash: a lineage read, then the script): the hash's epoch field is
// raised to the incarnation's floor when below it, then HINCRBY (a key in
// layout version 1 is moved into its hash first, its epoch with it). So epochs
// stay unique across a rollback once the incarnation was re-founded (see
// persistence.Guard), and a store restarted empty issues epochs above
// every earlier incarnation's. With appendonly and appendfsync always, an
// epoch Acquire returned survives a crash of Redis.
func (s *Store) Acquire(ctx context.Context, job string, key record.Key) (int64, error) {
	if s.closed.Load() {
		return 0, persistence.ErrClosed
	}
	names, err := s.names(ctx, job)
	if err != nil {
		return 0, err
	}
	keys := names.keyNames([]string{incarnationKey(names.jobLayout)}, key)
	stride := strconv.Itoa(len(keys) - 1)
	arg := candidate()
	if s.cluster {
		lin, err := s.Lineage(ctx, job)
		if err != nil {
			return 0, err
		}
		keys, arg = keys[1:], strconv.FormatInt(lin.Floor, 10)
	}
	v, err := acquireScript.Run(ctx, s.client, keys, arg, stride).Text()
	if err != nil {
		return 0, wrap("acquire", err)
	}
	e, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redisstore: acquire %q of job %q: owner epoch %q: %w", key, job, v, err)
	}
	return e, nil
}

// ErrNotReplicated is returned (wrapped, with the counts) by Save and
// CommitOffsets when Config.MinReplicas replicas did not acknowledge the
// write within Config.ReplicaTimeout. The write is on the master and may
// or may not survive a failover; retrying the call is safe.
var ErrNotReplicated = errors.New("redisstore: not enough replicas acknowledged the write")
