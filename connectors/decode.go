package connectors

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Fields are an entry's connector fields as the job file wrote them: every
// key of the entry the job does not take itself (its common fields: name,
// type, format, side, filter, …), by name. The job keeps them undecoded;
// the entry's kind decodes them once, when the job is compiled (Compile).
type Fields map[string]yaml.Node

// FieldsOf encodes v (a map or a struct with YAML tags) as Fields: entries
// built in code rather than read from a job file.
func FieldsOf(v any) (Fields, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("connectors: fields of a %T: not a mapping", v)
	}
	f := Fields{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		f[n.Content[i].Value] = *n.Content[i+1]
	}
	return f, nil
}

// Set sets the field at path ("kafka.brokers", "path") to v, as the job
// file would have written it, creating the mappings on the way: for a
// program or test that changes a connector setting of an entry it read
// (an address known only at run time). The nodes along the path are
// copied, so another entry sharing them is unchanged.
func (f Fields) Set(path string, v any) error {
	var val yaml.Node
	if err := val.Encode(v); err != nil {
		return err
	}
	names := strings.Split(path, ".")
	top, ok := f[names[0]]
	if !ok {
		top = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	n, err := setNode(top, names[1:], &val)
	if err != nil {
		return fmt.Errorf("connectors: set %s: %w", path, err)
	}
	f[names[0]] = *n
	return nil
}

// setNode is a copy of n with the node at path set to val.
func setNode(n yaml.Node, path []string, val *yaml.Node) (*yaml.Node, error) {
	if len(path) == 0 {
		return val, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is not a mapping", path[0])
	}
	n.Content = append([]*yaml.Node(nil), n.Content...)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == path[0] {
			c, err := setNode(*n.Content[i+1], path[1:], val)
			if err != nil {
				return nil, err
			}
			n.Content[i+1] = c
			return &n, nil
		}
	}
	c, err := setNode(yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}, path[1:], val)
	if err != nil {
		return nil, err
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: path[0]}, c)
	return &n, nil
}

// keys are f's names in the order the job file wrote them (by line and
// column; by name for fields built in code).
func (f Fields) keys() []string {
	ks := make([]string, 0, len(f))
	for k := range f {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int {
		na, nb := f[a], f[b]
		if na.Line != nb.Line {
			return na.Line - nb.Line
		}
		if na.Column != nb.Column {
			return na.Column - nb.Column
		}
		return strings.Compare(a, b)
	})
	return ks
}

// Secret is one secret field of a configuration: its path relative to the
// entry ("redis.password"), its value and its *_file sibling (nil: none).
// The job expands ${VAR} in it or reads its file (job/secrets.go).
type Secret struct {
	Field string
	Val   *string
	File  *string
}

// Secrets is implemented by a configuration that holds secrets.
type Secrets interface {
	Secrets() []Secret
}

// KeyGrouping is how a source follows the job's key groups: its
// partitions are key groups of the join key (docs/concepts/key-groups.md, "Key
// groups"). Every key-grouped source of a job must be co-partitioned: one
// Rule, one number of groups.
type KeyGrouping struct {
	// Field is the entry's field that asks for it ("partitioned_by",
	// "repartition"): where a co-partitioning error is reported.
	Field string
	// Rule says how a join key maps to its group, in words (messages
	// compare it); RuleField is the entry's field that sets it when it is
	// the entry's own ("kafka.partition_key"; "": Field).
	Rule, RuleField string
	// Groups is the number of key groups; 0: the source's system is asked
	// when the node starts (Kind.KeyGroups).
	Groups int
	// Of is the group of a join key among groups (nil: the kind's
	// KeyGroups gives it when the node starts).
	Of func(key string, groups int) int
}

// KeyGrouped is implemented by a source configuration that can be
// partitioned by the join key; ok false: this one is not.
type KeyGrouped interface {
	KeyGrouping() (g KeyGrouping, ok bool)
}

// Repartitioned is implemented by a source configuration that can
// repartition its records by the join key: the node reads it in two
// halves, the raw source forwarding each record to the repartition log of
// its key group (sources.Repartitioner) and reader, the source that reads
// those logs partitioned by the join key (docs/concepts/key-groups.md, "Key
// groups"). ok false: this one does not repartition.
type Repartitioned interface {
	RepartitionReader() (reader Config, ok bool)
}

// AppendRefused is implemented by a configuration of a kind with Append
// that HTTP ingest must not feed all the same: a non-empty answer says
// what it is ("a sharded redis-stream source": HTTP ingest appends to one
// log, knowing no key).
type AppendRefused interface {
	AppendRefused() string
}

// Decode finds the kind of type typ and decodes the entry's connector
// fields into its configuration, once. An unknown type is an error at
// at+".type" that lists the known ones; a field the kind does not take is
// an error naming its path (at+".kafka.topc: unknown field"), or, when
// other kinds of the table take it, naming them (at+".shards: is only for
// a redis-stream source (this one is file)").
func (t *Table[E, T]) Decode(at, typ string, fields Fields) (Kind[E, T], Config, []error) {
	k, ok := t.Lookup(typ)
	if !ok {
		return k, nil, []error{&FieldError{Path: at + ".type", Msg: fmt.Sprintf("must be %s (got %q)", t.Known(), typ)}}
	}
	cfg := k.New()
	ct := reflect.TypeOf(cfg)
	var errs []error
	known := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, name := range fields.keys() {
		n := fields[name]
		ft, ok := fieldType(ct, name)
		if !ok {
			var others []string
			for _, o := range t.kinds {
				if _, ok := fieldType(reflect.TypeOf(o.New()), name); ok {
					others = append(others, o.Type)
				}
			}
			msg := "unknown field"
			if len(others) > 0 {
				msg = fmt.Sprintf("is only for a %s %s (this one is %s)", orList(others), t.role, typ)
			}
			errs = append(errs, &FieldError{Path: at + "." + name, Msg: msg})
			continue
		}
		errs = append(errs, unknownFields(at+"."+name, &n, ft)...)
		known.Content = append(known.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, &n)
	}
	if len(errs) > 0 {
		return k, nil, errs
	}
	if len(known.Content) > 0 {
		if _, none := cfg.(None); !none {
			if err := known.Decode(cfg); err != nil {
				return k, nil, []error{&FieldError{Path: at, Msg: err.Error()}}
			}
		}
	}
	return k, cfg, nil
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// unknownFields reports every mapping key under n (at path) that t, the
// Go type n decodes into, has no field for. A type with its own
// UnmarshalYAML checks its fields itself.
func unknownFields(path string, n *yaml.Node, t reflect.Type) []error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	var errs []error
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			if n.Content[i].Tag == "!!merge" { // `<<: *anchor`: its keys are this mapping's
				errs = append(errs, mergedFields(path, n.Content[i+1], t)...)
				continue
			}
			ft, ok := fieldType(t, key)
			if !ok {
				errs = append(errs, &FieldError{Path: path + "." + key, Msg: "unknown field"})
				continue
			}
			errs = append(errs, unknownFields(path+"."+key, n.Content[i+1], ft)...)
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			errs = append(errs, unknownFields(path+"["+strconv.Itoa(i)+"]", c, t.Elem())...)
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, unknownFields(path+"."+n.Content[i].Value, n.Content[i+1], t.Elem())...)
		}
	}
	return errs
}

// mergedFields is unknownFields over the mapping (or the sequence of
// mappings) a merge key brings in.
func mergedFields(path string, n *yaml.Node, t reflect.Type) []error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.SequenceNode {
		return unknownFields(path, n, t)
	}
	var errs []error
	for _, c := range n.Content {
		errs = append(errs, mergedFields(path, c, t)...)
	}
	return errs
}

// fieldType is the type of t's field that the YAML key name decodes into
// (inlined structs included); ok false when t takes no such key.
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		key, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			if ft, ok := fieldType(f.Type, name); ok {
				return ft, true
			}
			continue
		}
		if key == "" {
			key = strings.ToLower(f.Name)
		}
		if key == name {
			return f.Type, true
		}
	}
	return nil, false
}
