// Package redisopts is the Redis connection every Redis user of Joinery
// shares: Config, the redis block of a job file (addr, username, password,
// db, tls), and Options.Client and Options.ClusterClient, the one place a
// go-redis client is set up (the redis-stream source and sink, the
// redis-hash sink, the dead-letter stream, HTTP ingest, the state store). It imports go-redis so its callers' settings stay
// the same: context deadlines on sockets, TLS cloned per client, and no
// maintenance-notification handshake (servers before Redis 8 reject it).
//
// It must not open a connection by itself or know what is read or written.
package redisopts

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/joinery/joinery/connopts"
)

// Config is a Redis server's address and credentials, as a job file names
// them.
type Config struct {
	Addr     string `yaml:"addr"`
	Username string `yaml:"username"`
	// Password; ${VAR} is expanded from the environment. PasswordFile
	// reads it from a file instead (job/secrets.go).
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file,omitempty"`
	DB           int    `yaml:"db"`
	// TLS connects with TLS (see connopts.TLS).
	TLS connopts.TLS `yaml:"tls,omitempty"`
	// Cluster names a Redis Cluster instead of addr (state.redis only;
	// see Cluster).
	Cluster Cluster `yaml:"cluster,omitempty"`
	// MinReplicas makes every state batch and offset commit wait (Redis
	// WAIT) for this many replicas before it counts as durable (state.redis
	// only, one server; see docs/operations/recovery.md). 0: no wait.
	MinReplicas int `yaml:"min_replicas,omitempty"`
	// ReplicaTimeout bounds that wait (default 1s); a write not replicated
	// in time fails and is retried like other Redis errors.
	ReplicaTimeout time.Duration `yaml:"replica_timeout,omitempty"`
}

// Cluster names a Redis Cluster, for state.redis only:
//
//	state:
//	  store: redis
//	  redis:
//	    cluster: {addrs: ["redis-0:6379", "redis-1:6379", "redis-2:6379"]}
//
// Some of the cluster's nodes are enough (the client learns the rest and
// the slot map from them); list more than one to survive one being down
// at start. It excludes redis.addr, and db must be 0. Username, password
// and tls apply to every node.
type Cluster struct {
	Addrs []string `yaml:"addrs,omitempty"`
}

// Options are the settings of one connection to one Redis server.
type Options struct {
	Addr     string
	Username string
	Password string
	DB       int
	// TLS, when not nil, connects with TLS (cloned for the client).
	TLS *tls.Config
	// OnRedisError, when set, is called once for each failed call of the
	// client (a command, or a pipeline's round trip; see Failed): the
	// node's joinery_redis_errors_total.
	OnRedisError func()
}

// Options is c's connection: its TLS configuration built from c.TLS, its
// files named through resolve (the job file's directory; nil: as they
// are), and onRedisError its OnRedisError. Every Redis connector opens its
// client from it (Options.Client), so none copies the connection's fields.
func (c Config) Options(resolve func(string) string, onRedisError func()) (Options, error) {
	tc, err := c.TLS.Config(resolve)
	if err != nil {
		return Options{}, fmt.Errorf("tls: %w", err)
	}
	return Options{Addr: c.Addr, Username: c.Username, Password: c.Password, DB: c.DB, TLS: tc, OnRedisError: onRedisError}, nil
}

// GoRedis is the go-redis form of o.
func (o Options) GoRedis() *redis.Options {
	var tc *tls.Config
	if o.TLS != nil {
		tc = o.TLS.Clone()
	}
	return &redis.Options{
		Addr:     o.Addr,
		Username: o.Username,
		Password: o.Password,
		DB:       o.DB,
		// Socket deadlines follow the caller's context deadline.
		ContextTimeoutEnabled:    true,
		TLSConfig:                tc,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// GoRedisCluster is the go-redis form of o for the Redis Cluster some of
// whose nodes addrs names (cloned): GoRedis's credentials, TLS and
// timeouts on every node. o.Addr and o.DB are not used (a cluster has only
// database 0).
func (o Options) GoRedisCluster(addrs []string) *redis.ClusterOptions {
	g := o.GoRedis()
	return &redis.ClusterOptions{
		Addrs:                    slices.Clone(addrs),
		Username:                 g.Username,
		Password:                 g.Password,
		ContextTimeoutEnabled:    g.ContextTimeoutEnabled,
		TLSConfig:                g.TLSConfig,
		MaintNotificationsConfig: g.MaintNotificationsConfig,
	}
}

// Client is a go-redis client for o; it connects on first use.
func (o Options) Client() *redis.Client {
	c := redis.NewClient(o.GoRedis())
	o.addHook(c)
	return c
}

// ClusterClient is a go-redis Redis Cluster client for o on the cluster
// addrs names (GoRedisCluster), with o's error callback; tune, when not
// nil, sets its caller's cluster settings (redirections, slot map reloads)
// first. It connects on first use.
func (o Options) ClusterClient(addrs []string, tune func(*redis.ClusterOptions)) *redis.ClusterClient {
	co := o.GoRedisCluster(addrs)
	if tune != nil {
		tune(co)
	}
	c := redis.NewClusterClient(co)
	o.addHook(c)
	return c
}

// addHook adds o.OnRedisError's ErrorHook to c, when set.
func (o Options) addHook(c interface{ AddHook(redis.Hook) }) {
	if o.OnRedisError != nil {
		c.AddHook(ErrorHook(o.OnRedisError))
	}
}

// Failed reports whether err, the error of a Redis call, is a failure worth
// counting: no answer (a refused or broken connection, a timeout) or an
// error reply (LOADING, READONLY, OOM, NOAUTH, …). A nil reply
// (redis.Nil), a call its caller cancelled or made on a client it closed,
// and the replies the callers expect and handle — BUSYGROUP (the group
// exists) and NOSCRIPT (a script's EVALSHA before its EVAL) — are not.
func Failed(err error) bool {
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.Is(err, context.Canceled), errors.Is(err, redis.ErrClosed):
		return false
	case redis.HasErrorPrefix(err, "BUSYGROUP"), redis.HasErrorPrefix(err, "NOSCRIPT"):
		return false
	}
	return true
}

// clientSetInfo reports whether c is the CLIENT SETINFO go-redis sends
// when it opens a connection: servers before Redis 7.2 refuse it, and
// go-redis goes on without it.
func clientSetInfo(c redis.Cmder) bool {
	args := c.Args()
	if c.Name() != "client" || len(args) < 2 {
		return false
	}
	sub, _ := args[1].(string)
	return strings.EqualFold(sub, "setinfo")
}

// ErrorHook is a go-redis hook (Client.AddHook, also on a ClusterClient)
// that calls onRedisError once for each command whose error is Failed, and
// once for each pipeline round trip where a command's is (the CLIENT
// SETINFO of a new connection excepted).
func ErrorHook(onRedisError func()) redis.Hook { return errorHook{onRedisError} }

type errorHook struct{ onRedisError func() }

func (errorHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h errorHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if Failed(err) {
			h.onRedisError()
		}
		return err
	}
}

func (h errorHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		failed := false
		for _, c := range cmds {
			failed = failed || (Failed(c.Err()) && !clientSetInfo(c))
		}
		if len(cmds) == 0 {
			failed = Failed(err)
		}
		if failed {
			h.onRedisError()
		}
		return err
	}
}
