package job

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connectors/all"
	"github.com/joinery/joinery/connopts/kafkaopts"
	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/gctune"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/transform"
)

// Spec is a whole job file.
type Spec struct {
	// Name names the job; state keys and actor kinds carry it. Letters, digits, '-', '_' and '.'.
	Name string `yaml:"name"`
	// Join is the join the job runs.
	Join Join `yaml:"join"`
	// Sources are the inputs this node reads. A node of a fleet that only hosts key actors has none.
	Sources []Source `yaml:"sources"`
	// Sinks receive the join's outputs. A node-local sink (file, stdout,
	// table) gets those made from this node's sources; a shared one (Kafka,
	// Redis) is written by each key's owner node, whichever node read the
	// key's inputs, so every node of a fleet lists the same shared sinks.
	Sinks []Sink `yaml:"sinks"`
	// DeadLetter, when set, receives every input record a source rejects
	// (with policy dead-letter): a file, a Kafka topic or a Redis Stream. A
	// plain string is a file path (see DeadLetter).
	DeadLetter DeadLetter `yaml:"dead_letter"`
	// State names the state store.
	State State `yaml:"state"`
	// Cluster holds membership and remoting settings.
	Cluster Cluster `yaml:"cluster"`
	// Ingest, when set, serves HTTP ingest into one of the sources.
	Ingest Ingest `yaml:"ingest"`
	// Admin is the node's HTTP endpoint: /healthz, /readyz, /metrics and the admin API joinctl uses.
	Admin Admin `yaml:"admin"`
	// Runtime tunes the Go runtime of the process (internal/gctune).
	Runtime Runtime `yaml:"runtime,omitempty"`

	dir string // directory of the job file; relative paths are resolved against it
	// unresolved holds the secret fields whose ${VAR} or *_file could not
	// be read (expandSecrets): that error is their first cause, so Validate
	// says nothing more about them (an unset ${JOINERY_GOSSIP_KEY} is not
	// also "not base64").
	unresolved map[string]bool
	// lookup reads the environment for the secrets of the connectors'
	// configurations when they are decoded (expandConn): set for a spec
	// read from a file, nil (nothing expanded) for one built in code.
	lookup func(string) (string, bool)
}

// Join describes the join.
type Join struct {
	// Type is the join family: cdc (the changelog join over Debezium
	// changes), cdc-multi (the multi-way changelog join on one key, see
	// Table), or an event-time join over plain JSON events: window,
	// interval, time-bounded (Spark-style, with outer modes), unbounded (a
	// regular join whose state is bounded by ttl) or temporal.
	Type string `yaml:"type"`
	// Mode is inner, left, right, full or semi (a left semi join), what
	// the type supports.
	Mode string `yaml:"mode"`
	// Window assigns windows for type window.
	Window Window `yaml:"window"`
	// AllowedLateness keeps windows open this long past their end (late firings).
	AllowedLateness time.Duration `yaml:"allowed_lateness"`
	// Lower and Upper bound r.ts - l.ts for interval and time-bounded joins
	// (inclusive unless LowerExclusive/UpperExclusive; interval only).
	Lower          time.Duration `yaml:"lower"`
	Upper          time.Duration `yaml:"upper"`
	LowerExclusive bool          `yaml:"lower_exclusive"`
	UpperExclusive bool          `yaml:"upper_exclusive"`
	// Left and Right describe the two inputs.
	Left  Side `yaml:"left"`
	Right Side `yaml:"right"`
	// Tables lists the inputs of a cdc-multi join, the first one driving
	// (see Table).
	Tables []Table `yaml:"tables,omitempty"`
	// Project lists the output columns; empty means {left name: row, right name: row}.
	Project []Column `yaml:"project"`
	// Condition, LeftCondition and RightCondition are the residual
	// (non-equi) join condition of a window, interval or time-bounded join,
	// expr-lang expressions applied after the key match (see
	// CompileCondition and docs/replay.md).
	Condition      string `yaml:"condition,omitempty"`
	LeftCondition  string `yaml:"left_condition,omitempty"`
	RightCondition string `yaml:"right_condition,omitempty"`
	// Late is the late-data rule of a window, interval, time-bounded or
	// unbounded join.
	Late Late `yaml:"late,omitempty"`
	// TTL bounds the state of an unbounded join: a row is kept until the
	// watermark passes its time + TTL (required for type unbounded), or for
	// ever with `ttl: none`. A half-bounded time-bounded join (Open) needs
	// it for the rows of its open side.
	TTL TTL `yaml:"ttl,omitempty"`
	// Open makes a time-bounded join's range half-bounded: lower (no lower
	// bound) or upper (no upper bound); the open side's rows are kept for
	// TTL.
	Open string `yaml:"open,omitempty"`
	// Temporal holds the options of a temporal join (type temporal or
	// temporal-latest): semantics strict (the default), flink or kafka
	// (Kafka Streams' KStream-KTable join; on type temporal with its grace
	// and history).
	Temporal TemporalOptions `yaml:"temporal,omitempty"`
	// CDC holds the options of a changelog join (type cdc): its row kinds
	// and output timestamps.
	CDC CDCOptions `yaml:"cdc,omitempty"`
	// Emit is when a window join emits: on-close (the default, Flink's: a
	// window's pairs and padded rows when the watermark closes it) or
	// on-arrival (Spark's windowed join: a pair as soon as both rows are
	// there, only the unmatched outer rows at the close).
	Emit string `yaml:"emit,omitempty"`
}

// TTL is a state time-to-live: a Go duration, or `none` (kept for ever,
// joins.NoTTL).
type TTL struct {
	D    time.Duration
	None bool
}

// UnmarshalYAML decodes a duration or none.
func (t *TTL) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "none" {
		*t = TTL{None: true}
		return nil
	}
	var d time.Duration
	if err := n.Decode(&d); err != nil {
		return fmt.Errorf("line %d: ttl: want a duration (10m) or none", n.Line)
	}
	*t = TTL{D: d}
	return nil
}

// IsZero reports whether no TTL is set.
func (t TTL) IsZero() bool { return t == TTL{} }

// Millis is the TTL in ms, joins.NoTTL for none.
func (t TTL) Millis() int64 {
	if t.None {
		return math.MaxInt64
	}
	return t.D.Milliseconds()
}

// TemporalOptions are a temporal join's options.
type TemporalOptions struct {
	// Semantics is strict (the default: an input behind the watermark is
	// late; a probe at t is emitted once the watermark passes t), flink
	// (Flink's TemporalRowTimeJoinOperator: nothing is late, a probe at t is
	// emitted once t <= watermark, in arrival order, with its row kind) or
	// kafka (Kafka Streams' KStream-KTable join and its null rules: on type
	// temporal-latest against the table's latest value, on type temporal
	// against a versioned table with a grace period, KIP-914; see
	// docs/replay.md).
	Semantics string `yaml:"semantics,omitempty"`
	// Grace (type temporal, semantics kafka) is Kafka Streams'
	// Joined.withGracePeriod: a stream record at t waits until the
	// watermark (Kafka Streams' stream time) reaches t + grace, then joins
	// the table version valid at t; one already that far behind is joined
	// at once. Default 0: every record joins on arrival (once the watermark
	// reaches its time). At most History.
	Grace time.Duration `yaml:"grace,omitempty"`
	// History (type temporal, semantics kafka; required there) is the
	// versioned table's history retention (Kafka Streams'
	// persistentVersionedKeyValueStore historyRetention): a table record
	// older than watermark - history is refused (late, behind-history), a
	// stream record that old finds no version, and older versions are
	// dropped once no record can reach them.
	History time.Duration `yaml:"history,omitempty"`
}

// CDCOptions are a changelog join's options.
type CDCOptions struct {
	// Kinds is update (the default: an update of a matched row is -U/+U) or
	// flink (Flink's StreamingJoinOperator: an outer side's change is -D/+I,
	// a padded row comes and goes as +I/-D).
	Kinds string `yaml:"kinds,omitempty"`
	// Ts is none (the default: outputs carry no time) or max (Kafka
	// Streams' KTable-KTable join: an output's ts is the larger of its input
	// change's source time, Debezium's ts_ms, and the other row's).
	Ts string `yaml:"ts,omitempty"`
}

// Side describes one input of the join.
type Side struct {
	Name string `yaml:"name"`
	// PK and JoinOn: the primary-key and join columns of a cdc table.
	PK     string `yaml:"pk"`
	JoinOn string `yaml:"join_on"`
	// Key and Ts: the join-key and event-time fields of an event-time input
	// (Ts holds epoch milliseconds or an RFC 3339 string).
	Key string `yaml:"key"`
	Ts  string `yaml:"ts"`
	// KeyExpr computes the join key with an expr-lang expression over the
	// input's fields instead of Key (re-keying), e.g. `lower(email)` or
	// `country + "/" + string(user_id)`. Set one of key and key_expr.
	KeyExpr string `yaml:"key_expr,omitempty"`
	// Kind names the field of a temporal join's input holding its row kind
	// (+I, -U, +U, -D; absent or null: +I): on the versioned (right) side
	// -U and -D end a version; on the probe (left) side, with temporal:
	// {semantics: flink}, the kind is kept on the output.
	Kind string `yaml:"kind,omitempty"`
}

// CompiledKeyExpr compiles the side's key_expr; nil without one.
func (s Side) CompiledKeyExpr() (*transform.Value, error) {
	if s.KeyExpr == "" {
		return nil, nil
	}
	return transform.CompileValue(s.KeyExpr)
}

// Window is a window assigner: tumbling (size, offset), sliding (size,
// slide, offset) or session (gap).
type Window struct {
	Type   string        `yaml:"type"`
	Size   time.Duration `yaml:"size"`
	Slide  time.Duration `yaml:"slide"`
	Offset time.Duration `yaml:"offset"`
	Gap    time.Duration `yaml:"gap"`
}

// Watermark configures a source's event-time watermarks.
type Watermark struct {
	// MaxOutOfOrderness is how late (in event time) an element may arrive
	// behind the newest one of its partition and still be on time.
	MaxOutOfOrderness time.Duration `yaml:"max_out_of_orderness"`
	// IdleTimeout stops a quiet partition from holding the watermark back.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
}

// Column is one output column: Name takes the value of From,
// "table.field", or of Expr, an expr-lang expression over both sides'
// rows (see projectColumn).
type Column struct {
	Name string `yaml:"name"`
	From string `yaml:"from"`
	Expr string `yaml:"expr"`
}

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

// Source is one input.
type Source struct {
	// Name identifies the source in positions and committed offsets.
	Name string `yaml:"name"`
	// Type is the connector kind: file, redis-stream or kafka
	// (connectors/all).
	Type string `yaml:"type"`
	// Format is the record format: debezium (default for cdc joins),
	// debezium-avro (Debezium's envelope in Avro with a Schema Registry, cdc
	// joins; needs schema_registry), debezium-jsonschema (Debezium JSON
	// behind the registry's header), changelog (another job's changelog
	// sink output, read as changes of one table: a chain of joins, see
	// FormatChangelog) or json (plain events, default for event-time
	// joins).
	Format string `yaml:"format"`
	// SchemaRegistry of a debezium-avro source (see job/registry.go).
	SchemaRegistry SchemaRegistry `yaml:"schema_registry,omitempty"`
	// Watermark configures event-time watermarks of an event-time join's source.
	Watermark Watermark `yaml:"watermark"`
	// Side binds every record to one join input: left or right (or the table name of that side).
	Side string `yaml:"side"`
	// Tables binds records by their Debezium source.table instead: table name -> left|right.
	Tables map[string]string `yaml:"tables"`
	// Rate paces the source to this many records per second (0: as fast as possible). Demos use it.
	Rate float64 `yaml:"rate"`
	// OnBadInput is what a record the source cannot use (not JSON, no key,
	// no timestamp, a wrong type, an unknown op, over max_record_bytes)
	// does: dead-letter (default: counted, logged and written to the job's
	// dead_letter output when it names one), skip (counted and logged at a
	// rate-limited level) or fail (the job stops with an error naming the
	// source, position and reason; no offset at or past it is committed).
	// Offsets advance past dead-lettered and skipped records.
	OnBadInput string `yaml:"on_bad_input,omitempty"`
	// MaxRecordBytes rejects a record longer than this with reason
	// too-large (default DefaultMaxRecordBytes).
	MaxRecordBytes int `yaml:"max_record_bytes,omitempty"`
	// OnTruncate is what a Debezium truncate event (op t) does: dead-letter
	// (default), ignore (counted and logged) or fail. The join's state is
	// not cleared either way: re-snapshot the table to rebuild it.
	OnTruncate string `yaml:"on_truncate,omitempty"`
	// Dedup drops a Debezium change whose source position (source.lsn,
	// source.file/pos/row, source.commit_lsn/change_lsn/event_serial_no,
	// source.scn) is not newer than the last one applied to the same row:
	// Debezium's at-least-once replays at new offsets. Default true; set
	// false for connectors whose positions are not ordered (a MySQL
	// failover to a server with other binlog file names).
	Dedup *bool `yaml:"dedup,omitempty"`
	// Filter keeps only the records for which this expr-lang expression is
	// true (transform package), e.g. `status == "active" && amount > 10`.
	// It sees a row's columns, and _table (a CDC record's source table). A
	// CDC change is filtered per row image, so the changelog stays one: an
	// update that leaves the filter becomes a delete, one that enters it an
	// insert. A record whose filter fails (a wrong type) is bad input.
	Filter string `yaml:"filter,omitempty"`
	// Conn holds the entry's other fields, its connector's (path, redis,
	// stream, kafka, shards, …), as written: the kind of Type decodes them
	// once, when the job is compiled (SourcePlan.Config), and reports a
	// field it does not take (connectors.Table.Decode).
	Conn connectors.Fields `yaml:",inline"`
}

// CompiledFilter compiles the source's filter; nil without one.
func (s Source) CompiledFilter() (*transform.Filter, error) {
	if s.Filter == "" {
		return nil, nil
	}
	return transform.CompileFilter(s.Filter)
}

// RepartitionSuffix ends the name of a repartitioned source's reader of
// its repartition streams (SourcePlan.RepartitionReader): "cdc:repart".
const RepartitionSuffix = ":repart"

// DefaultMaxRecordBytes is the record size limit of a source without
// max_record_bytes.
const DefaultMaxRecordBytes = 1 << 20

// Bad-input policies (sources[].on_bad_input, sources[].on_truncate).
const (
	PolicyDeadLetter = "dead-letter"
	PolicySkip       = "skip"
	PolicyFail       = "fail"
	PolicyIgnore     = "ignore" // on_truncate only
)

// BadInputPolicy is the effective on_bad_input of a source.
func (s Source) BadInputPolicy() string {
	if s.OnBadInput == "" {
		return PolicyDeadLetter
	}
	return s.OnBadInput
}

// TruncatePolicy is the effective on_truncate of a source.
func (s Source) TruncatePolicy() string {
	if s.OnTruncate == "" {
		return PolicyDeadLetter
	}
	return s.OnTruncate
}

// RecordLimit is the effective max_record_bytes of a source.
func (s Source) RecordLimit() int {
	if s.MaxRecordBytes == 0 {
		return DefaultMaxRecordBytes
	}
	return s.MaxRecordBytes
}

// DedupOn reports whether Debezium duplicates are dropped (default true).
func (s Source) DedupOn() bool { return s.Dedup == nil || *s.Dedup }

// DeadLetter is where rejected records go. In YAML it is either a path (a
// file, as `dead_letter: dead.jsonl`) or a mapping with a type and the
// connection settings of the matching sink:
//
//	dead_letter: {type: file, path: dead.jsonl}
//	dead_letter: {type: kafka, kafka: {brokers: [...], topic: joinery-dlq}}
//	dead_letter: {type: redis-stream, redis: {addr: ...}, stream: joinery-dlq}
//
// Every dead letter is one JSON object with the reason, the error, the
// source name, its position, the raw bytes and the time (see
// sinks/deadletter).
type DeadLetter struct {
	// Type is file, kafka or redis-stream; empty: none.
	Type string `yaml:"type,omitempty"`
	// Conn holds the output's connector fields (path, redis, stream,
	// kafka), decoded by its kind when the job is compiled.
	Conn connectors.Fields `yaml:",inline"`
}

// UnmarshalYAML accepts a path (a file) or a mapping.
func (d *DeadLetter) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var p string
		if err := n.Decode(&p); err != nil {
			return err
		}
		*d = DeadLetter{}
		if p != "" {
			*d = DeadLetter{Type: "file", Conn: connectors.Fields{"path": *n}}
		}
		return nil
	}
	type plain DeadLetter
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*d = DeadLetter(v)
	return nil
}

// Enabled reports whether a dead-letter output is configured.
func (d DeadLetter) Enabled() bool { return d.Type != "" }

// Sink is one output.
type Sink struct {
	// Type is stdout, file, redis-stream, redis-hash (a queryable view keyed by
	// the result's primary key), kafka, or table (prints the final joined
	// table when the job ends).
	Type string `yaml:"type"`
	// Format is changelog (default), upsert or debezium (Debezium-style
	// envelopes; see formats/changelog).
	Format string `yaml:"format"`
	// Encoding of a kafka sink's values: json (default) or avro (the
	// format's fields in Avro, registered in schema_registry under subject,
	// default "<topic>-value"; see job/registry.go).
	Encoding       string         `yaml:"encoding,omitempty"`
	SchemaRegistry SchemaRegistry `yaml:"schema_registry,omitempty"`
	Subject        string         `yaml:"subject,omitempty"`
	// Conn holds the sink's connector fields (path, redis, stream, key,
	// kafka, shards, …), decoded by its kind when the job is compiled
	// (SinkPlan.Config).
	Conn connectors.Fields `yaml:",inline"`
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
	// past it the node stops ingesting with an error (node.StateOverBudgetError).
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
	// until that many members are live and read them, or ExpectWait
	// passes, so the shards are spread at once rather than handed over
	// from the first node up (docs/scaling.md, "Cold start"). 0 (default):
	// no wait.
	Expect int `yaml:"expect,omitempty"`
	// ExpectWait bounds that wait (default 5s).
	ExpectWait time.Duration `yaml:"expect_wait,omitempty"`
	// Watermarks sets how the ingest nodes of an event-time job share their
	// watermarks through the state store (the global watermark is the
	// minimum over live, active nodes).
	Watermarks WatermarkSharing `yaml:"watermarks,omitempty"`
}

// WatermarkSharing configures watermark sharing between ingest nodes.
type WatermarkSharing struct {
	// Disabled makes each node use its own watermark only: right only for
	// a job with a single ingest node.
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

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Load reads, parses and validates a job file. Unknown fields are errors.
func Load(path string) (*Spec, error) {
	p, err := LoadPlan(path)
	if err != nil {
		return nil, err
	}
	return p.Spec, nil
}

// LoadPlan reads, parses and compiles a job file (Compile).
func LoadPlan(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := parse(b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Parse parses and validates a job file's contents (relative paths are
// relative to the working directory).
func Parse(b []byte) (*Spec, error) {
	p, err := parse(b, "")
	if err != nil {
		return nil, err
	}
	return p.Spec, nil
}

// parse parses and compiles a job file's contents; dir is the job file's
// directory. Secrets are expanded and read (secrets.go) before the
// JOINERY_* overrides; every problem is reported at once.
func parse(b []byte, dir string) (*Plan, error) {
	s := Spec{dir: dir}
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	if err := d.Decode(&s); err != nil {
		return nil, fmt.Errorf("job: parse: %w", err)
	}
	s.dir, s.lookup = dir, os.LookupEnv
	secretErr := s.expandSecrets(os.LookupEnv)
	s.applyEnv(os.Getenv)
	envErr := s.applyExpectEnv(os.Getenv)
	s.applyRedisClusterEnv(os.Getenv)
	p, err := Compile(&s)
	if err := errors.Join(secretErr, envErr, err); err != nil {
		return nil, err
	}
	return p, nil
}

// Environment variables that override the job file, so one file (a Helm
// ConfigMap) serves every pod of a fleet. Each one, when set and non-empty,
// wins over the file.
const (
	EnvNodeName  = "JOINERY_NODE_NAME"      // cluster.node_name
	EnvAdvertise = "JOINERY_ADVERTISE_ADDR" // cluster.advertise
	EnvSeeds     = "JOINERY_SEEDS"          // cluster.seeds, comma separated
	EnvRedisAddr = "JOINERY_REDIS_ADDR"     // state.redis.addr
	EnvToken     = "JOINERY_TOKEN"          // admin.token
	EnvReadToken = "JOINERY_READ_TOKEN"     // admin.read_token
	EnvInsecure  = "JOINERY_ADMIN_INSECURE" // admin.insecure ("true")
	EnvAdminAddr = "JOINERY_ADMIN_ADDR"     // admin.addr
	EnvExpect    = "JOINERY_EXPECT"         // cluster.expect (the Helm chart's replicaCount)
	// EnvRedisUsername, EnvRedisTLS ("true") and EnvRedisTLSCA (a CA file;
	// implies TLS) set state.redis.username and state.redis.tls, for the
	// Helm chart's redis.username and redis.tls values.
	EnvRedisUsername = "JOINERY_REDIS_USERNAME"
	EnvRedisTLS      = "JOINERY_REDIS_TLS"
	EnvRedisTLSCA    = "JOINERY_REDIS_TLS_CA"
)

func (s *Spec) applyEnv(getenv func(string) string) {
	if v := getenv(EnvNodeName); v != "" {
		s.Cluster.NodeName = v
	}
	if v := getenv(EnvAdvertise); v != "" {
		s.Cluster.Advertise = v
	}
	if v := getenv(EnvSeeds); v != "" {
		s.Cluster.Seeds = nil
		for _, seed := range strings.Split(v, ",") {
			if seed = strings.TrimSpace(seed); seed != "" {
				s.Cluster.Seeds = append(s.Cluster.Seeds, seed)
			}
		}
	}
	if v := getenv(EnvRedisAddr); v != "" {
		s.State.Redis.Addr = v
	}
	if v := getenv(EnvToken); v != "" {
		s.Admin.Token = v
	}
	if v := getenv(EnvReadToken); v != "" {
		s.Admin.ReadToken = v
	}
	if getenv(EnvInsecure) == "true" {
		s.Admin.Insecure = true
	}
	if v := getenv(EnvAdminAddr); v != "" {
		s.Admin.Addr = v
	}
	if v := getenv(EnvRedisUsername); v != "" {
		s.State.Redis.Username = v
	}
	if getenv(EnvRedisTLS) == "true" {
		s.State.Redis.TLS.Enabled = true
	}
	if v := getenv(EnvRedisTLSCA); v != "" {
		s.State.Redis.TLS.Enabled, s.State.Redis.TLS.CAFile = true, v
	}
}

// applyExpectEnv sets cluster.expect from EnvExpect, when set and non-empty.
func (s *Spec) applyExpectEnv(getenv func(string) string) error {
	v := strings.TrimSpace(getenv(EnvExpect))
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("cluster.expect: %s must be a whole number of nodes, 0 or more (got %q)", EnvExpect, v)
	}
	s.Cluster.Expect = n
	return nil
}

// Resolve returns p relative to the job file's directory (absolute paths and "-" unchanged).
func (s *Spec) Resolve(p string) string {
	if p == "" || p == "-" || filepath.IsAbs(p) || s.dir == "" {
		return p
	}
	return filepath.Join(s.dir, p)
}

// Validate reports every problem of the spec, each naming its field, once
// (and nothing about a secret field whose value could not be read): it is
// Compile with the Plan dropped.
func (s *Spec) Validate() error {
	_, err := Compile(s)
	return err
}

// compile checks the spec and fills p with what it compiled (plan.go).
func (s *Spec) compile(p *Plan) error {
	var errs []error
	bad := func(field, format string, a ...any) {
		if s.unresolved[field] {
			return // expandSecrets reported why it holds no value
		}
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if !nameRE.MatchString(s.Name) {
		bad("name", "must be non-empty and use only letters, digits, '-', '_' and '.' (got %q)", s.Name)
	}
	if s.Runtime.GCPercent < 0 {
		bad("runtime.gc_percent", "must be positive (got %d)", s.Runtime.GCPercent)
	}
	var err error
	if p.MemoryLimit, err = s.Runtime.MemoryLimitBytes(); err != nil {
		bad("runtime.memory_limit", "%v", err)
	}
	if p.MemoryBudget, err = s.State.MemoryBudgetBytes(); err != nil {
		bad("state.memory_budget", "%v", err)
	}
	var joinErrs []error
	p.JoinPlan, joinErrs = s.compileJoin(nil)
	errs = append(errs, joinErrs...)
	if len(s.Join.Tables) > 0 && !s.Multi() {
		bad("join.tables", "only for a cdc-multi join (got type %s)", s.Join.Type)
	}
	names := map[string]bool{}
	for i, src := range s.Sources {
		f := fmt.Sprintf("sources[%d]", i)
		if !nameRE.MatchString(src.Name) {
			bad(f+".name", "must be non-empty and use only letters, digits, '-', '_' and '.' (got %q)", src.Name)
		} else if names[src.Name] {
			bad(f+".name", "duplicate source name %q", src.Name)
		}
		names[src.Name] = true
		if src.Format != "" && src.Format != "debezium" && src.Format != "json" && src.Format != FormatDebeziumAvro && src.Format != FormatDebeziumJSONSchema && src.Format != FormatChangelog {
			bad(f+".format", "must be debezium, debezium-avro, debezium-jsonschema or json, or changelog (another job's output; got %q)", src.Format)
		} else if (src.Format == FormatDebeziumAvro || src.Format == FormatDebeziumJSONSchema || src.Format == FormatChangelog) && s.Timed() {
			bad(f+".format", "%s is for cdc joins", src.Format)
		} else if src.Format == FormatChangelog && len(src.Tables) > 0 {
			bad(f+".tables", "a changelog source names no table: bind it with side")
		}
		errs = append(errs, validateRegistry(f+".schema_registry", src.SchemaRegistry, src.Format == FormatDebeziumAvro, "format "+s.SourceFormat(src))...)
		sp := SourcePlan{Source: src}
		if sp.Filter, err = src.CompiledFilter(); err != nil {
			bad(f+".filter", "%v", err)
		}
		if src.Format == FormatDebeziumAvro {
			if sp.Registry, err = s.RegistryClientConfig(src.SchemaRegistry); err != nil {
				errs = append(errs, fmt.Errorf("%s.%w", f, err))
			}
		}
		p.Sources = append(p.Sources, sp)
		if src.Watermark.MaxOutOfOrderness < 0 {
			bad(f+".watermark.max_out_of_orderness", "must not be negative")
		}
		if src.Watermark.IdleTimeout < 0 {
			bad(f+".watermark.idle_timeout", "must not be negative")
		}
		switch {
		case src.Side != "" && len(src.Tables) > 0:
			bad(f, "set side or tables, not both")
		case src.Side == "" && len(src.Tables) == 0:
			bad(f+".side", "must be set (left or right), or set tables")
		case src.Side != "" && s.Multi():
			if _, ok := s.sideOf(src.Side); !ok {
				bad(f+".side", "must name a table of join.tables (%s; got %q)", strings.Join(s.tableNames(), ", "), src.Side)
			}
		case src.Side != "":
			if _, ok := s.sideOf(src.Side); !ok {
				bad(f+".side", "must be left, right, %q or %q (got %q)", s.Join.Left.Name, s.Join.Right.Name, src.Side)
			}
		default:
			for t, side := range src.Tables {
				if _, ok := s.sideOf(side); !ok && s.Multi() {
					bad(f+".tables."+t, "must name a table of join.tables (%s; got %q)", strings.Join(s.tableNames(), ", "), side)
				} else if !ok {
					bad(f+".tables."+t, "must be left or right (got %q)", side)
				}
			}
		}
		if src.Rate < 0 {
			bad(f+".rate", "must not be negative")
		}
		switch src.OnBadInput {
		case "", PolicyDeadLetter, PolicySkip, PolicyFail:
		default:
			bad(f+".on_bad_input", "must be dead-letter, skip or fail (got %q)", src.OnBadInput)
		}
		switch src.OnTruncate {
		case "", PolicyDeadLetter, PolicyIgnore, PolicyFail:
		default:
			bad(f+".on_truncate", "must be dead-letter, ignore or fail (got %q)", src.OnTruncate)
		}
		if src.MaxRecordBytes < 0 {
			bad(f+".max_record_bytes", "must not be negative")
		}
		errs = append(errs, s.compileSourceConn(f, &p.Sources[len(p.Sources)-1])...)
	}
	errs = append(errs, p.checkKeyGroups()...)
	if s.Ingest.Addr != "" || s.Ingest.Source != "" {
		found := false
		for _, src := range s.Sources {
			if src.Name == s.Ingest.Source {
				found = true
				if k, ok := all.Sources.Lookup(src.Type); ok && k.Append == nil {
					bad("ingest.source", "must name a %s source (%q is %s)", all.Sources.Where(func(k connectors.SourceKind) bool { return k.Append != nil }), src.Name, src.Type)
				}
				if r, ok := p.source(src.Name).Config.(connectors.AppendRefused); ok && r.AppendRefused() != "" {
					bad("ingest.source", "must not name %s (%q)", r.AppendRefused(), src.Name)
				}
				if src.Format == FormatDebeziumAvro || src.Format == FormatDebeziumJSONSchema {
					bad("ingest.source", "HTTP ingest appends plain JSON; %q is a %s source", src.Name, src.Format)
				}
			}
		}
		if !found {
			bad("ingest.source", "must name a source of this job (got %q)", s.Ingest.Source)
		}
		if !strings.Contains(s.Ingest.Addr, ":") {
			bad("ingest.addr", "must be host:port (got %q)", s.Ingest.Addr)
		}
	}
	if dl := s.DeadLetter; dl.Enabled() {
		p.DeadLetter = &DeadLetterPlan{DeadLetter: dl}
		var dlErrs []error
		p.DeadLetter.Kind, p.DeadLetter.Config, dlErrs = all.DeadLetters.Compile(s.validator("dead_letter"), dl.Type, dl.Conn)
		errs = append(errs, s.expandConn("dead_letter", p.DeadLetter.Config, dlErrs)...)
	}
	for i, sk := range s.Sinks {
		f := fmt.Sprintf("sinks[%d]", i)
		switch sk.Format {
		case "", "changelog", "upsert", "debezium":
		default:
			bad(f+".format", "must be changelog, upsert or debezium (got %q)", sk.Format)
		}
		errs = append(errs, validateSinkEncoding(f, sk)...)
		sp := s.compileSink(f, sk, &errs)
		var sinkErrs []error
		sp.Kind, sp.Config, sinkErrs = all.Sinks.Compile(s.validator(f), sk.Type, sk.Conn)
		errs = append(errs, s.expandConn(f, sp.Config, sinkErrs)...)
		p.Sinks = append(p.Sinks, sp)
	}
	switch s.State.Store {
	case "", "embedded":
	case "redis":
		if s.State.Redis.Addr == "" && len(s.State.Redis.Cluster.Addrs) == 0 {
			bad("state.redis.addr", "must be set when state.store is redis (or state.redis.cluster.addrs)")
		}
	default:
		bad("state.store", "must be embedded or redis (got %q)", s.State.Store)
	}
	if s.State.PassivateAfter < 0 {
		bad("state.passivate_after", "must not be negative")
	}
	if s.State.FlushBatch < 0 {
		bad("state.flush_batch", "must not be negative")
	}
	for field, addr := range map[string]string{"cluster.gossip": s.Cluster.Gossip, "cluster.remote": s.Cluster.Remote, "admin.addr": s.Admin.Addr} {
		if addr != "" && !strings.Contains(addr, ":") {
			bad(field, "must be host:port (got %q)", addr)
		}
	}
	s.compileAddrs(p, bad)
	for i, seed := range s.Cluster.Seeds {
		if !strings.Contains(seed, ":") {
			bad(fmt.Sprintf("cluster.seeds[%d]", i), "must be host:port (got %q)", seed)
		}
	}
	switch s.Cluster.Profile {
	case "", "lan", "wan", "local":
	default:
		bad("cluster.profile", "must be lan, wan or local (got %q)", s.Cluster.Profile)
	}
	if s.Cluster.RequestTimeout < 0 {
		bad("cluster.request_timeout", "must not be negative")
	}
	if s.Cluster.Expect < 0 {
		bad("cluster.expect", "must not be negative (got %d): the number of nodes the fleet is started with", s.Cluster.Expect)
	}
	if s.Cluster.ExpectWait < 0 {
		bad("cluster.expect_wait", "must not be negative (got %v)", s.Cluster.ExpectWait)
	}
	s.validateClusterSecurity(p, bad)
	if w := s.Cluster.Watermarks; w.Interval < 0 || w.TTL < 0 {
		bad("cluster.watermarks", "interval and ttl must not be negative")
	}
	s.checkRedisCluster(bad)
	s.checkRedisReplicas(bad)
	for _, r := range s.redisBlocks() {
		if p.StoreTLS, err = s.RedisTLSConfig(r.cfg); err != nil {
			bad(r.field+".tls", "%v", err)
		}
	}
	s.validateSecurity(p, bad) // secrets.go
	return errors.Join(errs...)
}

// sideOf maps "left"/"right" or a side's table name to the side; for a
// cdc-multi join, a table's name to its index.
func (s *Spec) sideOf(v string) (record.Side, bool) {
	if s.Multi() {
		return s.tableOf(v)
	}
	switch v {
	case "left", s.Join.Left.Name:
		return record.Left, v != ""
	case "right", s.Join.Right.Name:
		return record.Right, v != ""
	}
	return 0, false
}

// SideOf maps a source's side or table binding value to the join side.
func (s *Spec) SideOf(v string) (record.Side, bool) { return s.sideOf(v) }

// CDCSpec builds the joins spec of the job's join, with errors naming job fields.
func (s *Spec) CDCSpec() (*joins.CDCSpec, error) {
	var errs []error
	mode := s.Join.Mode
	if mode == "" {
		mode = "inner"
	}
	jt, err := joins.ParseJoinType(mode)
	if err != nil {
		errs = append(errs, fmt.Errorf("join.mode: must be inner, left or full (got %q)", s.Join.Mode))
	}
	kinds, err := joins.ParseCDCKinds(s.Join.CDC.Kinds)
	if err != nil {
		errs = append(errs, fmt.Errorf("join.cdc.kinds: must be update, flink or kafka (got %q)", s.Join.CDC.Kinds))
	}
	switch s.Join.CDC.Ts {
	case "", "none", "max":
	default:
		errs = append(errs, fmt.Errorf("join.cdc.ts: must be none or max (got %q)", s.Join.CDC.Ts))
	}
	if s.Join.Temporal != (TemporalOptions{}) {
		errs = append(errs, errors.New("join.temporal: only for temporal joins"))
	}
	cs := &joins.CDCSpec{
		Kinds: kinds, MaxTs: s.Join.CDC.Ts == "max",
		Type:  jt,
		Left:  joins.SideSpec{Name: s.Join.Left.Name, PK: s.Join.Left.PK, JoinOn: s.Join.Left.JoinOn},
		Right: joins.SideSpec{Name: s.Join.Right.Name, PK: s.Join.Right.PK, JoinOn: s.Join.Right.JoinOn},
	}
	for i, c := range s.Join.Project {
		f := fmt.Sprintf("join.project[%d]", i)
		col, err := s.projectColumn(c, s.Join.Left.Name, s.Join.Right.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", f, err))
			continue
		}
		if c.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name: must not be empty", f))
		}
		cs.Project = append(cs.Project, col)
	}
	if err := cs.Validate(); err != nil {
		// joins names fields relative to the join ("left.pk: …").
		for _, line := range strings.Split(err.Error(), "\n") {
			errs = append(errs, errors.New("join."+line))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cs, nil
}
