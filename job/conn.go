package job

import (
	"fmt"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connectors/all"
)

// A connector entry (a source, a sink, the dead-letter output) is two
// parts: the fields every entry of its role has, which job declares and
// checks (Source, Sink, DeadLetter), and its connector's fields (Conn),
// which job keeps as written and its kind (connectors/all) decodes into
// its own typed configuration once, here, when the job is compiled. The
// Plan holds that configuration and the node opens the connector from it
// (docs/concepts/architecture.md, "Adding a connector").

// validator is the connectors.Validator of the entry at field f.
func (s *Spec) validator(f string) *connectors.Validator {
	return &connectors.Validator{At: f, Resolve: s.Resolve, EventTime: s.Timed()}
}

// compileSourceConn decodes and checks the connector fields of sp, the
// source at field f, into sp.Kind and sp.Config.
func (s *Spec) compileSourceConn(f string, sp *SourcePlan) []error {
	k, cfg, errs := all.Sources.Compile(s.validator(f), sp.Type, sp.Conn)
	if errs = s.expandConn(f, cfg, errs); len(errs) > 0 {
		return errs
	}
	sp.Kind, sp.Config = k, cfg
	sp.KeyGroups = keyGrouping(cfg)
	return nil
}

// keyGrouping is cfg's key groups; nil when it is not partitioned by the
// join key.
func keyGrouping(cfg connectors.Config) *connectors.KeyGrouping {
	if g, ok := cfg.(connectors.KeyGrouped); ok {
		if kg, ok := g.KeyGrouping(); ok {
			return &kg
		}
	}
	return nil
}

// expandConn expands the secrets of cfg, an entry's configuration at
// field f (errs: the errors of its decoding; nothing is expanded then),
// as expandSecrets does the job's own. A spec not read from a file
// (Parse, Load) has nothing expanded.
func (s *Spec) expandConn(f string, cfg connectors.Config, errs []error) []error {
	if len(errs) > 0 || s.lookup == nil {
		return errs
	}
	if sc, ok := cfg.(connectors.Secrets); ok {
		for _, sec := range sc.Secrets() {
			if err := s.expandSecret(secret{f + "." + sec.Field, sec.Val, sec.File}, s.lookup); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// checkKeyGroups checks that the plan's sources partitioned by the join
// key are co-partitioned (as Kafka Streams requires of joined topics):
// one rule mapping a join key to its group, one number of groups.
func (p *Plan) checkKeyGroups() []error {
	var errs []error
	var first *SourcePlan
	for i := range p.Sources {
		sp := &p.Sources[i]
		g := sp.KeyGroups
		switch {
		case g == nil:
		case first == nil:
			first = sp
		case g.Rule != first.KeyGroups.Rule:
			errs = append(errs, fmt.Errorf("sources[%d].%s: sources partitioned by the join key must be co-partitioned: %q follows %s, %q %s; a join key must be in the same group in every source",
				i, g.Field, sp.Name, g.Rule, first.Name, first.KeyGroups.Rule))
		case g.Groups != first.KeyGroups.Groups:
			errs = append(errs, fmt.Errorf("sources[%d].%s: sources partitioned by the join key must be co-partitioned: %q has %d key groups, %q %d (the same count and rule, as Kafka Streams requires of joined topics)",
				i, g.Field, sp.Name, g.Groups, first.Name, first.KeyGroups.Groups))
		}
	}
	return errs
}

// KeyGrouped lists the plan's sources partitioned by the join key (or
// repartitioned by it): the key groups the node places key actors by
// (docs/concepts/key-groups.md, "Key groups"). Compile checked they are
// co-partitioned.
func (p *Plan) KeyGrouped() []SourcePlan {
	var out []SourcePlan
	for _, sp := range p.Sources {
		if sp.KeyGroups != nil {
			out = append(out, sp)
		}
	}
	return out
}

// KeyGroups is the number of key groups the job's sources give (0: keys
// are placed one by one, or the groups are counted when the node starts:
// Kafka topics' partitions, connectors.Kind.KeyGroups).
func (p *Plan) KeyGroups() int {
	if ks := p.KeyGrouped(); len(ks) > 0 {
		return ks[0].KeyGroups.Groups
	}
	return 0
}

// source is the plan of the source named name (a zero plan when none is).
func (p *Plan) source(name string) SourcePlan {
	for _, sp := range p.Sources {
		if sp.Name == name {
			return sp
		}
	}
	return SourcePlan{}
}

// IngestSource is the plan of the source HTTP ingest feeds (ingest.source).
func (p *Plan) IngestSource() SourcePlan { return p.source(p.Spec.Ingest.Source) }

// DeadLetterPlan is the dead-letter output of a Plan: its kind and its
// configuration, decoded once.
type DeadLetterPlan struct {
	DeadLetter
	Kind   all.DeadLetterKind
	Config connectors.Config
}

// redactConn is fields with the secrets of its kind's configuration (typ
// in tab) replaced by Redacted, as Redacted prints them: each one set, or
// read from its *_file, the nodes along their paths copied (fields is
// unchanged); fields as they are when they do not decode.
func redactConn[E, T any](tab *connectors.Table[E, T], typ string, fields connectors.Fields) connectors.Fields {
	_, cfg, errs := tab.Decode("", typ, fields)
	sc, ok := cfg.(connectors.Secrets)
	if len(errs) > 0 || !ok {
		return fields
	}
	out := connectors.Fields{}
	for k, n := range fields {
		out[k] = n
	}
	for _, sec := range sc.Secrets() {
		if *sec.Val != "" || sec.File != nil && *sec.File != "" {
			_ = out.Set(sec.Field, Redacted) // the path decoded: its parents are mappings
		}
	}
	return out
}
