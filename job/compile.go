package job

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connectors/all"
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Compile compiles the job: it reports every problem of the spec, each
// naming its field, once (and nothing about a secret field whose value
// could not be read), and returns the Plan a node runs.
func Compile(s *Spec) (*Plan, error) {
	p := &Plan{Spec: s}
	if err := s.compile(p); err != nil {
		return nil, err
	}
	for _, c := range s.Join.Project {
		p.Columns = append(p.Columns, c.Name)
	}
	if s.Timed() {
		e := EventTimeOf(s.Sources)
		p.EventTime = &e
	}
	p.RequestTimeout = s.Cluster.RequestTimeout
	if p.RequestTimeout == 0 {
		p.RequestTimeout = DefaultRequestTimeout
	}
	return p, nil
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
		s.compileSource(fmt.Sprintf("sources[%d]", i), src, names, p, &errs, bad)
	}
	errs = append(errs, p.checkKeyGroups()...)
	s.compileIngest(p, bad)
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
	s.checkExactlyOnce(p, bad)
	s.compileSettings(p, bad)
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

// compileSource checks sources[i] (field f) and appends its SourcePlan to
// p.Sources; names holds the names of the sources before it.
func (s *Spec) compileSource(f string, src Source, names map[string]bool, p *Plan, errs *[]error, bad func(field, format string, a ...any)) {
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
	*errs = append(*errs, validateRegistry(f+".schema_registry", src.SchemaRegistry, src.Format == FormatDebeziumAvro, "format "+s.SourceFormat(src))...)
	sp := SourcePlan{Source: src}
	var err error
	if sp.Filter, err = src.CompiledFilter(); err != nil {
		bad(f+".filter", "%v", err)
	}
	if src.Format == FormatDebeziumAvro {
		if sp.Registry, err = s.RegistryClientConfig(src.SchemaRegistry); err != nil {
			*errs = append(*errs, fmt.Errorf("%s.%w", f, err))
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
	*errs = append(*errs, s.compileSourceConn(f, &p.Sources[len(p.Sources)-1])...)
}

// compileIngest checks the HTTP ingest endpoint and the source it appends to.
func (s *Spec) compileIngest(p *Plan, bad func(field, format string, a ...any)) {
	if s.Ingest.Addr == "" && s.Ingest.Source == "" {
		return
	}
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

// compileSettings checks the state, admin and cluster settings.
func (s *Spec) compileSettings(p *Plan, bad func(field, format string, a ...any)) {
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
}
