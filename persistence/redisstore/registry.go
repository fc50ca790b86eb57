package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// registryKey is the job registry: a hash from "<prefix>\x00<job>" to the
// job's id in this store ("<id>", or "<id>:m" when the store may hold the
// job's keys in an earlier layout), and from the field "" to the last id
// issued. It is one key for every prefix, so ids are unique in the store
// and the key hashes, whose names carry the id and not the prefix, never
// meet another job's.
const registryKey = "joinery:jobs"

// registerScript returns the registry entry of field ARGV[1] of KEYS[1],
// adding one with the next id when there is none; ARGV[2] "m" marks the
// new entry as holding keys of an earlier layout.
var registerScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then
  return v
end
v = tostring(redis.call('HINCRBY', KEYS[1], '', 1))
if ARGV[2] == 'm' then
  v = v .. ':m'
end
redis.call('HSET', KEYS[1], ARGV[1], v)
return v
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
			v, err = registerScript.Run(ctx, s.client, []string{registryKey}, field, mark).Text()
		}
	}
	if err != nil {
		return nil, wrap("job registry", err)
	}
	idText, legacy := strings.CutSuffix(v, ":m")
	id, err := strconv.Atoi(idText)
	if err != nil || id < 1 {
		return nil, fmt.Errorf("redisstore: job registry %s: entry of job %q is %q, not an id", registryKey, job, v)
	}
	n := &jobNames{jobLayout: l, id: id, legacy: legacy}
	ck := field + "\x00" + idText
	if t, ok := shortTagCache.Load(ck); ok {
		n.short = t.([groups]string)
	} else {
		tags, ok := shortTags(l, id)
		if !ok {
			return nil, fmt.Errorf("redisstore: job %q (id %d): no short hash tag for a slot group", job, id)
		}
		shortTagCache.Store(ck, tags)
		n.short = tags
	}
	actual, _ := s.jobs.LoadOrStore(job, n)
	return actual.(*jobNames), nil
}
