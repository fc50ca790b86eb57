package job

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/transform"
)

// Plan is a job compiled once, by Compile: every expression compiled, every
// default applied, every file the job names read and its TLS built. A node
// wires itself from the Plan and compiles nothing (docs/concepts/architecture.md,
// "Compile once: the Plan"); Validate is Compile with the Plan dropped.
type Plan struct {
	// Spec is the job file the plan was compiled from, for the settings
	// that need no compiling (names, addresses, connector blocks).
	Spec *Spec

	// JoinPlan is the join, compiled (CompileJoin).
	JoinPlan
	// Columns are the output columns in projection order (nil without a
	// projection).
	Columns []string
	// EventTime is an event-time join's watermark settings (nil for a
	// changelog join).
	EventTime *EventTime

	// Sources are the job's sources, in the job's order, each compiled.
	Sources []SourcePlan
	// Sinks are the job's sinks, in the job's order, each compiled.
	Sinks []SinkPlan
	// DeadLetter is the job's dead-letter output (nil: none).
	DeadLetter *DeadLetterPlan
	// ExactlyOnce says a sink is a kafka sink with exactly_once: the job's
	// outputs and its kafka sources' offsets commit in Kafka transactions
	// (job/exactlyonce.go). DeadLetterTxn says the dead-letter output is a
	// kafka topic on the same brokers, written in the same transactions.
	ExactlyOnce, DeadLetterTxn bool

	// Remote and Gossip are cluster.remote and cluster.gossip split, the
	// host 127.0.0.1 and port 0 (any free port) when unset.
	Remote, Gossip HostPort
	// RequestTimeout is cluster.request_timeout, 30s by default.
	RequestTimeout time.Duration
	// MemoryLimit is runtime.memory_limit in bytes (0: not set).
	MemoryLimit int64
	// MemoryBudget is state.memory_budget in bytes: -1 off ("0"), 0 the
	// default budget (internal/gctune).
	MemoryBudget int64
	// GossipKey and GossipExtra are cluster.secret_key and
	// cluster.secret_keys, decoded (nil when unset).
	GossipKey   []byte
	GossipExtra [][]byte
	// StoreTLS is state.redis.tls built (nil: no TLS, or not the redis store).
	StoreTLS *tls.Config
	// AdminTLS and IngestTLS are admin.tls and ingest.tls built (nil: off).
	AdminTLS, IngestTLS *tls.Config
}

// JoinPlan is a compiled join: the machine spec the key core takes
// (actors.Deps, keycore.MachineSpec) and the event-time sides' key
// expressions.
type JoinPlan struct {
	// Exactly one of CDC (a cdc join), Multi (cdc-multi) and NewTimed (an
	// event-time join) is set.
	CDC      *joins.CDCSpec
	Multi    *joins.MultiSpec
	NewTimed func() joins.Timed
	// KeyExprs are an event-time join's key_expr, by side (record.Left,
	// record.Right); nil: the side's key field.
	KeyExprs [2]*transform.Value
	// Conditioned: an event-time join with a residual condition.
	Conditioned bool
	// TimedKept are the columns an event-time join's key state keeps of
	// each side (joins.ReadColumns); nil keeps whole rows.
	TimedKept [2][]string
}

// CompileJoin compiles the join: section alone, as Compile does (replay
// runs a job file's join with it); view is what a residual condition sees
// of a row (nil: its columns, transform.Env).
func (s *Spec) CompileJoin(view func(record.Row) any) (JoinPlan, error) {
	jp, errs := s.compileJoin(view)
	return jp, errors.Join(errs...)
}

// compileJoin compiles the join by its type, returning every problem.
func (s *Spec) compileJoin(view func(record.Row) any) (JoinPlan, []error) {
	var jp JoinPlan
	var errs []error
	var err error
	switch s.Join.Type {
	case "cdc":
		if jp.CDC, err = s.CDCSpec(); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, s.Join.streamOnly()...)
	case TypeCDCMulti:
		if jp.Multi, err = s.MultiSpec(); err != nil {
			errs = append(errs, err)
		}
	case "window", "interval", "time-bounded", "unbounded", "temporal", "temporal-latest":
		if jp, err = s.compileTimed(view); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, fmt.Errorf("join.type: must be cdc, cdc-multi, window, interval, time-bounded, unbounded, temporal or temporal-latest (got %q)", s.Join.Type))
	}
	return jp, errs
}

// SourcePlan is one source of a Plan: its job settings, its filter
// compiled (nil without one), for a debezium-avro source its schema
// registry's client configuration (TLS files read), and its connector:
// its kind and the configuration the kind decoded from its fields, once.
type SourcePlan struct {
	Source
	Filter   *transform.Filter
	Registry debeziumavro.ClientConfig
	Kind     connectors.SourceKind
	Config   connectors.Config
	// KeyGroups is how the source follows the job's key groups (nil: it
	// is not partitioned by the join key).
	KeyGroups *connectors.KeyGrouping
}

// RepartitionReader is, for a source that repartitions its records by
// the join key (connectors.Repartitioned), the plan of the reader of its
// repartition logs: p's settings under the name p.Name+RepartitionSuffix
// (the key actors record its positions apart from the raw source's), with
// the configuration its kind gives. ok false: p does not repartition.
func (p SourcePlan) RepartitionReader() (SourcePlan, bool) {
	r, ok := p.Config.(connectors.Repartitioned)
	if !ok {
		return SourcePlan{}, false
	}
	cfg, ok := r.RepartitionReader()
	if !ok {
		return SourcePlan{}, false
	}
	p.Name += RepartitionSuffix
	p.Config, p.KeyGroups = cfg, keyGrouping(cfg)
	return p, true
}

// SinkPlan is one sink of a Plan: its job settings, its output format
// parsed (changelog by default) and, for encoding avro, the Avro setting
// (schema registry client, subject, columns; nil for JSON).
type SinkPlan struct {
	Sink
	Format changelog.Format
	Avro   *connectors.Avro
	// Kind and Config are the sink's connector: its kind and the
	// configuration the kind decoded from its fields, once.
	Kind   connectors.SinkKind
	Config connectors.Config
}

// compileSink compiles sinks[i] (field f), adding its problems to errs.
func (s *Spec) compileSink(f string, sk Sink, errs *[]error) SinkPlan {
	sp := SinkPlan{Sink: sk, Format: changelog.Changelog}
	if sk.Format != "" {
		if format, err := changelog.ParseFormat(sk.Format); err == nil {
			sp.Format = format // a bad format is reported by Validate's check
		}
	}
	if sk.Encoding != EncodingAvro {
		return sp
	}
	cc, err := s.RegistryClientConfig(sk.SchemaRegistry)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("%s.%w", f, err))
	}
	var cols []string // a CDC join's rows have exactly the projected columns; else a map
	if !s.Timed() {
		for _, c := range s.Join.Project {
			cols = append(cols, c.Name)
		}
	}
	sp.Avro = &connectors.Avro{Registry: cc, Subject: sk.Subject, Name: s.Name, Columns: cols}
	return sp
}

// EventTime is the watermark settings of an event-time job: one delay and
// one idle timeout for the node (the largest delay and the shortest idle
// timeout its sources ask for), and the sources that hold the watermark
// back from the start.
type EventTime struct {
	MaxOutOfOrderness time.Duration
	IdleTimeout       time.Duration
	Sources           []string
}

// EventTimeOf is the event-time settings of sources.
func EventTimeOf(sources []Source) EventTime {
	var e EventTime
	for _, s := range sources {
		e.MaxOutOfOrderness = max(e.MaxOutOfOrderness, s.Watermark.MaxOutOfOrderness)
		if s.Watermark.IdleTimeout > 0 && (e.IdleTimeout == 0 || s.Watermark.IdleTimeout < e.IdleTimeout) {
			e.IdleTimeout = s.Watermark.IdleTimeout
		}
		e.Sources = append(e.Sources, s.Name)
	}
	return e
}

// HostPort is a listen address split into host and port.
type HostPort struct {
	Host string
	Port int
}

// DefaultHost is the host a node listens on when its address names none.
const DefaultHost = "127.0.0.1"

// splitHostPort splits addr ("" is DefaultHost, port 0; an empty host is
// DefaultHost).
func splitHostPort(addr string) (HostPort, error) {
	if addr == "" {
		return HostPort{Host: DefaultHost}, nil
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return HostPort{}, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return HostPort{}, fmt.Errorf("bad port %q", p)
	}
	if h == "" {
		h = DefaultHost
	}
	return HostPort{Host: h, Port: port}, nil
}

// compileAddrs splits cluster.remote and cluster.gossip into p (an address
// without a colon is reported by Validate's host:port check).
func (s *Spec) compileAddrs(p *Plan, bad func(field, format string, a ...any)) {
	for _, a := range []struct {
		field, addr string
		to          *HostPort
	}{{"cluster.remote", s.Cluster.Remote, &p.Remote}, {"cluster.gossip", s.Cluster.Gossip, &p.Gossip}} {
		hp, err := splitHostPort(a.addr)
		if err != nil && strings.Contains(a.addr, ":") {
			bad(a.field, "%v", err)
		}
		*a.to = hp
	}
}

// DefaultRequestTimeout is cluster.request_timeout when unset.
const DefaultRequestTimeout = 30 * time.Second

// KeyExpr is the key_expr of side (nil: the side's key field).
func (p *Plan) KeyExpr(side record.Side) *transform.Value { return p.KeyExprs[side] }
