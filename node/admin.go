package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/cluster"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/timers"
)

// adminConfig is the admin server's access settings from the job file:
// tokens of both scopes, the metrics token, insecure and TLS.
func adminConfig(plan *job.Plan) admin.ServerConfig {
	a := plan.Spec.Admin
	return admin.ServerConfig{Addr: a.Addr, Token: a.Token, ReadToken: a.ReadToken, MetricsToken: a.MetricsToken,
		Insecure: a.Insecure, TLS: plan.AdminTLS, Pprof: a.Pprof}
}

// backend answers the admin API for this node (admin.Backend and its
// KeyActions extension).
type backend struct{ n *Node }

var (
	_ admin.Backend     = backend{}
	_ admin.KeyActions  = backend{}
	_ admin.HotKeys     = backend{}
	_ admin.Watermarker = backend{}
	_ admin.Explainer   = backend{}
	_ admin.Liveness    = backend{}
)

// Hot lists the busiest keys this node routed in the last complete 10 s
// window (a top-k kept with bounded memory; no per-key metric labels). Each
// node answers for the events its own sources read.
func (b backend) Hot(_ context.Context, job string, n int) ([]admin.HotKey, error) {
	if err := b.job(job); err != nil {
		return nil, err
	}
	keys, rates := b.n.hot.Top(n, time.Now())
	out := make([]admin.HotKey, len(keys))
	for i, k := range keys {
		out[i] = admin.HotKey{Job: job, Key: string(k), EventsPerSec: rates[i]}
	}
	return out, nil
}

func (b backend) job(job string) error {
	if job != b.n.spec.Name {
		return fmt.Errorf("%w: this fleet runs job %q, not %q", admin.ErrNotFound, b.n.spec.Name, job)
	}
	return nil
}

// Members lists the members this node sees. Another member's key actor
// count and start time are what it last gossiped (cluster.MemberInfo: its
// count refreshed every few seconds); a departed member has neither.
func (b backend) Members(context.Context) ([]admin.Member, error) {
	ms := b.n.provider.Members()
	out := make([]admin.Member, 0, len(ms))
	alive := 0
	now := time.Now()
	for _, m := range ms {
		am := admin.Member{ID: m.ID, Name: m.Name, Address: m.Address, GossipAddr: m.GossipAddr, Status: m.Status, Self: m.Self, KeysActive: -1}
		if departed := m.Status == cluster.StatusLeft || m.Status == cluster.StatusDead; !departed {
			am.KeysActive = int(m.KeysActive)
			if !m.Started.IsZero() {
				am.Uptime = max(0, now.Sub(m.Started))
			}
		}
		if m.Self {
			am.KeysActive = int(b.n.stats.ActiveKeys())
			am.Uptime = time.Since(b.n.started)
			am.Memory = b.n.keyMemory()
		}
		if m.Status == cluster.StatusAlive {
			alive++
		}
		out = append(out, am)
	}
	b.n.metrics.ClusterMembers.Set(float64(alive))
	return out, nil
}

// Locate names the member that owns key by the job's placement (its key
// group's owner, or rendezvous; see keyPlacement), without activating it.
func (b backend) Locate(_ context.Context, job, key string) (admin.Location, error) {
	if err := b.job(job); err != nil {
		return admin.Location{}, err
	}
	owner := b.n.client.Owner(key)
	if owner == "" {
		return admin.Location{}, errors.New("no member hosts the job's key actors yet")
	}
	_, active := b.n.cluster.PidCache.Get(key, b.n.kind)
	return admin.Location{Job: job, Key: key, Node: owner, Active: active}, nil
}

// Inspect asks the key's actor for its live state (activating it from the
// store if it was passivated). A key without a snapshot in the store is not
// found, and nothing is activated for it (see inspect).
func (b backend) Inspect(ctx context.Context, job, key string) (admin.KeyState, error) {
	ks, err := b.inspect(ctx, job, key)
	if err != nil {
		return admin.KeyState{}, err
	}
	out := admin.KeyState{Job: job, Key: key, Node: ks.Node, Offsets: ks.Offsets, Epoch: ks.Epoch,
		Timers: ks.Timers, Watermark: ks.Watermark, Outbox: int(ks.Outbox), State: timedJSON(ks.Timed)}
	if b.n.timed == nil {
		out.Watermark = math.MinInt64
	}
	if len(ks.Left) > 0 {
		out.Left = json.RawMessage(ks.Left)
	}
	for _, r := range ks.Rights {
		out.Rights = append(out.Rights, json.RawMessage(r))
	}
	return out, nil
}

// inspect asks key's actor for its live state; ErrNotFound for another job
// or a key without any state.
//
// It reads the store first and only asks the actor of a key that has a
// snapshot: activating a key takes an owner epoch (an INCR in Redis) and
// leaves a live actor behind, so inspecting keys that do not exist would
// otherwise create an epoch key and an actor each. A live actor's
// acknowledged state is always in the store already (it answers only once
// its snapshot is durable), so a key the store does not know has nothing to
// show.
func (b backend) inspect(ctx context.Context, job, key string) (*keypb.KeyState, error) {
	if err := b.job(job); err != nil {
		return nil, err
	}
	if _, err := b.n.store.Load(ctx, job, record.Key(key)); errors.Is(err, persistence.ErrNotFound) {
		return nil, fmt.Errorf("%w: key %q has no state", admin.ErrNotFound, key)
	} else if err != nil {
		return nil, fmt.Errorf("inspect: read the store: %w", err)
	}
	ks, err := b.n.Inspect(record.Key(key))
	if err != nil {
		return nil, err
	}
	if len(ks.Offsets) == 0 && len(ks.Left) == 0 && len(ks.Rights) == 0 && len(ks.Timed) == 0 {
		return nil, fmt.Errorf("%w: key %q has no state", admin.ErrNotFound, key)
	}
	return ks, nil
}

// timedJSON is an event-time join's snapshot as JSON: the snapshot minus
// its two header bytes (version, join kind), nil when there is none or it
// is not JSON.
func timedJSON(snap []byte) json.RawMessage {
	if len(snap) < 3 || !json.Valid(snap[2:]) {
		return nil
	}
	return json.RawMessage(snap[2:])
}

// Watermarks reports this node's per-partition watermarks. Lag is measured
// in event time: how far a partition's watermark is behind the newest event
// any partition has seen. A changelog job has no watermarks.
func (b backend) Watermarks(_ context.Context, job string) ([]admin.Watermark, int64, error) {
	if err := b.job(job); err != nil {
		return nil, 0, err
	}
	if b.n.evt == nil {
		return nil, math.MinInt64, nil
	}
	parts, global, _ := b.n.evt.view(time.Now())
	return watermarksOf(parts), global, nil
}

func watermarksOf(parts []timers.PartitionWatermark) []admin.Watermark {
	newest := int64(math.MinInt64)
	for _, p := range parts {
		newest = max(newest, p.MaxTs)
	}
	out := make([]admin.Watermark, len(parts))
	for i, p := range parts {
		src, _, _ := strings.Cut(p.Partition, "/")
		w := admin.Watermark{Source: src, Partition: p.Partition, Watermark: p.Watermark, MaxTs: p.MaxTs, Idle: p.Idle}
		if newest != math.MinInt64 && p.Watermark != math.MinInt64 && p.Watermark < newest {
			w.LagMs = newest - p.Watermark
		}
		out[i] = w
	}
	return out
}

// Why explains what key waits for: the waits its join's state machine
// lists (restored from the live actor's snapshot), against this node's
// watermark and the partition holding it back.
func (b backend) Why(ctx context.Context, job, key string) (admin.Why, error) {
	ks, err := b.inspect(ctx, job, key)
	if err != nil {
		return admin.Why{}, err
	}
	why := admin.Why{Job: job, Key: key, Node: ks.Node, Watermark: math.MinInt64, KeyWatermark: math.MinInt64}
	if b.n.timed == nil {
		why.Note = "a changelog (cdc) join emits every change at once: nothing waits on event time"
		return why, nil
	}
	parts, global, holder := b.n.evt.view(time.Now())
	why.Watermark, why.KeyWatermark = global, ks.Watermark
	for _, w := range watermarksOf(parts) {
		if w.Partition == holder {
			why.HeldBy = &w
		}
	}
	if len(ks.Timed) == 0 {
		why.Note = "the key holds no event-time state: nothing pending"
		return why, nil
	}
	j := b.n.timed()
	if err := j.Restore(ks.Timed); err != nil {
		return admin.Why{}, fmt.Errorf("decode key state: %w", err)
	}
	ex, ok := j.(joins.Explainer)
	if !ok {
		why.Note = "this join type cannot list what it waits for"
		return why, nil
	}
	for _, w := range ex.Pending(admin.MaxWaits) {
		wt := admin.Wait{What: w.What, NeedsWatermark: w.Needs}
		if global < w.Needs {
			wt.Behind = w.Needs - global
			if global == math.MinInt64 {
				wt.Behind = math.MaxInt64
			}
		}
		why.Waits = append(why.Waits, wt)
	}
	if len(why.Waits) == 0 {
		why.Note = "nothing pending"
	} else if holder == "" {
		why.Note = "no partition is active (all idle or none seen): the watermark waits for new events"
	}
	return why, nil
}

// Live reports whether the node must be restarted: its peers declared it
// dead (a long pause, a partition) and protoactor on them no longer places
// keys on it, for good (cluster.DeadNotice). /healthz fails with the reason,
// so a liveness probe restarts it under a new member ID.
func (b backend) Live(context.Context) error {
	if d := b.n.provider.DeclaredDead(); d != nil {
		b.n.metrics.DeclaredDead.Set(1)
		return d
	}
	return nil
}

// Ready reports whether the node can do its work: membership started and the
// store reachable.
func (b backend) Ready(ctx context.Context) error {
	if b.n.draining.Load() {
		return errors.New("draining")
	}
	if err := b.Live(ctx); err != nil {
		return err
	}
	alive := 0
	for _, m := range b.n.provider.Members() {
		if m.Status == cluster.StatusAlive {
			alive++
		}
	}
	b.n.metrics.ClusterMembers.Set(float64(alive))
	if alive == 0 {
		return errors.New("not in the cluster yet")
	}
	if _, err := b.n.store.CommittedOffsets(ctx, b.n.spec.Name); err != nil {
		return fmt.Errorf("state store unreachable: %w", err)
	}
	for _, s := range b.n.spec.Sources {
		if _, ok := b.n.opened.Load(s.Name); !ok {
			return fmt.Errorf("source %s is not open yet", s.Name)
		}
	}
	return nil
}

// Passivate asks the key's actor to stop once its state is durable.
func (b backend) Passivate(_ context.Context, job, key string) error {
	if err := b.job(job); err != nil {
		return err
	}
	_, err := b.n.client.Request(key, &keypb.Passivate{}, b.n.timeout)
	return err
}

// Evict stops the key's actor at once; every change it acknowledged is
// already durable, so the next event reloads it from the store.
func (b backend) Evict(_ context.Context, job, key string) error {
	if err := b.job(job); err != nil {
		return err
	}
	pid, err := b.n.client.PID(key)
	if err != nil {
		return err
	}
	b.n.system.Root.Stop(pid)
	b.n.client.Forget(key)
	return nil
}
