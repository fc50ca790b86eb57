// Package connectors is the table of connector kinds, as database/sql's
// drivers: each source, sink and dead-letter kind names its type (the
// job file's `type:`), a typed configuration with a Validate that names
// every bad field by its path (`sources[1].kafka.topic: must be set for a
// kafka source`), and a constructor.
//
// A connector's configuration has one home, its kind's configuration
// type (the connector's Entry). The job keeps an entry's connector fields
// as written (Fields) and compiles them once (Table.Compile: decode,
// report unknown fields by path, Validate); the node opens the connector
// from that configuration, decoding nothing. What the job or the node
// needs beyond opening it, a configuration says through small interfaces
// (KeyGrouped, Repartitioned, AppendRefused, Secrets), so neither knows a
// connector's type name or fields (docs/concepts/architecture.md, "Adding a
// connector").
//
// The kinds live with their connectors (sources/kafka's Source, …); one
// explicit list, connectors/all, puts them in tables, so what is
// registered does not depend on which packages something happened to
// import. A new connector is its own folder exporting a Kind, plus one
// line in connectors/all (see docs/concepts/architecture.md, "Adding a
// connector").
//
// It must not import a connector (they import it) nor open anything
// itself.
package connectors

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/joinery/joinery/connopts/kafkaopts"
	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/sinks"
	"github.com/joinery/joinery/sources"
)

// FieldError is one bad field of a connector entry: Path is the field's
// path in the job file ("sources[1].kafka.topic").
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

// Config is a connector kind's typed configuration.
type Config interface {
	// Validate reports every bad field through v (v.Bad, v.Require).
	Validate(v *Validator)
}

// Validator collects the field errors of one entry.
type Validator struct {
	// At is the entry's path: "sources[1]", "sinks[0]", "dead_letter".
	At string
	// What names the entry in messages: "kafka source", "redis-stream
	// dead-letter output".
	What string
	// Resolve maps a file name of the job to its path (TLS files are read
	// to check them); nil leaves names as they are.
	Resolve func(string) string
	// EventTime says the job's join is an event-time join (a setting
	// only a changelog join can use is reported).
	EventTime bool
	errs      []error
}

// Bad reports field (relative to the entry, "" for the entry itself).
func (v *Validator) Bad(field, format string, a ...any) {
	p := v.At
	if field != "" {
		p += "." + field
	}
	v.errs = append(v.errs, &FieldError{Path: p, Msg: fmt.Sprintf(format, a...)})
}

// Require reports field as "must be set for a <what>" unless ok.
func (v *Validator) Require(field string, ok bool) {
	if !ok {
		v.Bad(field, "must be set for a %s", v.What)
	}
}

// Errors are the field errors reported so far.
func (v *Validator) Errors() []error { return v.errs }

// Redis checks a connector's redis block at field: addr set, no cluster
// or replica settings (state.redis only), TLS files readable.
func (v *Validator) Redis(field string, r redisopts.Config) {
	v.Require(field+".addr", r.Addr != "")
	if len(r.Cluster.Addrs) > 0 {
		v.Bad(field+".cluster", "is supported for state.redis only")
	}
	if r.MinReplicas != 0 || r.ReplicaTimeout != 0 {
		v.Bad(field, "min_replicas and replica_timeout are supported for state.redis only")
	}
	if _, err := r.TLS.Config(v.Resolve); err != nil {
		v.Bad(field+".tls", "%v", err)
	}
}

// Kafka checks a connector's kafka block at field: brokers and topic set,
// TLS files readable.
func (v *Validator) Kafka(field string, k kafkaopts.Config) {
	v.Require(field+".brokers", len(k.Brokers) > 0)
	v.Require(field+".topic", k.Topic != "")
	if _, err := k.TLS.Config(v.Resolve); err != nil {
		v.Bad(field+".tls", "%v", err)
	}
}

// Env is what every constructor gets from its node.
type Env struct {
	// Resolve maps a file name of the job file to its path.
	Resolve func(string) string
	// OnRedisError, when set, is called for each failed call of a Redis
	// connector's client (redisopts.Failed): joinery_redis_errors_total.
	OnRedisError func()
	// Log receives what a constructor reports (a file sink's cut partial
	// line, say); nil is slog.Default().
	Log *slog.Logger
}

// Logger returns e.Log, or slog.Default() when it is nil.
func (e Env) Logger() *slog.Logger {
	if e.Log == nil {
		return slog.Default()
	}
	return e.Log
}

// SourceEnv is what a source constructor gets from its node.
type SourceEnv struct {
	Env
	// Name is sources[].name, the name in positions and offsets.
	Name string
	// RecordLimit is the source's max_record_bytes.
	RecordLimit int
	// Stdin is read by a source that reads "-".
	Stdin io.Reader
	// Consumer is the default consumer name in a group (the node's name).
	Consumer string
	// TransactionalID, when set, makes a Kafka source transactional
	// (sources.Transactional): its offsets are committed in Kafka
	// transactions under this id, with the outputs of an exactly-once
	// Kafka sink (kafka.exactly_once).
	TransactionalID string
	// Committed returns the job's committed offsets by partition id.
	Committed func(ctx context.Context) (map[string]int64, error)
	// OnPartitions is told the partitions the source starts and stops
	// reading (event-time watermarks).
	OnPartitions func(assigned, revoked []int32)
	// OnRevokeTimeout is told the partitions a Kafka source let go in a
	// rebalance before the records it had delivered from them were all
	// committed (its revoke wait ran out): their next owner reads those
	// records again. nil: not told.
	OnRevokeTimeout func(partitions []int32, waited time.Duration)
	// OnLease is OnPartitions for a source that reads under a lease: it
	// also sets the node's joinery_source_reading gauge.
	OnLease func(assigned, revoked []int32)
	// Members returns the live members of the fleet; Member maps a
	// consumer name to this node's member name (sharded sources).
	Members func() []string
	Member  func(consumer string) string
	// Expect is how many members the fleet is started with and ExpectWait
	// the longest a sharded source waits for them before it takes
	// partitions, or a Kafka source before it joins its consumer group
	// (cluster.expect, cluster.expect_wait; 0: no wait).
	Expect     int
	ExpectWait time.Duration
	// Applied gives the store's committed offset of one of the source's
	// partitions (ok false: none): a source whose own position is past it
	// (the store went back in time) reads again from there
	// (docs/operations/recovery.md, "Recovery"). lineage is the one the source's
	// own last commit of the partition carried (Lineage; "" none): when
	// the store went back in time since, and has no offset for the
	// partition (restarted empty), Applied answers -1, true: the source
	// reads the partition again from its beginning.
	Applied func(ctx context.Context, partition int32, lineage string) (offset int64, ok bool, err error)
	// Lineage is the state store's lineage the node commits with
	// (persistence.Lineage's String form, "" none); a source's commits
	// carry it (Kafka commit metadata, a key beside a Redis stream's
	// group) and hand it back to Applied when it opens.
	Lineage func() string
	// KeptFloor bounds what a source that deletes the records it
	// acknowledged (a Redis stream source with trim_acked, the
	// repartition streams) deletes of a partition: nothing after offset,
	// and nothing while ok is false; nil: no bound. It is the store's
	// replay floor (persistence.FloorStore), where Applied starts the
	// partition's next reader (docs/guides/producers.md).
	KeptFloor func(partition int32) (offset int64, ok bool)
}

// SinkEnv is what a sink constructor gets from its node.
type SinkEnv struct {
	Env
	// Format is sinks[].format.
	Format changelog.Format
	// Stdout is the node's standard output.
	Stdout io.Writer
	// Avro is set for a sink with encoding avro.
	Avro *Avro
}

// Avro is what an Avro-encoding sink registers: the Schema Registry, the
// subject (empty: the sink's default), the job's name and its projected
// columns (nil: rows are maps).
type Avro struct {
	Registry debeziumavro.ClientConfig
	Subject  string
	Name     string
	Columns  []string
}

// Appender appends values to a source's log for HTTP ingest (the
// ingest.Appender interface); answered only once the append is durable.
type Appender interface {
	Append(ctx context.Context, values [][]byte) error
}

// Kind is one connector kind: E is what its constructor gets, T what it
// opens (sources.Source, sinks.Sink, a dead-letter writer).
type Kind[E, T any] struct {
	// Type is the job file's `type:` of the entry.
	Type string
	// New returns a zero configuration to decode the entry into: a
	// pointer to a struct whose YAML tags name the entry's connector
	// fields (None for a kind without any).
	New func() Config
	// Open builds the connector from its configuration, decoded and
	// validated once when the job was compiled (Compile).
	// It may return a zero T with a nil error for a kind the node
	// implements itself (Table).
	Open func(ctx context.Context, cfg Config, env E) (T, error)
	// Append, for a source kind, opens an appender to the source's log
	// for HTTP ingest; nil: HTTP ingest cannot name such a source.
	Append func(ctx context.Context, cfg Config, env Env) (Appender, error)
	// KeyGroups, for a source kind whose own partitions can follow the
	// join key (a Kafka topic keyed by the join column, partitioned_by:
	// join_key), asks the source's system how many partitions it has and
	// gives the partition of a join key among them: the key groups the
	// node places key actors by (docs/concepts/key-groups.md, "Key groups").
	KeyGroups func(ctx context.Context, cfg Config, env Env) (KeyGroups, error)
	// Avro marks a sink kind that writes encoding avro (SinkEnv.Avro).
	Avro bool
	// Table marks the table sink, which the node keeps in memory.
	Table bool
	// Shared marks a sink kind whose target is one system every node of a
	// fleet reaches (a Kafka topic, a Redis stream or hash), not a node's
	// own file or stdout. A key's outputs are written to a shared sink by
	// the key's owner node, so they arrive in order whichever node read the
	// key's inputs (see docs/concepts/architecture.md, "Batched requests").
	Shared bool
}

// KeyGroups is a source's partitioning by the join key: what is
// partitioned (for errors: "topic users"), into how many partitions, and
// the partition of a join key among partitions.
type KeyGroups struct {
	What       string
	Partitions int
	Of         func(key string, partitions int) int
}

// Table is the registry of one role's kinds, in the order they were
// listed (the order messages list them in).
type Table[E, T any] struct {
	role  string // "source", "sink", "dead-letter output"
	kinds []Kind[E, T]
}

// NewTable lists kinds for role; a duplicate or unnamed type panics (the
// table is a program constant).
func NewTable[E, T any](role string, kinds ...Kind[E, T]) *Table[E, T] {
	t := &Table[E, T]{role: role}
	for _, k := range kinds {
		if k.Type == "" || k.New == nil {
			panic(fmt.Sprintf("connectors: a %s kind needs a type and New", role))
		}
		if _, ok := t.Lookup(k.Type); ok {
			panic(fmt.Sprintf("connectors: %s type %q listed twice", role, k.Type))
		}
		t.kinds = append(t.kinds, k)
	}
	return t
}

// Role is what the table's kinds are.
func (t *Table[E, T]) Role() string { return t.role }

// Types are the registered type names in order.
func (t *Table[E, T]) Types() []string {
	var ts []string
	for _, k := range t.kinds {
		ts = append(ts, k.Type)
	}
	return ts
}

// Lookup finds the kind of type typ.
func (t *Table[E, T]) Lookup(typ string) (Kind[E, T], bool) {
	i := slices.IndexFunc(t.kinds, func(k Kind[E, T]) bool { return k.Type == typ })
	if i < 0 {
		return Kind[E, T]{}, false
	}
	return t.kinds[i], true
}

// Known lists the types as "a, b or c", for messages.
func (t *Table[E, T]) Known() string { return orList(t.Types()) }

// Where lists the types whose kind has has, as Known.
func (t *Table[E, T]) Where(has func(Kind[E, T]) bool) string {
	var ts []string
	for _, k := range t.kinds {
		if has(k) {
			ts = append(ts, k.Type)
		}
	}
	return orList(ts)
}

func orList(ts []string) string {
	switch len(ts) {
	case 0:
		return "(none)"
	case 1:
		return ts[0]
	}
	return strings.Join(ts[:len(ts)-1], ", ") + " or " + ts[len(ts)-1]
}

// Compile decodes an entry's connector fields into its kind's
// configuration (Decode) and reports every bad field of it, an unknown
// type included: the job compiles each entry once, and the node opens the
// configuration it got. v says where the entry is (At, Resolve,
// EventTime); its What is set here.
func (t *Table[E, T]) Compile(v *Validator, typ string, fields Fields) (Kind[E, T], Config, []error) {
	k, cfg, errs := t.Decode(v.At, typ, fields)
	if len(errs) > 0 {
		return k, nil, errs
	}
	v.What = typ + " " + t.role
	cfg.Validate(v)
	if errs := v.Errors(); len(errs) > 0 {
		return k, nil, errs
	}
	return k, cfg, nil
}

// Validate is Compile with the kind and configuration dropped; resolve is
// as Validator.Resolve.
func (t *Table[E, T]) Validate(at, typ string, fields Fields, resolve func(string) string) []error {
	_, _, errs := t.Compile(&Validator{At: at, Resolve: resolve}, typ, fields)
	return errs
}

// Sources and Sinks are the table types of the two connector roles.
type (
	SourceKind = Kind[*SourceEnv, sources.Source]
	SinkKind   = Kind[*SinkEnv, sinks.Sink]
)

// None is the configuration of a kind without settings of its own.
type None struct{}

// Validate accepts everything.
func (None) Validate(*Validator) {}

// IngestEnv is what an ingest endpoint gets from its node: the appender of
// the source it feeds (Kind.Append) and the job's ingest settings.
type IngestEnv struct {
	// Source is the name of the source fed.
	Source   string
	Appender Appender
	// Addr is host:port to listen on; TLS, when set, serves TLS.
	Addr string
	TLS  *tls.Config
	// MaxBodyBytes, MaxInflight, BodyTimeout and Token are ingest's limits
	// and bearer token (zero: defaults, no token).
	MaxBodyBytes int64
	MaxInflight  int
	BodyTimeout  time.Duration
	Token        string
	// OnRefused is told the reason of each request refused for its
	// contents; may be nil.
	OnRefused func(reason string)
}

// Service is a running ingest endpoint.
type Service interface {
	// Addr is the address it listens on.
	Addr() string
	// Shutdown stops taking requests, waits for those in flight and
	// closes the appender.
	Shutdown(ctx context.Context) error
}

// IngestKind is an ingest endpoint's registry entry: it takes records
// from outside (HTTP) and appends them to a source's log.
type IngestKind struct {
	// Type names the endpoint.
	Type string
	// Start serves env until Shutdown.
	Start func(env IngestEnv) (Service, error)
}

// RedisEntry is the redis block of a Redis connector's entry, embedded
// inline in the kind's configuration: the field, its check, its secret
// and the connection it gives, the same for every Redis connector.
type RedisEntry struct {
	Redis redisopts.Config `yaml:"redis"`
}

// ValidateRedis checks the redis block (Validator.Redis).
func (r *RedisEntry) ValidateRedis(v *Validator) { v.Redis("redis", r.Redis) }

// Secrets is the redis block's password (and password_file).
func (r *RedisEntry) Secrets() []Secret {
	return []Secret{{Field: "redis.password", Val: &r.Redis.Password, File: &r.Redis.PasswordFile}}
}

// Options is the connection of the redis block, its TLS files read
// (redisopts.Config.Options) and env's error hook.
func (r *RedisEntry) Options(env Env) (redisopts.Options, error) {
	o, err := r.Redis.Options(env.Resolve, env.OnRedisError)
	if err != nil {
		return o, fmt.Errorf("redis.%w", err)
	}
	return o, nil
}

// KafkaEntry is the kafka block of a Kafka connector's entry, embedded
// inline in the kind's configuration: the field and its secret, the same
// for every Kafka connector.
type KafkaEntry struct {
	Kafka kafkaopts.Config `yaml:"kafka"`
}

// KafkaBlock is the kafka block itself (job validation compares the
// clusters of an exactly-once job's sources and sinks).
func (k *KafkaEntry) KafkaBlock() kafkaopts.Config { return k.Kafka }

// KafkaBlocked is a connector configuration with a kafka block (every
// Kafka source, sink and dead-letter output: KafkaEntry).
type KafkaBlocked interface{ KafkaBlock() kafkaopts.Config }

// Secrets is the kafka block's SASL password (and password_file).
func (k *KafkaEntry) Secrets() []Secret {
	return []Secret{{Field: "kafka.sasl.password", Val: &k.Kafka.SASL.Password, File: &k.Kafka.SASL.PasswordFile}}
}

// TLS is the kafka block's TLS configuration, its files read.
func (k *KafkaEntry) TLS(env Env) (*tls.Config, error) {
	tc, err := k.Kafka.TLS.Config(env.Resolve)
	if err != nil {
		return nil, fmt.Errorf("kafka.tls: %w", err)
	}
	return tc, nil
}
