// Package backoff owns the exponential wait between retries of a failed
// call: a first wait, doubled after each try up to a cap. It keeps no
// deadline and logs nothing: how long to go on retrying, and what to say
// about it, stay with the caller: node/retry.go (key requests, source
// reads, commits and sink writes), the sharded Redis Streams source's shard
// readers (sources/redisstream/joint.go) and the cluster's seed join loop
// (cluster/loops.go) and the key actors' state writes (actors/writer.go).
// It imports only the standard library.
package backoff

import (
	"context"
	"time"
)

// Backoff is the wait before the next retry. Its zero value waits Initial
// first; Initial and Max must be set (Max >= Initial). It is not safe for
// concurrent use: one retry loop owns one Backoff.
type Backoff struct {
	Initial, Max time.Duration
	cur          time.Duration // the next wait; 0 before the first
}

// Delay returns the next wait without using it up.
func (b *Backoff) Delay() time.Duration {
	if b.cur == 0 {
		return b.Initial
	}
	return b.cur
}

// Next returns the next wait and doubles the one after it, up to Max.
func (b *Backoff) Next() time.Duration {
	d := b.Delay()
	b.cur = min(2*d, b.Max)
	return d
}

// Reset makes the next wait Initial again.
func (b *Backoff) Reset() { b.cur = 0 }

// Wait sleeps for Next(), or returns ctx.Err() as soon as ctx ends (the
// wait is then used up all the same).
func (b *Backoff) Wait(ctx context.Context) error {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
