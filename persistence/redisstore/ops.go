package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// saveScript applies a Save batch, or the part of one that falls in one
// slot group. KEYS[1..m] are the write generation keys the call covers
// (ARGV[1] = m; on a cluster the group's, on one server the job's, one per
// job of the batch) and ARGV[2..m+1] the least generation each must show:
// the highest this store handle saw acknowledged ("0" when none). When one
// shows less, the store went back in time under this writer: the script
// writes nothing and returns {0, {j, generation, ...}} for every such key.
// Then, per snapshot, it takes five keys: epoch key, state key, keys set,
// timers sorted set (the last two the same for every snapshot of a group),
// parts hash; and 6+2n arguments: the writer's epoch (decimal), the join
// key (the set members), the encoded value ("" deletes), the next timer
// (decimal; "" = no timer), "W" (a whole state) or "D" (a delta), n, and n
// pairs of part name and value ("" deletes the part; names are unique
// within a snapshot). It first compares every epoch key's value (a missing
// key counts as "0") with the writer's epoch, then writes the snapshots
// that match, in order: SET, SADD and ZADD (or ZREM without a timer), DEL
// of the parts hash for a whole state, then HSET of the parts set and HDEL
// of those deleted; or, to delete, DEL of state and parts, SREM and ZREM.
// Checking
// everything before writing anything means a failing GET (a key of the
// wrong type) aborts the script before it wrote. Last it INCRs every
// generation key and returns {1, refused, generations}: refused a flat
// array of the refused snapshots, 1-based index in the call, then the
// holder's epoch (a decimal string); generations the keys' new values.
//
// The epochs compare as strings: both sides are canonical decimals (INCR's
// and strconv's), and Lua numbers are doubles. So do the generations (a
// counter, far below 2^53, returned as an integer). The timer goes to ZADD
// as the decimal string, which Redis parses into the double score exactly
// because Save keeps it within ±2^53.
var saveScript = redis.NewScript(luaLess + `
local m = tonumber(ARGV[1])
local stale = {}
for j = 1, m do
  local cur = redis.call('GET', KEYS[j]) or '0'
  if less(cur, ARGV[j + 1]) then
    stale[#stale + 1] = j
    stale[#stale + 1] = cur
  end
end
if #stale > 0 then
  return {0, stale}
end
local fenced = {}
local ok = {}
local a, k, idx = m + 2, m + 1, 0
while a <= #ARGV do
  idx = idx + 1
  local cur = redis.call('GET', KEYS[k]) or '0'
  if cur == ARGV[a] then
    ok[#ok + 1] = a
    ok[#ok + 1] = k
  else
    fenced[#fenced + 1] = idx
    fenced[#fenced + 1] = cur
  end
  a = a + 6 + 2 * tonumber(ARGV[a + 5])
  k = k + 5
end
for o = 1, #ok, 2 do
  local a, k = ok[o], ok[o + 1]
  local member = ARGV[a + 1]
  if ARGV[a + 2] == '' then
    redis.call('DEL', KEYS[k + 1], KEYS[k + 4])
    redis.call('SREM', KEYS[k + 2], member)
    redis.call('ZREM', KEYS[k + 3], member)
  else
    redis.call('SET', KEYS[k + 1], ARGV[a + 2])
    redis.call('SADD', KEYS[k + 2], member)
    if ARGV[a + 3] == '' then
      redis.call('ZREM', KEYS[k + 3], member)
    else
      redis.call('ZADD', KEYS[k + 3], ARGV[a + 3], member)
    end
    if ARGV[a + 4] ~= 'D' then
      redis.call('DEL', KEYS[k + 4])
    end
    local set, del = {}, {}
    for j = a + 6, a + 5 + 2 * tonumber(ARGV[a + 5]), 2 do
      if ARGV[j + 1] == '' then
        del[#del + 1] = ARGV[j]
      else
        set[#set + 1] = ARGV[j]
        set[#set + 1] = ARGV[j + 1]
      end
      if #set >= 400 then
        redis.call('HSET', KEYS[k + 4], unpack(set))
        set = {}
      end
      if #del >= 400 then
        redis.call('HDEL', KEYS[k + 4], unpack(del))
        del = {}
      end
    end
    if #set > 0 then
      redis.call('HSET', KEYS[k + 4], unpack(set))
    end
    if #del > 0 then
      redis.call('HDEL', KEYS[k + 4], unpack(del))
    end
  end
end
local gens = {}
for j = 1, m do
  gens[j] = redis.call('INCR', KEYS[j])
end
return {1, fenced, gens}
`)

// scriptCall is one call of a script: its keys and arguments.
type scriptCall struct {
	keys []string
	args []any
}

// runScripts runs calls of script in one pipeline (on a cluster, one per
// master, sent in parallel; go-redis follows MOVED and ASK and retries
// TRYAGAIN per command). Calls answered NOSCRIPT (a node that has not seen
// the script: a new or restarted one, or one that took over a slot) run
// again with EVAL in a second pipeline. It returns every call's reply, or
// the first error.
func (s *Store) runScripts(ctx context.Context, script *redis.Script, calls []scriptCall) ([]any, error) {
	return s.runScriptsWait(ctx, script, calls, true)
}

// runScriptsWait is runScripts; wait false leaves out the WAIT of
// Config.MinReplicas (for scripts that only read).
func (s *Store) runScriptsWait(ctx context.Context, script *redis.Script, calls []scriptCall, wait bool) ([]any, error) {
	if len(calls) == 1 && (s.cfg.MinReplicas == 0 || !wait) {
		// One call needs no pipeline: EVALSHA, and EVAL after NOSCRIPT.
		v, err := script.Run(ctx, s.client, calls[0].keys, calls[0].args...).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		return []any{v}, nil
	}
	cmds := make([]*redis.Cmd, len(calls))
	var waits []*redis.Cmd
	_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = script.EvalSha(ctx, p, c.keys, c.args...)
		}
		if wait {
			waits = s.appendWait(ctx, p, waits)
		}
		return nil
	})
	var again []int
	for i, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range again {
				cmds[i] = script.Eval(ctx, p, calls[i].keys, calls[i].args...)
			}
			if wait {
				waits = s.appendWait(ctx, p, waits)
			}
			return nil
		})
	}
	out := make([]any, len(cmds))
	for i, c := range cmds {
		v, err := c.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		out[i] = v
	}
	if err := s.checkWaits(waits); err != nil {
		return nil, err
	}
	return out, nil
}

// appendWait queues a WAIT for Config.MinReplicas replicas at the end of
// pipeline p (when MinReplicas is set): it runs on the connection that
// sent the writes before it, so it waits for exactly those.
func (s *Store) appendWait(ctx context.Context, p redis.Pipeliner, waits []*redis.Cmd) []*redis.Cmd {
	if s.cfg.MinReplicas == 0 {
		return waits
	}
	return append(waits, p.Do(ctx, "WAIT", s.cfg.MinReplicas, s.cfg.replicaTimeout().Milliseconds()))
}

// checkWaits turns a WAIT that reached fewer than Config.MinReplicas
// replicas into an error wrapping ErrNotReplicated.
func (s *Store) checkWaits(waits []*redis.Cmd) error {
	for _, w := range waits {
		n, err := w.Int64()
		if err != nil {
			return err
		}
		if n < int64(s.cfg.MinReplicas) {
			return fmt.Errorf("%w: %d of %d replicas within %s", ErrNotReplicated, n, s.cfg.MinReplicas, s.cfg.replicaTimeout())
		}
	}
	return nil
}

// saveGroup is the part of a Save batch in one slot group of one job (on
// one server: the whole batch).
type saveGroup struct {
	idx  []int    // batch index of each snapshot of the call
	gens []genRef // the generation keys the call checks and bumps
	snap scriptCall
}

// Save implements persistence.Store. On one server the whole batch is one
// call of a Lua script (EVALSHA, falling back to EVAL), so one round trip.
// On a cluster the batch is split by slot group (job and group of the key,
// see the package doc) keeping batch order within each, and each part is
// one call of the script, all in one pipeline (one round trip per master,
// in parallel). The script checks the write generation of the call's
// shards against the highest this handle saw acknowledged (a lower one is
// a store gone back in time: the part writes nothing and Save returns a
// *persistence.StaleStoreError), checks every snapshot's epoch and writes
// the ones that pass, snapshot, keys set and timer index together, and
// bumps the generations, atomically. A timer outside
// [persistence.MinTimer, persistence.MaxTimer] (which a double score could
// not hold exactly) fails the batch before anything is sent. When Save
// returns nil the batch is in Redis; how durable that is depends on the
// server's persistence settings (appendonly, appendfsync). On another
// error, on a cluster, some parts may have been applied and others not;
// each snapshot was applied wholly or not at all, so retrying the batch is
// safe.
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
	if err := persistence.ValidParts(batch); err != nil {
		return fmt.Errorf("redisstore: save: %w", err)
	}
	parts := map[string]*saveGroup{}
	var order []*saveGroup
	for i, sn := range batch {
		l := layoutOf(s.prefix, sn.Job)
		g := groupOf(string(sn.Key))
		gp := l.prefixes[g]
		part := parts[gp]
		if !s.cluster && len(order) > 0 {
			part = order[0] // one server: one call, whatever the slots
		}
		if part == nil {
			part = &saveGroup{}
			parts[gp] = part
			order = append(order, part)
		}
		ref := s.genOf(sn.Job, l, g)
		if !slices.ContainsFunc(part.gens, func(r genRef) bool { return r.key == ref.key }) {
			part.gens = append(part.gens, ref)
		}
		var value []byte // empty: delete
		timer := ""      // empty: no timer
		mode := "W"
		var ps []persistence.Part
		if len(sn.State) > 0 {
			value = encodeSnapshot(sn.Offsets, sn.State)
			if sn.HasTimer {
				timer = strconv.FormatInt(sn.NextTimer, 10)
			}
			if sn.Delta {
				mode = "D"
			}
			ps = uniqueParts(sn.Parts, !sn.Delta)
		}
		part.snap.keys = append(part.snap.keys, epochKey(gp, sn.Key), stateKey(gp, sn.Key), keysKey(gp), timersKey(gp), partsKey(gp, sn.Key))
		part.snap.args = append(part.snap.args, strconv.FormatInt(sn.Epoch, 10), string(sn.Key), value, timer, mode, len(ps))
		for _, p := range ps {
			part.snap.args = append(part.snap.args, p.Name, p.Value)
		}
		part.idx = append(part.idx, i)
	}
	calls := make([]scriptCall, len(order))
	for i, p := range order {
		keys := make([]string, 0, len(p.gens)+len(p.snap.keys))
		args := make([]any, 0, 1+len(p.gens)+len(p.snap.args))
		args = append(args, len(p.gens))
		for _, r := range p.gens {
			keys = append(keys, r.key)
			args = append(args, strconv.FormatInt(r.seen.Load(), 10))
		}
		calls[i] = scriptCall{keys: append(keys, p.snap.keys...), args: append(args, p.snap.args...)}
	}
	replies, err := s.runScripts(ctx, saveScript, calls)
	if err != nil {
		return wrap("save", err)
	}
	var refused []refusal
	var stale []error
	for i, p := range order {
		r, st, err := parseSave(p, replies[i])
		if err != nil {
			return err
		}
		refused = append(refused, r...)
		stale = append(stale, st...)
	}
	if len(stale) > 0 {
		return errors.Join(stale...)
	}
	slices.SortFunc(refused, func(a, b refusal) int { return cmp.Compare(a.index, b.index) })
	var errs []error
	for _, r := range refused {
		sn := batch[r.index]
		errs = append(errs, &persistence.FencedError{Job: sn.Job, Key: sn.Key, Epoch: sn.Epoch, Holder: r.holder})
	}
	return errors.Join(errs...)
}

// parseSave reads saveScript's reply for part: the fenced snapshots, or
// (nothing written) one *persistence.StaleStoreError per generation key
// found behind; the generations the call bumped are noted as seen.
func parseSave(part *saveGroup, reply any) ([]refusal, []error, error) {
	res, ok := reply.([]any)
	if !ok || len(res) < 2 {
		return nil, nil, fmt.Errorf("redisstore: save: unexpected script reply %v", reply)
	}
	if passed, _ := res[0].(int64); passed != 1 {
		st, ok := res[1].([]any)
		if !ok || len(st)%2 != 0 || len(st) == 0 {
			return nil, nil, fmt.Errorf("redisstore: save: unexpected script reply %v", reply)
		}
		var errs []error
		for i := 0; i < len(st); i += 2 {
			j, ok1 := st[i].(int64)
			cur, ok2 := st[i+1].(string)
			if !ok1 || !ok2 || j < 1 || j > int64(len(part.gens)) {
				return nil, nil, fmt.Errorf("redisstore: save: unexpected script reply %v", reply)
			}
			found, err := strconv.ParseInt(cur, 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("redisstore: save: write generation %q: %w", cur, err)
			}
			r := part.gens[j-1]
			errs = append(errs, &persistence.StaleStoreError{Job: r.job, Shard: r.group, Seen: r.seen.Load(), Found: found})
		}
		return nil, errs, nil
	}
	gens, ok := res[2].([]any)
	if len(res) != 3 || !ok || len(gens) != len(part.gens) {
		return nil, nil, fmt.Errorf("redisstore: save: unexpected script reply %v", reply)
	}
	for j, v := range gens {
		g, ok := v.(int64)
		if !ok {
			return nil, nil, fmt.Errorf("redisstore: save: unexpected write generation %v", v)
		}
		part.gens[j].note(g)
	}
	r, err := parseFenced(part.idx, res[1])
	return r, nil, err
}

// refusal is one fenced snapshot: its batch index and the holder's epoch.
type refusal struct {
	index  int
	holder int64
}

// parseFenced reads saveScript's reply for a call whose snapshots have the
// batch indexes idx.
func parseFenced(idx []int, reply any) ([]refusal, error) {
	res, ok := reply.([]any)
	if !ok || len(res)%2 != 0 {
		return nil, fmt.Errorf("redisstore: save: unexpected script reply %v", reply)
	}
	var out []refusal
	for i := 0; i < len(res); i += 2 {
		j, ok1 := res[i].(int64)
		holder, ok2 := res[i+1].(string)
		if !ok1 || !ok2 || j < 1 || j > int64(len(idx)) {
			return nil, fmt.Errorf("redisstore: save: unexpected script reply %v, %v", res[i], res[i+1])
		}
		h, err := strconv.ParseInt(holder, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redisstore: save: owner epoch %q: %w", holder, err)
		}
		out = append(out, refusal{index: idx[j-1], holder: h})
	}
	return out, nil
}

// dueMinFetch is the least number of entries DueTimers asks of each group
// at first.
const dueMinFetch = 16

// DueTimers implements persistence.Store by merging the job's groups'
// timer sets. It asks every group, in one pipeline, for its first entries
// up to upTo (ZRANGE BYSCORE -inf upTo LIMIT 0 n WITHSCORES, with n about
// 2*limit/groups, at least 16), merges them, and asks again, with four
// times the count, only the groups that returned all they were asked and
// whose last entry comes before the limit-th entry of the merge (they may
// hold more that belong in the answer); so a few due timers cost one round
// trip and a large backlog a few, each fetching about what is returned.
// Redis orders equal scores by member bytes, which is the contract's key
// order. upTo is clamped to persistence.MaxTimer, the largest score Save
// writes, so it is exact as a double. A score that is not an integer within
// [MinTimer, MaxTimer] (a set written by something else) is an error.
func (s *Store) DueTimers(ctx context.Context, job string, upTo int64, limit int) ([]persistence.TimerDue, error) {
	if s.closed.Load() {
		return nil, persistence.ErrClosed
	}
	if limit <= 0 || upTo < persistence.MinTimer {
		return []persistence.TimerDue{}, nil
	}
	upTo = min(upTo, persistence.MaxTimer)
	stop := strconv.FormatInt(upTo, 10)
	l := layoutOf(s.prefix, job)
	count := make([]int, groups)
	got := make([][]persistence.TimerDue, groups)
	ask := make([]int, groups)
	for g := range ask {
		ask[g] = g
		count[g] = min(limit, max(dueMinFetch, 2*limit/groups+1))
	}
	for len(ask) > 0 {
		cmds := make([]*redis.ZSliceCmd, len(ask))
		_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, g := range ask {
				cmds[i] = p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
					Key: timersKey(l.prefixes[g]), Start: "-inf", Stop: stop, ByScore: true, Count: int64(count[g]),
				})
			}
			return nil
		})
		for i, g := range ask {
			zs, err := cmds[i].Result()
			if err != nil {
				return nil, wrap("due timers", err)
			}
			got[g] = got[g][:0]
			for _, z := range zs {
				m, ok := z.Member.(string)
				at := int64(z.Score)
				if !ok || float64(at) != z.Score || at < persistence.MinTimer || at > persistence.MaxTimer {
					return nil, fmt.Errorf("redisstore: due timers of job %q: bad entry %v with score %v", job, z.Member, z.Score)
				}
				got[g] = append(got[g], persistence.TimerDue{Key: record.Key(m), At: at})
			}
		}
		merged := mergeDue(got)
		var cut *persistence.TimerDue
		if len(merged) >= limit {
			cut = &merged[limit-1]
		}
		more := ask[:0]
		for _, g := range ask {
			if len(got[g]) < count[g] {
				continue // the group has nothing more up to upTo
			}
			if cut != nil && compareDue(got[g][len(got[g])-1], *cut) >= 0 {
				continue // what else it holds comes after the answer's last entry
			}
			count[g] = min(limit, 4*count[g])
			more = append(more, g)
		}
		ask = more
		if len(ask) == 0 {
			return merged[:min(len(merged), limit)], nil
		}
	}
	return []persistence.TimerDue{}, nil
}

// mergeDue returns the entries of all groups, ordered by At, then Key.
func mergeDue(got [][]persistence.TimerDue) []persistence.TimerDue {
	n := 0
	for _, g := range got {
		n += len(g)
	}
	out := make([]persistence.TimerDue, 0, n)
	for _, g := range got {
		out = append(out, g...)
	}
	slices.SortFunc(out, compareDue)
	return out
}

func compareDue(a, b persistence.TimerDue) int {
	if c := cmp.Compare(a.At, b.At); c != 0 {
		return c
	}
	return cmp.Compare(a.Key, b.Key)
}

// Epoch implements persistence.Store with one GET of the key's epoch key.
func (s *Store) Epoch(ctx context.Context, job string, key record.Key) (int64, error) {
	if s.closed.Load() {
		return 0, persistence.ErrClosed
	}
	v, err := s.client.Get(ctx, epochKey(layoutOf(s.prefix, job).keyPrefix(key), key)).Result()
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

// Keys implements persistence.Store. It walks the keys sets of the job's
// groups with SSCAN, one pipeline per round over the groups not yet done,
// so a job with millions of keys does not block a server; keys saved or
// deleted while it runs may or may not be listed.
func (s *Store) Keys(ctx context.Context, job string) ([]record.Key, error) {
	if s.closed.Load() {
		return nil, persistence.ErrClosed
	}
	l := layoutOf(s.prefix, job)
	seen := make(map[string]struct{})
	cursor := make([]uint64, groups)
	ask := make([]int, groups)
	for g := range ask {
		ask[g] = g
	}
	for len(ask) > 0 {
		cmds := make([]*redis.ScanCmd, len(ask))
		_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, g := range ask {
				cmds[i] = p.SScan(ctx, keysKey(l.prefixes[g]), cursor[g], "", keysScanCount)
			}
			return nil
		})
		more := ask[:0]
		for i, g := range ask {
			members, next, err := cmds[i].Result()
			if err != nil {
				return nil, wrap("keys", err)
			}
			for _, m := range members {
				seen[m] = struct{}{} // SSCAN may return an element more than once
			}
			if cursor[g] = next; next != 0 {
				more = append(more, g)
			}
		}
		ask = more
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
var commitScript = redis.NewScript(luaLess + `
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if not old or less(old, ARGV[i + 1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 0
`)

// CommittedOffsets implements persistence.Store with an HGETALL of every
// group's offsets hash, in one pipeline. The returned map is never nil.
func (s *Store) CommittedOffsets(ctx context.Context, job string) (map[string]int64, error) {
	if s.closed.Load() {
		return nil, persistence.ErrClosed
	}
	out := make(map[string]int64)
	err := s.groupOffsets(ctx, job, "committed offset", offsetsKey, func(p string, o int64) { out[p] = o })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// groupOffsets reads the hash key(group prefix) of every group of job, one
// pipeline of HGETALL, and calls add with each field and its value, an
// offset (what names the values in errors).
func (s *Store) groupOffsets(ctx context.Context, job, what string, key func(gp string) string, add func(p string, o int64)) error {
	l := layoutOf(s.prefix, job)
	cmds := make([]*redis.MapStringStringCmd, groups)
	_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for g := range cmds {
			cmds[g] = p.HGetAll(ctx, key(l.prefixes[g]))
		}
		return nil
	})
	for _, c := range cmds {
		h, err := c.Result()
		if err != nil {
			return wrap(what+"s", err)
		}
		for p, v := range h {
			o, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("redisstore: %s %q of job %q: %w", what, p, job, err)
			}
			add(p, o)
		}
	}
	return nil
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
