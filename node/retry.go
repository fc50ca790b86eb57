package node

import (
	"context"
	"fmt"
	"time"

	"github.com/joinery/joinery/internal/backoff"
)

// retryFor bounds how long one key request is retried before the node gives up.
const retryFor = 2 * time.Minute

// retryBackoff is the wait between retries of key requests, source reads
// and state writes: 10ms, doubled up to a second.
func retryBackoff() backoff.Backoff {
	return backoff.Backoff{Initial: 10 * time.Millisecond, Max: time.Second}
}

// retry runs f until it succeeds, backing off up to a second between tries,
// for at most retryFor or until ctx ends.
func (n *Node) retry(ctx context.Context, what string, f func(context.Context) error) error {
	bo := retryBackoff()
	deadline := time.Now().Add(retryFor)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) || notRetried(err) { // rollback.go
			return fmt.Errorf("%s: %w", what, err)
		}
		n.stats.Retries.Add(1)
		n.log.Warn(what+" failed; retrying", "backoff", bo.Delay(), "err", err)
		if err := bo.Wait(ctx); err != nil {
			return err
		}
	}
}
