package redisstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// registryKey is the job registry: a hash from "<prefix>\x00<job>" to the
// job's id in this store ("<id>", or "<id>:m" when the store may hold the
// job's keys in an earlier layout) and from "#<id>" back to the job's
// field. It is one key for every prefix, so ids are unique in the store
// and the key hashes, whose names carry the id and not the prefix, never
// meet another job's.
const registryKey = "joinery:jobs"

// An id is two of tagLetters: idSpace ids. A job's id is the first one
// free in the registry from its home id (homeID), so it is the same
// whenever the registry is written again — after a store went back in
// time to before the job's first run, the job gets the id its keys
// already have — unless another job of the store took it first (two jobs'
// home ids are equal with a chance of 1/idSpace).
const idSpace = len(tagLetters) * len(tagLetters)

// homeID is job's home id under prefix: FNV-1a (32 bit) of
// "<prefix>\x00<job>" mod idSpace.
func homeID(prefix, job string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(prefix + "\x00" + job))
	return int(h.Sum32() % uint32(idSpace))
}

// registerScript returns the registry entry of field ARGV[1] of KEYS[1],
// adding one when there is none: the first id from the home id ARGV[4]
// (an index into the pairs of the letters ARGV[3]) whose "#<id>" field
// HSETNX can claim; ARGV[2] "m" marks the new entry as holding keys of an
// earlier layout.
var registerScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then
  return v
end
local a, home = ARGV[3], tonumber(ARGV[4])
local n = #a
for i = 0, n * n - 1 do
  local k = (home + i) % (n * n)
  local hi, lo = math.floor(k / n) + 1, k % n + 1
  local id = string.sub(a, hi, hi) .. string.sub(a, lo, lo)
  if redis.call('HSETNX', KEYS[1], '#' .. id, ARGV[1]) == 1 then
    v = id
    if ARGV[2] == 'm' then
      v = v .. ':m'
    end
    redis.call('HSET', KEYS[1], ARGV[1], v)
    return v
  end
end
return redis.error_reply('the job registry ' .. KEYS[1] .. ' has no free id')
`)

// shortTagCache holds the short tags of every (prefix, job, id) a store
// of this process has used: a search takes a few milliseconds, once.
var shortTagCache sync.Map

// names returns job's names in layout version 3, registering the job in
// the store on its first use (cached per Store: a job's id never changes
// in a store). A job registered here for the first time is marked as
// holding keys of an earlier layout when its incarnation key exists: every
// store of layout version 1 or 2 that acquired a key of the job wrote it,
// and every method of this one that can create it (Lineage,
// CommitOffsetsSeen, Acquire, AcquireLoadMany) registers the job first.
func (s *Store) names(ctx context.Context, job string) (*jobNames, error) {
	if n, ok := s.jobs.Load(job); ok {
		return n.(*jobNames), nil
	}
	l := layoutOf(s.prefix, job)
	field := s.prefix + "\x00" + job
	v, err := s.client.HGet(ctx, registryKey, field).Result()
	if errors.Is(err, redis.Nil) {
		var n int64
		if n, err = s.client.Exists(ctx, incarnationKey(l)).Result(); err == nil {
			mark := ""
			if n > 0 {
				mark = "m"
			}
			v, err = registerScript.Run(ctx, s.client, []string{registryKey}, field, mark, tagLetters, homeID(s.prefix, job)).Text()
		}
	}
	if err != nil {
		return nil, wrap("job registry", err)
	}
	id, legacy := strings.CutSuffix(v, ":m")
	if len(id) != 2 || strings.Trim(id, tagLetters) != "" {
		return nil, fmt.Errorf("redisstore: job registry %s: entry of job %q is %q, not an id", registryKey, job, v)
	}
	n := &jobNames{jobLayout: l, id: id, legacy: legacy}
	ck := field + "\x00" + id
	if t, ok := shortTagCache.Load(ck); ok {
		n.short = t.([groups]string)
	} else {
		tags, ok := shortTags(l, id)
		if !ok {
			return nil, fmt.Errorf("redisstore: job %q (id %s): no short hash tag for a slot group", job, id)
		}
		shortTagCache.Store(ck, tags)
		n.short = tags
	}
	actual, _ := s.jobs.LoadOrStore(job, n)
	return actual.(*jobNames), nil
}
