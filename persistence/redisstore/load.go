package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

var _ persistence.BatchLoader = (*Store)(nil)

// loadScript reads keys' snapshots of one slot group (on one server: of
// one job) with the write generation, atomically: KEYS[1] is the
// generation key, then per key its key hash and its outbox hash, and when
// ARGV[3] is "3" its layout-2 hash too, from which a key not yet under its
// names is moved first (migrate3). It returns {generation or nil, then per
// key HGETALL of its hash followed by HGETALL of its outbox hash (flat;
// empty when neither exists)}. The script reads a key's base and parts
// from one write.
//
// With ARGV[2] not empty it first takes each key, as acquireScript does
// (for AcquireLoadMany): the hash's epoch field is raised to the floor and
// HINCRBY'd, and the reply holds the new epoch (as the field's string:
// Lua would round the integer) before the HGETALL. ARGV[2] "f": ARGV[1] is
// the floor (a cluster, which reads it before); "i": KEYS[1] is the job's
// incarnation key (created from the candidate ARGV[1] when missing) whose
// floor applies, and the generation key comes second (one server).
var loadScript = redis.NewScript(luaLess + luaMigrate3 + `
local floor, first, stride = ARGV[1], 1, tonumber(ARGV[3])
if ARGV[2] == 'i' then
` + luaIncarnation + `
  floor = string.match(inc, ':(%d+)$') or '0'
  first = 2
end
local out = {redis.call('GET', KEYS[first])}
for i = first + 1, #KEYS, stride do
  local hk = KEYS[i]
  if stride == 3 then
    migrate3(hk, KEYS[i + 1], KEYS[i + 2])
  end
  if ARGV[2] ~= '' then
    local cur = redis.call('HGET', hk, '_e') or '0'
    if less(cur, floor) then
      redis.call('HSET', hk, '_e', floor)
    end
    redis.call('HINCRBY', hk, '_e', 1)
    out[#out + 1] = redis.call('HGET', hk, '_e')
  end
  local h = redis.call('HGETALL', hk)
  local o = redis.call('HGETALL', KEYS[i + 1])
  for j = 1, #o do
    h[#h + 1] = o[j]
  end
  out[#out + 1] = h
end
return out
`)

// Load implements persistence.Store with one call of a script over the
// key's hash and its shard's write generation (all in one slot; a key in
// an earlier layout is moved to its names first). It returns persistence.ErrNotFound for a key without a
// snapshot, a *persistence.StaleStoreError when the generation is below
// the highest this handle saw acknowledged (the store went back in time:
// what it holds may lack writes this node made), and an error for a value
// it cannot decode. A key with parts comes back packed
// (persistence.Snapshot).
func (s *Store) Load(ctx context.Context, job string, key record.Key) (persistence.Snapshot, error) {
	out, err := s.LoadMany(ctx, job, []record.Key{key})
	if err != nil {
		return persistence.Snapshot{}, err
	}
	if len(out[0].State) == 0 {
		return persistence.Snapshot{}, persistence.ErrNotFound
	}
	return out[0], nil
}

// loadGroup is the part of a LoadMany in one call: one slot group (on one
// server: the whole job).
type loadGroup struct {
	idx  []int // keys' indexes in the call
	gen  genRef
	seen int64
	call scriptCall
}

// LoadMany implements persistence.BatchLoader: the keys' snapshots in one
// round trip, one call of the load script per slot group (on one server
// one call in all), pipelined; on a cluster each master gets its groups'
// calls in parallel. Each group's generation is checked as Load checks it.
func (s *Store) LoadMany(ctx context.Context, job string, keys []record.Key) ([]persistence.Snapshot, error) {
	_, out, err := s.readMany(ctx, job, keys, false)
	return out, err
}

var _ persistence.Activator = (*Store)(nil)

// AcquireLoadMany implements persistence.Activator: Acquire then Load of
// every key, in one call of a script per slot group (on one server one
// call in all, with the incarnation's floor read in it; on a cluster after
// one read of the lineage), pipelined. Each key's epoch is issued as
// Acquire issues it, and its snapshot read after, in the same atomic step.
func (s *Store) AcquireLoadMany(ctx context.Context, job string, keys []record.Key) ([]int64, []persistence.Snapshot, error) {
	return s.readMany(ctx, job, keys, true)
}

// readMany is LoadMany, and with acquire AcquireLoadMany.
func (s *Store) readMany(ctx context.Context, job string, keys []record.Key, acquire bool) ([]int64, []persistence.Snapshot, error) {
	if s.closed.Load() {
		return nil, nil, persistence.ErrClosed
	}
	out := make([]persistence.Snapshot, len(keys))
	var epochs []int64
	if acquire {
		epochs = make([]int64, len(keys))
	}
	if len(keys) == 0 {
		return epochs, out, nil
	}
	names, err := s.names(ctx, job)
	if err != nil {
		return nil, nil, err
	}
	l := names.jobLayout
	stride := "2"
	if names.legacy {
		stride = "3"
	}
	floorArgs := []any{"", "", stride}
	if acquire {
		floorArgs = []any{candidate(), "i", stride}
		if s.cluster {
			lin, err := s.Lineage(ctx, job)
			if err != nil {
				return nil, nil, err
			}
			floorArgs = []any{strconv.FormatInt(lin.Floor, 10), "f", stride}
		}
	}
	byGroup := map[int]*loadGroup{}
	var order []*loadGroup
	for i, key := range keys {
		out[i] = persistence.Snapshot{Job: job, Key: key}
		g := groupOf(string(key))
		gk := g
		if !s.cluster {
			gk = 0 // one server: one call
		}
		lg := byGroup[gk]
		if lg == nil {
			lg = &loadGroup{gen: s.genOf(job, l, g)}
			// What was acknowledged before the read is sent: a Save
			// answered while the read is on its way may have bumped past
			// what it finds.
			lg.seen = lg.gen.seen.Load()
			if acquire && !s.cluster {
				lg.call.keys = append(lg.call.keys, incarnationKey(l))
			}
			lg.call.keys = append(lg.call.keys, lg.gen.key)
			lg.call.args = floorArgs
			byGroup[gk] = lg
			order = append(order, lg)
		}
		lg.idx = append(lg.idx, i)
		lg.call.keys = names.keyNames(lg.call.keys, key)
	}
	calls := make([]scriptCall, len(order))
	for i, lg := range order {
		calls[i] = lg.call
	}
	per := 1
	if acquire {
		per = 2
	}
	replies, err := s.runScriptsWait(ctx, loadScript, calls, false)
	if err != nil {
		return nil, nil, wrap("load", err)
	}
	for i, lg := range order {
		res, ok := replies[i].([]any)
		if !ok || len(res) != 1+per*len(lg.idx) {
			return nil, nil, fmt.Errorf("redisstore: load of job %q: unexpected reply %v", job, replies[i])
		}
		if err := lg.gen.check(res[0], lg.seen); err != nil {
			return nil, nil, err
		}
		for j, at := range lg.idx {
			r := res[1+per*j : 1+per*(j+1)]
			if acquire {
				v, _ := r[0].(string)
				e, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, nil, fmt.Errorf("redisstore: acquire %q of job %q: owner epoch %v: %w", keys[at], job, r[0], err)
				}
				epochs[at], r = e, r[1:]
			}
			sn, err := decodeLoaded(r[0])
			if err != nil {
				return nil, nil, fmt.Errorf("redisstore: load %q of job %q: %w", keys[at], job, err)
			}
			out[at].State, out[at].Offsets = sn.State, sn.Offsets
		}
	}
	return epochs, out, nil
}

// decodeLoaded decodes one key of the load script's reply: the HGETALL of
// its hash (flat field, value list). Without a base field the key has no
// snapshot; its parts are packed with the base when there are any.
func decodeLoaded(hash any) (persistence.Snapshot, error) {
	flat, ok := hash.([]any)
	if !ok || len(flat)%2 != 0 {
		return persistence.Snapshot{}, fmt.Errorf("unexpected key hash %v", hash)
	}
	var base string
	var ps []persistence.Part
	found := false
	for i := 0; i < len(flat); i += 2 {
		field, ok1 := flat[i].(string)
		val, ok2 := flat[i+1].(string)
		if !ok1 || !ok2 {
			return persistence.Snapshot{}, fmt.Errorf("%w: bad field %v", errCorrupt, flat[i])
		}
		name, isPart := partOf(field)
		switch {
		case field == baseField:
			base, found = val, true
		case field == epochField:
		case !isPart:
			return persistence.Snapshot{}, fmt.Errorf("%w: unknown field %q", errCorrupt, field)
		case name == "" || val == "":
			return persistence.Snapshot{}, fmt.Errorf("%w: bad part %q", errCorrupt, field)
		default:
			if ps == nil {
				ps = make([]persistence.Part, 0, len(flat)/2-1)
			}
			ps = append(ps, persistence.Part{Name: name, Value: []byte(val)})
		}
	}
	if !found {
		return persistence.Snapshot{}, nil
	}
	offsets, state, err := decodeSnapshot([]byte(base))
	if err != nil {
		return persistence.Snapshot{}, err
	}
	if len(ps) > 0 {
		state = stateparts.Pack(state, ps)
	}
	return persistence.Snapshot{State: state, Offsets: offsets}, nil
}

// uniqueParts returns parts with one entry per name, the last one's (as
// the script writes them, a part's sets before its deletes, names must be
// unique); whole leaves out the deleting ones (a whole state has none).
// Most snapshots have a few parts and no repeats: those come back as they
// are.
func uniqueParts(parts []persistence.Part, whole bool) []persistence.Part {
	clean := true
	for i := range parts {
		if whole && len(parts[i].Value) == 0 {
			clean = false
			break
		}
		if len(parts) <= 16 {
			for j := i + 1; j < len(parts); j++ {
				if parts[j].Name == parts[i].Name {
					clean = false
				}
			}
		}
	}
	if clean && len(parts) <= 16 {
		return parts
	}
	out := stateparts.Merge(nil, parts)
	if whole {
		kept := out[:0]
		for _, p := range out {
			if len(p.Value) > 0 {
				kept = append(kept, p)
			}
		}
		out = kept
	}
	return out
}
