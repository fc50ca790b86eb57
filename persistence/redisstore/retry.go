package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/backoff"
)

// A Redis Cluster moves a slot key by key (redis-cli --cluster reshard,
// rebalance, add-node and del-node all do): the old master answers a key it
// no longer has with ASK, and a command over several keys of the slot, some
// moved and some not, with TRYAGAIN, on either side, until the last key has
// moved. go-redis's ClusterClient follows MOVED and ASK for a single command
// and retries its TRYAGAIN, but in a pipeline it retries a node's commands
// only when the first of them failed so: a script further down a pipeline
// (Save's, the loads', the commits' and floors' calls, one per slot group)
// comes back with the TRYAGAIN. The save, load, commit and floor scripts
// are multi-key scripts in one slot, so during a migration held half done
// (a large slot, or an operator's reshard stopped midway) they meet it for
// as long as the slot stays split.

// retryable reports whether err is a cluster answer that says the command
// did not run and will run once a slot migration moves on: TRYAGAIN (the
// command's keys are split between the slot's old and new master), or an
// ASK, MOVED or CLUSTERDOWN left over once go-redis's own redirections
// (clusterMaxRedirects) ran out. Each of them is answered before the command
// runs, so sending the command again can neither repeat a write nor skip
// one. Every other error (a refused write, a timeout, a dead connection,
// whose command may have run) is the caller's.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	if redis.IsTryAgainError(err) || redis.IsClusterDownError(err) {
		return true
	}
	if _, ok := redis.IsAskError(err); ok {
		return true
	}
	_, ok := redis.IsMovedError(err)
	return ok
}

// The backoff of runScriptsWait's retries: 8 ms doubling to 400 ms, 12
// retries, about 3 s in all (go-redis's own retry of a single command
// comes on top of it). A migration held half done for longer ends the call
// with the TRYAGAIN, which its caller retries as any other failed write or
// load (actors.Writer, the key requests of node/retry.go).
const (
	retryInitial  = 8 * time.Millisecond
	retryMax      = 400 * time.Millisecond
	retryAttempts = 12
)

// runScriptsWait runs calls of script (runScriptsOnce) and sends the calls
// answered with a retryable error again, alone, after a backoff, until
// every call has run, one fails otherwise, retryAttempts retries have
// passed or ctx ends. The calls that ran keep their replies and are not
// sent again. It returns every call's reply in order, or the first error.
func (s *Store) runScriptsWait(ctx context.Context, script *redis.Script, calls []scriptCall, wait bool) ([]any, error) {
	out := make([]any, len(calls))
	todo := make([]int, len(calls)) // indices into calls still to run
	for i := range todo {
		todo[i] = i
	}
	bo := backoff.Backoff{Initial: retryInitial, Max: retryMax}
	sub := calls
	for attempt := 0; ; attempt++ {
		replies, errs, werr := s.runScriptsOnce(ctx, script, sub, wait)
		var again []int
		var last error
		for j, i := range todo {
			switch err := errs[j]; {
			case err == nil:
				out[i] = replies[j]
			case retryable(err) && attempt < retryAttempts:
				again, last = append(again, i), err
			default:
				return nil, err
			}
		}
		if werr != nil {
			return nil, werr
		}
		if len(again) == 0 {
			return out, nil
		}
		if err := bo.Wait(ctx); err != nil {
			return nil, last
		}
		todo, sub = again, make([]scriptCall, len(again))
		for j, i := range again {
			sub[j] = calls[i]
		}
	}
}
