package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/persistence"
)

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
