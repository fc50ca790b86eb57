package redisstore

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/joinery/joinery/connopts/redisopts"
)

// DefaultKeyPrefix is the key prefix used when Config.KeyPrefix is empty.
const DefaultKeyPrefix = "joinery"

// Config says where the Redis server (or Redis Cluster) is and how to talk
// to it. The zero value of each optional field means its default. New never
// modifies the caller's Config (it clones TLS and Cluster).
type Config struct {
	// Options is the connection, the type every Redis user of Joinery
	// shares (connopts/redisopts): Addr, Username, Password, DB, TLS and
	// OnRedisError (called for each failed Redis call: the node's
	// joinery_redis_errors_total). Exactly one of Addr and Cluster is set.
	// DB must be 0 with Cluster (a cluster has only database 0).
	redisopts.Options
	// Cluster, when not empty, makes the store a Redis Cluster client: the
	// host:port of some of the cluster's nodes (one is enough; more survive
	// one being down at start). The client learns the slot map from them and
	// follows MOVED and ASK redirections.
	Cluster []string
	// KeyPrefix starts the name of every key of a job's slot groups, and
	// is part of the job's entry in the store's job registry, whose id
	// names the join keys' hashes (see the package doc, "Key layout"): two
	// stores of different prefixes on one server never share a key.
	// DefaultKeyPrefix when empty. It must not contain "{" or "}", which
	// would break the hash tags that place the keys in cluster slots.
	KeyPrefix string
	// MinReplicas, when > 0, makes every Save and CommitOffsets wait (Redis
	// WAIT, on the connection that wrote) until that many replicas have
	// acknowledged the write, so a failover to one of them loses none of
	// it. A write not acknowledged within ReplicaTimeout fails with an
	// error wrapping ErrNotReplicated (it is on the master; retrying is
	// safe). One server only: Validate refuses it with Cluster.
	MinReplicas int
	// ReplicaTimeout bounds the wait for MinReplicas; DefaultReplicaTimeout
	// when zero.
	ReplicaTimeout time.Duration
}

// DefaultReplicaTimeout is the wait for MinReplicas when
// Config.ReplicaTimeout is zero.
const DefaultReplicaTimeout = time.Second

func (c Config) replicaTimeout() time.Duration {
	if c.ReplicaTimeout <= 0 {
		return DefaultReplicaTimeout
	}
	return c.ReplicaTimeout
}

// DefaultConfig returns the configuration of a Redis on localhost:6379 with
// the default key prefix.
func DefaultConfig() Config {
	return Config{Options: redisopts.Options{Addr: "127.0.0.1:6379"}, KeyPrefix: DefaultKeyPrefix}
}

// Validate reports every problem of c at once, each naming its field.
func (c Config) Validate() error {
	var errs []error
	checkAddr := func(field, addr string) {
		if host, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("redisstore: %s %q is not host:port", field, addr))
		} else if host == "" {
			errs = append(errs, fmt.Errorf("redisstore: %s %q has no host", field, addr))
		}
	}
	switch {
	case c.Addr == "" && len(c.Cluster) == 0:
		errs = append(errs, errors.New("redisstore: Config.Addr (or Config.Cluster) is required"))
	case c.Addr != "" && len(c.Cluster) > 0:
		errs = append(errs, errors.New("redisstore: Config.Addr and Config.Cluster exclude each other"))
	case c.Addr != "":
		checkAddr("Config.Addr", c.Addr)
	default:
		for i, a := range c.Cluster {
			checkAddr(fmt.Sprintf("Config.Cluster[%d]", i), a)
		}
		if c.DB != 0 {
			errs = append(errs, fmt.Errorf("redisstore: Config.DB %d with Config.Cluster: a Redis Cluster has only database 0", c.DB))
		}
	}
	if c.MinReplicas < 0 {
		errs = append(errs, fmt.Errorf("redisstore: Config.MinReplicas %d is negative", c.MinReplicas))
	}
	if c.MinReplicas > 0 && len(c.Cluster) > 0 {
		errs = append(errs, errors.New("redisstore: Config.MinReplicas is not supported with Config.Cluster (WAIT is per master connection)"))
	}
	if c.ReplicaTimeout < 0 {
		errs = append(errs, fmt.Errorf("redisstore: Config.ReplicaTimeout %s is negative", c.ReplicaTimeout))
	}
	if c.DB < 0 {
		errs = append(errs, fmt.Errorf("redisstore: Config.DB %d is negative", c.DB))
	}
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		errs = append(errs, fmt.Errorf("redisstore: Config.KeyPrefix %q contains a brace", c.KeyPrefix))
	}
	return errors.Join(errs...)
}

// String returns the configuration with the password redacted, for logs and
// config checks.
func (c Config) String() string {
	pw := ""
	if c.Password != "" {
		pw = "<redacted>"
	}
	if len(c.Cluster) > 0 {
		return fmt.Sprintf("redisstore.Config{Cluster: %q, Username: %q, Password: %q, TLS: %t, KeyPrefix: %q}",
			c.Cluster, c.Username, pw, c.TLS != nil, c.keyPrefix())
	}
	return fmt.Sprintf("redisstore.Config{Addr: %q, Username: %q, Password: %q, DB: %d, TLS: %t, KeyPrefix: %q}",
		c.Addr, c.Username, pw, c.DB, c.TLS != nil, c.keyPrefix())
}

func (c Config) keyPrefix() string {
	if c.KeyPrefix == "" {
		return DefaultKeyPrefix
	}
	return c.KeyPrefix
}
