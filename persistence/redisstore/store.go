package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/persistence"
)

var _ persistence.Store = (*Store)(nil)

// Store is the persistence.Store on Redis. Its methods are safe for
// concurrent use; each takes a context whose deadline bounds the call,
// including connecting and retrying while Redis is unreachable.
type Store struct {
	client  redis.UniversalClient // *redis.Client or *redis.ClusterClient
	cfg     Config
	cluster bool // a Redis Cluster: Save splits batches by slot group
	prefix  string
	closed  atomic.Bool
	// gens holds, per write generation key, the highest generation a Save
	// of this Store saw acknowledged (generation.go).
	gens gensMap
	// floors holds, per job, the offsets this Store committed and when it
	// last copied them into every slot group (floors.go; cluster only).
	floors sync.Map
	// jobs holds the *jobNames of every job this Store touched
	// (registry.go).
	jobs sync.Map
}

// clusterStateReload is how old the cluster client's slot map may grow
// before a command reloads it (CLUSTER SLOTS from one node, in the
// background). go-redis reloads at once on MOVED and ASK, but a master
// that died answers nothing: its slots' commands fail to dial it, and with
// go-redis's default of 60 s the store went on dialling the dead address
// for up to a minute after a replica had taken its slots
// (TestChaosClusterFailoverLaggingReplica).
const clusterStateReload = time.Second

// clusterMaxRedirects is how often a cluster command follows MOVED or ASK
// or retries TRYAGAIN (a multi-key script during a slot migration) before it
// fails; go-redis backs off between tries (8 ms doubling to 512 ms), so
// about 5 s in all.
const clusterMaxRedirects = 12

// New connects to the server (or cluster) cfg names and pings it (every
// master of a cluster), so an unreachable or misconfigured Redis is
// reported here (within ctx's deadline) rather than at the first Save. It
// returns cfg.Validate's error for a bad Config.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, cluster: len(cfg.Cluster) > 0, prefix: cfg.keyPrefix()}
	if len(cfg.Cluster) > 0 {
		s.cfg.Cluster = slices.Clone(cfg.Cluster)
		cc := cfg.Options.ClusterClient(s.cfg.Cluster, func(co *redis.ClusterOptions) {
			co.MaxRedirects = clusterMaxRedirects
			co.ClusterStateReloadInterval = clusterStateReload
		})
		s.client = cc
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			if err := c.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("%s: %w", c.Options().Addr, err)
			}
			return nil
		})
		if err != nil {
			_ = cc.Close()
			return nil, fmt.Errorf("redisstore: cannot reach redis cluster %s: %w", strings.Join(cfg.Cluster, ","), err)
		}
		return s, nil
	}
	c := cfg.Options.Client() // clones TLS
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redisstore: cannot reach redis at %s: %w", cfg.Addr, err)
	}
	s.client = c
	return s, nil
}

// wrap translates a go-redis error: a closed client is persistence.ErrClosed
// (Close raced with the call), anything else is wrapped with the operation.
func wrap(op string, err error) error {
	if errors.Is(err, redis.ErrClosed) {
		return persistence.ErrClosed
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}
