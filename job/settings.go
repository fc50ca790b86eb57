package job

import (
	"strings"
	"time"

	"github.com/joinery/joinery/connopts/kafkaopts"
	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/gctune"
)

// Admin configures the node's HTTP admin endpoint.
type Admin struct {
	// Addr is host:port to listen on; empty: no endpoint. Port 0 picks a free one.
	Addr string `yaml:"addr"`
	// Token is the admin-scope bearer token: every /v1 route, the write
	// actions (refused without it) and pprof. ${VAR} is expanded;
	// JOINERY_TOKEN overrides it. TokenFile reads it from a file instead.
	Token     string `yaml:"token"`
	TokenFile string `yaml:"token_file,omitempty"`
	// Pprof serves net/http/pprof under /debug/pprof.
	Pprof bool `yaml:"pprof"`
	// AdminSecurity: read and metrics tokens, insecure, tls (secrets.go).
	AdminSecurity `yaml:",inline"`
}

// Kafka is a Kafka cluster and topic (connopts/kafkaopts).
type Kafka = kafkaopts.Config

// Ingest serves HTTP ingest: POST JSON or NDJSON to http://Addr/ingest; the
// records are appended to the stream or topic of the named source (a
// redis-stream or kafka source of this job) and answered 202 only once that
// append is durable; 429 with Retry-After under backpressure.
type Ingest struct {
	Addr   string `yaml:"addr"`
	Source string `yaml:"source"`
	// IngestSecurity: token, mTLS, limits (secrets.go).
	IngestSecurity `yaml:",inline"`
}

// Redis is a Redis server's address and credentials (connopts/redisopts).
type Redis = redisopts.Config

// State names the state store.
type State struct {
	// Store is embedded (default; no server) or redis.
	Store string `yaml:"store"`
	// Path, for embedded, keeps state in this file across restarts (default: memory only).
	Path  string `yaml:"path"`
	Redis Redis  `yaml:"redis"`
	// FlushBatch is the most snapshots per pipelined write (default 512).
	FlushBatch int `yaml:"flush_batch"`
	// PassivateAfter stops a key actor idle this long (its state is already
	// durable); the next event reactivates it from the store. 0 = never.
	// Memory then stays bounded by the keys active in that window.
	PassivateAfter time.Duration `yaml:"passivate_after"`
	// MemoryBudget bounds the memory of the node's live key actors (e.g.
	// "256MiB"); past it the least recently used passivate. Default: 35% of
	// the soft memory limit (runtime.memory_limit, GOMEMLIMIT, or 80% of the
	// container's or machine's memory). "0" turns the budget off. On the
	// embedded store it also bounds the state the store holds in memory:
	// past it the node stops reading its sources with an error (node.StateOverBudgetError).
	MemoryBudget string `yaml:"memory_budget,omitempty"`
}

// Cluster holds membership (memberlist) and remoting (protoactor) settings.
type Cluster struct {
	// NodeName is unique in the fleet (default: host:port of gossip).
	NodeName string `yaml:"node_name"`
	// Gossip is the memberlist bind address host:port (default 127.0.0.1:0, a free port).
	Gossip string `yaml:"gossip"`
	// Remote is the actor remoting bind address host:port (default 127.0.0.1:0).
	Remote string `yaml:"remote"`
	// Advertise is the address other nodes reach this node on (default: the bind host).
	Advertise string `yaml:"advertise"`
	// Seeds are gossip addresses of other nodes.
	Seeds []string `yaml:"seeds"`
	// SecretKey, base64, encrypts gossip (16, 24 or 32 bytes). ${VAR} is expanded.
	SecretKey string `yaml:"secret_key"`
	// SecretKeyFile reads SecretKey from a file instead (secrets.go).
	SecretKeyFile string `yaml:"secret_key_file,omitempty"`
	// SecretKeys, base64, are more gossip keys accepted (not used to
	// encrypt): a key rotation in progress (see clustersec.go).
	SecretKeys []string `yaml:"secret_keys,omitempty"`
	// TLS is the mutual TLS of actor remoting (see clustersec.go).
	TLS ClusterTLS `yaml:"tls,omitempty"`
	// Insecure allows gossip without secret_key and remoting without tls
	// on a non-loopback bind address.
	Insecure bool `yaml:"insecure,omitempty"`
	// Label keeps two fleets from merging.
	Label string `yaml:"label"`
	// RequestTimeout bounds one request to a key actor (default 30s).
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// Profile is the gossip timing preset: lan (default), wan, or local
	// (fast failure detection, for one machine and tests).
	Profile string `yaml:"profile"`
	// Expect is how many nodes the fleet is started with (the Helm chart's
	// replica count): at start a node's sharded sources take no shard
	// until that many members are live and read them, and its Kafka
	// sources do not join their consumer group until that many members
	// are live, or ExpectWait passes, so the shards and partitions are
	// spread at once rather than handed over from the first node up
	// (docs/performance/2026-12-05-fleet.md, "Cold start"). 0 (default): no wait.
	Expect int `yaml:"expect,omitempty"`
	// ExpectWait bounds that wait (default 5s).
	ExpectWait time.Duration `yaml:"expect_wait,omitempty"`
	// Watermarks sets how the nodes reading an event-time job's sources share their
	// watermarks through the state store (the global watermark is the
	// minimum over live, active nodes).
	Watermarks WatermarkSharing `yaml:"watermarks,omitempty"`
}

// WatermarkSharing configures watermark sharing between the nodes that
// read a job's sources.
type WatermarkSharing struct {
	// Disabled makes each node use its own watermark only: right only for
	// a job whose sources one node reads.
	Disabled bool `yaml:"disabled,omitempty"`
	// Interval is how often a node publishes its watermark and reads its
	// peers' (default 100ms).
	Interval time.Duration `yaml:"interval,omitempty"`
	// TTL is how long a peer's entry counts after its last heartbeat unless
	// the peer is an alive cluster member (default 3s).
	TTL time.Duration `yaml:"ttl,omitempty"`
}

// Runtime holds the process's garbage collector settings; GOGC and
// GOMEMLIMIT in the environment win over both.
type Runtime struct {
	// GCPercent is Go's GC percent (default 400: internal/gctune).
	GCPercent int `yaml:"gc_percent,omitempty"`
	// MemoryLimit is the soft memory limit, e.g. "3GiB" (default: 80% of
	// the container's memory limit, or of the machine's memory).
	MemoryLimit string `yaml:"memory_limit,omitempty"`
}

// MemoryLimitBytes is MemoryLimit in bytes (0: not set).
func (r Runtime) MemoryLimitBytes() (int64, error) {
	if r.MemoryLimit == "" {
		return 0, nil
	}
	return gctune.ParseBytes(r.MemoryLimit)
}

// MemoryBudgetBytes is MemoryBudget in bytes: -1 when it is "0" (no
// budget), 0 when not set (the default budget).
func (s State) MemoryBudgetBytes() (int64, error) {
	switch strings.TrimSpace(s.MemoryBudget) {
	case "":
		return 0, nil
	case "0":
		return -1, nil
	}
	return gctune.ParseBytes(s.MemoryBudget)
}
