package node

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/joinery/joinery/internal/backoff"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// A source sharded by the row's primary key with repartition: stream
// (docs/concepts/key-groups.md, "Key groups") is read in two halves. The raw
// shards' reader (readRaw) decodes and routes each record as any reader
// does, but instead of sending its events to their keys it writes the
// record to the repartition stream of each key group its events' keys
// belong to (streamshard.KeyGroup), and commits the raw offsets once that
// write returned (sources.Repartitioner: each raw record written once, in
// its shard's order, even when re-delivered after a crash). The
// repartition streams' reader (readRepartitioned, job.SourcePlan.
// RepartitionReader) is a source partitioned by the join key: the keys of
// repartition shard g are key group g, placed on the node that reads it,
// so its events reach their actors without a network hop; the key actors
// record its positions (gap refusal and dedup as for any source).

// sourceRole is how a reader reads its source.
type sourceRole int

const (
	readDirect        sourceRole = iota // events go to their keys
	readRaw                             // the raw shards of a repartitioned source
	readRepartitioned                   // the repartition streams of one
)

// sourceRun is one reader Run starts: sources[index] read in role.
type sourceRun struct {
	index int
	cfg   job.SourcePlan
	role  sourceRole
}

// sourceRuns lists the readers of the job's sources: one per source, two
// for a repartitioned one.
func (n *Node) sourceRuns() []sourceRun {
	var runs []sourceRun
	for i, cfg := range n.plan.Sources {
		if rr, ok := cfg.RepartitionReader(); ok {
			runs = append(runs, sourceRun{i, cfg, readRaw}, sourceRun{i, rr, readRepartitioned})
			continue
		}
		runs = append(runs, sourceRun{i, cfg, readDirect})
	}
	return runs
}

// setRole checks that a raw reader's source can repartition.
func (r *reader) setRole() error {
	if r.role != readRaw {
		return nil
	}
	fwd, ok := r.src.(sources.Repartitioner)
	if !ok || r.groupOf == nil {
		return fmt.Errorf("source %s (%s) cannot repartition its records", r.cfg.Name, r.cfg.Type)
	}
	r.fwd = fwd
	return nil
}

// forward adds m to b's records to repartition: once per key group of its
// events' keys (a row moving between keys of two groups goes to both; each
// applies its own key's part, inGroup). A record without events (bad
// input dead-lettered, filtered, a tombstone) is not forwarded; its offset
// is committed with the batch.
func (r *reader) forward(b *batch, m sources.Message, evs []record.Event) {
	var groups [2]int
	seen := groups[:0]
	for _, e := range evs {
		if g := r.groupOf(e.Key); !slices.Contains(seen, g) {
			seen = append(seen, g)
			b.forward = append(b.forward, sources.Forward{Pos: m.Pos, Group: g, Value: m.Value})
		}
	}
}

// inGroup reports whether key belongs to the key group of the repartition
// shard pos was read from.
func (r *reader) inGroup(key record.Key, pos record.Position) bool {
	return r.groupOf(key) == int(pos.Partition)
}

// keyGroupOf is the key group of a key of sp, a source partitioned or
// repartitioned by the join key whose groups the job knows (its kind's
// rule: streamshard.KeyGroup over the shards of a Redis stream source);
// nil for another source.
func keyGroupOf(sp job.SourcePlan) func(record.Key) int {
	g := sp.KeyGroups
	if g == nil || g.Of == nil || g.Groups <= 0 {
		return nil
	}
	return func(key record.Key) int { return g.Of(string(key), g.Groups) }
}

// maxRepartitionBacklog bounds the entries a repartition stream holds
// (written, not consumed yet): past it the raw readers wait for the
// streams to be consumed before they commit the batch and read on, so a
// large raw backlog — a fleet starting on hours of changes — is not copied
// into Redis at once, faster than the key groups apply it.
const maxRepartitionBacklog = 20000

// repartition writes forward, the records of a group of batches, to the
// repartition streams (readRaw), retried as a commit is, then waits while a
// repartition stream holds more than maxRepartitionBacklog entries: the
// batches' raw offsets are committed after.
func (r *reader) repartition(ctx context.Context, forward []sources.Forward) error {
	if len(forward) == 0 {
		return nil
	}
	var backlog int64
	if err := r.n.retry(ctx, "repartition", func(ctx context.Context) error {
		var err error
		backlog, err = r.fwd.Repartition(ctx, forward)
		return err
	}); err != nil {
		return err
	}
	bo := backoff.Backoff{Initial: 10 * time.Millisecond, Max: 250 * time.Millisecond}
	for backlog > maxRepartitionBacklog {
		if err := bo.Wait(ctx); err != nil {
			return err
		}
		if err := r.n.retry(ctx, "repartition backlog", func(ctx context.Context) error {
			var err error
			backlog, err = r.fwd.Backlog(ctx)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}
