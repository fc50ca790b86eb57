package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

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
