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
// job of the batch) and ARGV[3..m+2] the least generation each must show:
// the highest this store handle saw acknowledged ("0" when none). When one
// shows less, the store went back in time under this writer: the script
// writes nothing and returns {0, {j, generation, ...}} for every such key.
// Then, per snapshot, it takes ARGV[2] keys: the key hash, the key's
// outbox hash, the group's timers sorted set (the same for every snapshot
// of a group) and, when ARGV[2] is "4", the key's layout-2 hash (a job
// whose keys the store may hold in an earlier layout); and 7+2s+2os+d+od
// arguments: the writer's epoch (decimal),
// the encoded value ("" deletes), the next timer (decimal; "" = no timer),
// s, d ("W" for a whole state, which deletes no part; a delta's number of
// parts it deletes, in decimal), os, od (the outbox parts set and
// deleted), s pairs of field and value to set in the key hash, os pairs to
// set in the outbox hash, d fields to delete from the key hash and od from
// the outbox hash (fields are unique within a snapshot, and never a
// reserved one; an outbox field is also deleted from the key hash, where
// a key moved from layout version 1 keeps its outbox entries). The
// join key (the timers' member) is the hash's name after its short tag,
// which the script cuts out. The parts go to HSET and HDEL as runs of
// ARGV (unpack), with no table built per snapshot. It first compares
// every hash's epoch field (missing counts as "0") with the writer's
// epoch; with four keys a snapshot, a hash that does not exist is first
// moved from its earlier layout (migrate3). Then it writes the snapshots
// that match, in order: HSET of the value; for a whole state whose hash
// holds more than its epoch and value (HLEN), DEL of the hash and HSET of
// its epoch (the writer's, which matched) and value, and DEL of the outbox
// hash; ZADD (or ZREM without a timer); then HSET of the parts set and
// HDEL of those deleted, in each hash; or, to delete, DEL of both hashes,
// HSET of its epoch (unless "0": none) and ZREM.
// A stored epoch field is never "0" (HINCRBY from a floor >= 0), so a
// writer's epoch "0" matched a hash without one.
// Checking
// everything before writing anything means a failing HGET (a key of the
// wrong type) aborts the script before it wrote. Last it INCRs every
// generation key and returns {1, refused, generations}: refused a flat
// array of the refused snapshots, 1-based index in the call, then the
// holder's epoch (a decimal string); generations the keys' new values.
//
// The epochs compare as strings: both sides are canonical decimals
// (HINCRBY's and strconv's), and Lua numbers are doubles. So do the
// generations (a counter, far below 2^53, returned as an integer). The
// timer goes to ZADD as the decimal string, which Redis parses into the
// double score exactly because Save keeps it within ±2^53.
var saveScript = redis.NewScript(luaLess + luaMigrate3 + `
local m, stride = tonumber(ARGV[1]), tonumber(ARGV[2])
local stale = {}
for j = 1, m do
  local cur = redis.call('GET', KEYS[j]) or '0'
  if less(cur, ARGV[j + 2]) then
    stale[#stale + 1] = j
    stale[#stale + 1] = cur
  end
end
if #stale > 0 then
  return {0, stale}
end
local fenced = {}
local ok = {}
local a, k, idx = m + 3, m + 1, 0
while a <= #ARGV do
  idx = idx + 1
  local hk = KEYS[k]
  local cur = redis.call('HGET', hk, '_e')
  if stride == 4 and not cur and redis.call('EXISTS', hk) == 0 then
    migrate3(hk, KEYS[k + 1], KEYS[k + 3])
    cur = redis.call('HGET', hk, '_e')
  end
  cur = cur or '0'
  if cur == ARGV[a] then
    ok[#ok + 1] = a
    ok[#ok + 1] = k
  else
    fenced[#fenced + 1] = idx
    fenced[#fenced + 1] = cur
  end
  local nd = ARGV[a + 4]
  a = a + 7 + 2 * tonumber(ARGV[a + 3]) + 2 * tonumber(ARGV[a + 5]) + tonumber(ARGV[a + 6])
  if nd ~= 'W' then
    a = a + tonumber(nd)
  end
  k = k + stride
end
local function runs(cmd, key, i, j)
  while i <= j do
    local e = math.min(i + 399, j)
    redis.call(cmd, key, unpack(ARGV, i, e))
    i = e + 1
  end
end
for o = 1, #ok, 2 do
  local a, k = ok[o], ok[o + 1]
  local hk, ok2, ts = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  local member = string.sub(hk, string.find(hk, '}', 1, true) + 1)
  local nd, e = ARGV[a + 4], ARGV[a]
  if ARGV[a + 1] == '' then
    redis.call('DEL', hk, ok2)
    if e ~= '0' then
      redis.call('HSET', hk, '_e', e)
    end
    redis.call('ZREM', ts, member)
  else
    redis.call('HSET', hk, '_b', ARGV[a + 1])
    if nd == 'W' then
      local n = 1
      if e ~= '0' then
        n = 2
      end
      if redis.call('HLEN', hk) > n then
        redis.call('DEL', hk)
        if e ~= '0' then
          redis.call('HSET', hk, '_e', e, '_b', ARGV[a + 1])
        else
          redis.call('HSET', hk, '_b', ARGV[a + 1])
        end
      end
      redis.call('DEL', ok2)
    end
    if ARGV[a + 2] == '' then
      redis.call('ZREM', ts, member)
    else
      redis.call('ZADD', ts, ARGV[a + 2], member)
    end
    local i = a + 7
    local j = i - 1 + 2 * tonumber(ARGV[a + 3])
    runs('HSET', hk, i, j)
    i, j = j + 1, j + 2 * tonumber(ARGV[a + 5])
    runs('HSET', ok2, i, j)
    if nd ~= 'W' then
      i, j = j + 1, j + tonumber(nd)
      runs('HDEL', hk, i, j)
      i, j = j + 1, j + tonumber(ARGV[a + 6])
      runs('HDEL', ok2, i, j)
      runs('HDEL', hk, i, j)
    end
  end
end
local gens = {}
for j = 1, m do
  gens[j] = redis.call('INCR', KEYS[j])
end
return {1, fenced, gens}
`)

// saveGroup is the part of a Save batch in one slot group of one job (on
// one server: the whole batch).
type saveGroup struct {
	idx  []int    // batch index of each snapshot of the call
	gens []genRef // the generation keys the call checks and bumps
	// The snapshots' keys (after the generation keys): stride per
	// snapshot, of which the key hash and the outbox hash are "" until
	// Save cuts them from one string made of kbuf, where it wrote the
	// names; lens holds each key hash's length.
	keys   []string
	kbuf   []byte
	lens   []int
	stride int
	// The snapshots' arguments (after m and the generations), each a
	// pointer (which an interface holds without allocating): a *string to
	// a string that outlives the call, or a *bytesArg in bs.
	args []any
	bs   []bytesArg
}

// bytesArg is an argument go-redis writes as the bytes themselves (through
// encoding.BinaryMarshaler): a *bytesArg in an interface allocates
// nothing, where a []byte would.
type bytesArg []byte

// MarshalBinary implements encoding.BinaryMarshaler.
func (b *bytesArg) MarshalBinary() ([]byte, error) { return *b, nil }

// bytes adds b as an argument.
func (g *saveGroup) bytes(b []byte) {
	// An append that moves bs leaves the pointers taken before to the old
	// array, which holds the same values.
	g.bs = append(g.bs, b)
	g.args = append(g.args, &g.bs[len(g.bs)-1])
}

// addNames adds a snapshot's keys: its key hash and outbox hash ("" until
// cutKeys), the timers set of its group and, with stride 4, its layout-2
// hash.
func (g *saveGroup) addNames(n *jobNames, key record.Key, gi int) {
	tag := n.short[gi]
	g.kbuf = append(append(g.kbuf, tag...), key...)
	g.kbuf = append(append(append(g.kbuf, outboxMark...), tag...), key...)
	g.lens = append(g.lens, len(tag)+len(key))
	g.keys = append(g.keys, "", "", n.timers[gi])
	if g.stride == 4 {
		g.keys = append(g.keys, keyHash2(n.prefixes[gi], key))
	}
}

// cutKeys fills in the names addNames wrote, in order: each snapshot's key
// hash, then its outbox hash, one byte longer.
func (g *saveGroup) cutKeys() {
	names := string(g.kbuf)
	for j, n := range g.lens {
		k := g.keys[g.stride*j:]
		k[0], names = names[:n], names[n:]
		k[1], names = names[:n+1], names[n+1:]
	}
}

// field adds the argument of part name's hash field (fieldOf): name
// itself; the integer of a right row, cut into vals; or, for a name that
// needs an escape, a new string.
func (g *saveGroup) field(vals *[]byte, name *string) {
	switch f := fieldOf(*name); {
	case f == *name:
		g.args = append(g.args, name)
	case len(f) < len(*name):
		lo := len(*vals)
		*vals = append(*vals, f...)
		g.bytes((*vals)[lo:])
	default:
		escaped := f // f itself does not escape: the common cases allocate nothing
		g.args = append(g.args, &escaped)
	}
}

// Save's constant arguments (variables: an argument is a pointer): a whole
// state's delete count, and a deleted snapshot's part count.
var modeWhole, noParts = "W", "0"

// Save implements persistence.Store. On one server the whole batch is one
// call of a Lua script (EVALSHA, falling back to EVAL), so one round trip.
// On a cluster the batch is split by slot group (job and group of the key,
// see the package doc) keeping batch order within each, and each part is
// one call of the script, all in one pipeline (one round trip per master,
// in parallel). The script checks the write generation of the call's
// shards against the highest this handle saw acknowledged (a lower one is
// a store gone back in time: the part writes nothing and Save returns a
// *persistence.StaleStoreError), checks every snapshot's epoch and writes
// the ones that pass, snapshot and timer index together, and
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
	if err := persistence.ValidSnapshots(batch); err != nil {
		return fmt.Errorf("redisstore: save: %w", err)
	}
	// The buffers' sizes: up to four decimals, the value and the parts'
	// values of each snapshot; its hashes' names. A job that may hold keys
	// of an earlier layout makes every call pass each key's layout-2 hash.
	size, ksize, nkeys, nargs := 0, 0, 0, 0
	stride := 3
	var names *jobNames
	for i := range batch {
		sn := &batch[i]
		if names == nil || sn.Job != batch[i-1].Job {
			var err error
			if names, err = s.names(ctx, sn.Job); err != nil {
				return err
			}
			if names.legacy {
				stride = 4
			}
		}
		ksize += 2*(len(names.short[groupOf(string(sn.Key))])+len(sn.Key)) + 1
		size += 6 * 20
		nkeys += stride
		nargs += 7 + 2*len(sn.Parts)
		for k := range sn.Parts {
			size += len(sn.Parts[k].Name) // a right row's field (field)
		}
		if len(sn.State) > 0 {
			size += snapshotLen(sn.Offsets, sn.State)
		}
	}
	// vals holds the decimals and encoded values the arguments point to;
	// an append that moves it leaves them pointing to the old array.
	vals := make([]byte, 0, size)
	parts := map[string]*saveGroup{}
	var order []*saveGroup
	names = nil
	for i := range batch {
		sn := &batch[i]
		if names == nil || sn.Job != batch[i-1].Job {
			names, _ = s.names(ctx, sn.Job) // found above
		}
		l := names.jobLayout
		g := groupOf(string(sn.Key))
		gp := l.prefixes[g]
		part := parts[gp]
		if !s.cluster && len(order) > 0 {
			part = order[0] // one server: one call, whatever the slots
		}
		if part == nil {
			part = &saveGroup{stride: stride}
			if !s.cluster {
				part.keys = make([]string, 0, nkeys)
				part.kbuf = make([]byte, 0, ksize)
				part.lens = make([]int, 0, len(batch))
				part.args = make([]any, 0, nargs)
				part.bs = make([]bytesArg, 0, nargs)
			}
			parts[gp] = part
			order = append(order, part)
		}
		ref := s.genOf(sn.Job, l, g)
		if !slices.ContainsFunc(part.gens, func(r genRef) bool { return r.key == ref.key }) {
			part.gens = append(part.gens, ref)
		}
		part.addNames(names, sn.Key, g)
		lo := len(vals)
		vals = strconv.AppendInt(vals, sn.Epoch, 10)
		part.bytes(vals[lo:])
		if len(sn.State) == 0 { // delete: no value, no timer
			part.bytes(nil)
			part.bytes(nil)
			part.args = append(part.args, &noParts, &modeWhole, &noParts, &noParts)
			part.idx = append(part.idx, i)
			continue
		}
		lo = len(vals)
		vals = appendSnapshot(vals, sn.Offsets, sn.State)
		part.bytes(vals[lo:])
		lo = len(vals)
		if sn.HasTimer {
			vals = strconv.AppendInt(vals, sn.NextTimer, 10)
		}
		part.bytes(vals[lo:]) // empty: no timer
		ps := uniqueParts(sn.Parts, !sn.Delta)
		// The counts: parts set and deleted, in the key hash and in the
		// outbox hash (outbox entries: isOutbox).
		var set, del, oset, odel int
		for k := range ps {
			switch o, d := isOutbox(ps[k].Name), len(ps[k].Value) == 0; {
			case o && d:
				odel++
			case o:
				oset++
			case d:
				del++
			default:
				set++
			}
		}
		count := func(n int) {
			lo := len(vals)
			vals = strconv.AppendInt(vals, int64(n), 10)
			part.bytes(vals[lo:])
		}
		count(set)
		if sn.Delta {
			count(del)
		} else {
			part.args = append(part.args, &modeWhole) // a whole state deletes no part
		}
		count(oset)
		count(odel)
		for _, outbox := range [2]bool{false, true} {
			for k := range ps {
				if len(ps[k].Value) > 0 && isOutbox(ps[k].Name) == outbox {
					part.field(&vals, &ps[k].Name)
					part.bytes(ps[k].Value)
				}
			}
		}
		for _, outbox := range [2]bool{false, true} {
			for k := range ps {
				if len(ps[k].Value) == 0 && isOutbox(ps[k].Name) == outbox {
					part.field(&vals, &ps[k].Name)
				}
			}
		}
		part.idx = append(part.idx, i)
	}
	calls := make([]scriptCall, len(order))
	for i, p := range order {
		p.cutKeys()
		keys := make([]string, 0, len(p.gens)+len(p.keys))
		strs := make([]string, 0, 2+len(p.gens))
		args := make([]any, 0, 2+len(p.gens)+len(p.args))
		strs = append(strs, strconv.Itoa(len(p.gens)), strconv.Itoa(p.stride))
		for _, r := range p.gens {
			keys = append(keys, r.key)
			strs = append(strs, strconv.FormatInt(r.seen.Load(), 10))
		}
		for j := range strs {
			args = append(args, &strs[j])
		}
		calls[i] = scriptCall{keys: append(keys, p.keys...), args: append(args, p.args...)}
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
