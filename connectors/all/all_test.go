package all_test

import (
	"strings"
	"testing"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connectors/all"
)

// entry is a job entry's connector fields, as the job file would write
// them.
type entry map[string]any

// fields are e as the job hands them to the registry.
func fields(t *testing.T, e entry) connectors.Fields {
	t.Helper()
	f, err := connectors.FieldsOf(map[string]any(e))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// validator is the part of a table the test drives.
type validator interface {
	Validate(at, typ string, fields connectors.Fields, resolve func(string) string) []error
	Types() []string
	Role() string
}

// TestRegistryUnknownType checks that an unknown type names the field and
// lists every known type of the role.
func TestRegistryUnknownType(t *testing.T) {
	for _, tc := range []struct {
		tab  validator
		at   string
		want string
	}{
		{all.Sources, "sources[1]", `sources[1].type: must be file, redis-stream or kafka (got "ftp")`},
		{all.Sinks, "sinks[0]", `sinks[0].type: must be stdout, file, redis-stream, redis-hash, kafka or table (got "ftp")`},
		{all.DeadLetters, "dead_letter", `dead_letter.type: must be file, kafka or redis-stream (got "ftp")`},
	} {
		t.Run(tc.tab.Role(), func(t *testing.T) {
			errs := tc.tab.Validate(tc.at, "ftp", fields(t, entry{}), nil)
			if len(errs) != 1 || errs[0].Error() != tc.want {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
			var fe *connectors.FieldError
			if !asFieldError(errs[0], &fe) || fe.Path != tc.at+".type" {
				t.Errorf("error %v is not a FieldError at %s.type", errs[0], tc.at)
			}
		})
	}
}

func asFieldError(err error, fe **connectors.FieldError) bool {
	e, ok := err.(*connectors.FieldError)
	*fe = e
	return ok
}

// TestRegistryRequiredFields checks that each registered kind reports its
// required fields when they are missing, and nothing once they are set.
func TestRegistryRequiredFields(t *testing.T) {
	redis := map[string]any{"addr": "r:6379"}
	kafka := map[string]any{"brokers": []string{"k:9092"}, "topic": "t"}
	cases := []struct {
		tab     validator
		typ     string
		at      string
		good    entry
		missing []string // every error of entry{}, in order
	}{
		{all.Sources, "file", "sources[0]", entry{"path": "x.jsonl"}, []string{`sources[0].path: must be set for a file source ("-" for stdin)`}},
		{all.Sources, "redis-stream", "sources[0]", entry{"redis": redis, "stream": "s", "group": "g"}, []string{
			"sources[0].redis.addr: must be set for a redis-stream source",
			"sources[0].stream: must be set for a redis-stream source",
			"sources[0].group: must be set for a redis-stream source"}},
		{all.Sources, "kafka", "sources[1]", entry{"kafka": map[string]any{"brokers": []string{"k:9092"}, "topic": "t", "group": "g"}}, []string{
			"sources[1].kafka.brokers: must be set for a kafka source",
			"sources[1].kafka.topic: must be set for a kafka source",
			"sources[1].kafka.group: must be set for a kafka source"}},
		{all.Sinks, "stdout", "sinks[0]", entry{}, nil},
		{all.Sinks, "table", "sinks[0]", entry{}, nil},
		{all.Sinks, "file", "sinks[0]", entry{"path": "out.jsonl"}, []string{"sinks[0].path: must be set for a file sink"}},
		{all.Sinks, "redis-stream", "sinks[0]", entry{"redis": redis, "stream": "out"}, []string{
			"sinks[0].redis.addr: must be set for a redis-stream sink",
			"sinks[0].stream: must be set for a redis-stream sink"}},
		{all.Sinks, "redis-hash", "sinks[0]", entry{"redis": redis, "key": "h"}, []string{
			"sinks[0].redis.addr: must be set for a redis-hash sink",
			"sinks[0].key: must be set for a redis-hash sink"}},
		{all.Sinks, "kafka", "sinks[0]", entry{"kafka": kafka}, []string{
			"sinks[0].kafka.brokers: must be set for a kafka sink",
			"sinks[0].kafka.topic: must be set for a kafka sink"}},
		{all.DeadLetters, "file", "dead_letter", entry{"path": "dead.jsonl"}, []string{"dead_letter.path: must be set for a file dead-letter output"}},
		{all.DeadLetters, "kafka", "dead_letter", entry{"kafka": kafka}, []string{
			"dead_letter.kafka.brokers: must be set for a kafka dead-letter output",
			"dead_letter.kafka.topic: must be set for a kafka dead-letter output"}},
		{all.DeadLetters, "redis-stream", "dead_letter", entry{"redis": redis, "stream": "dlq"}, []string{
			"dead_letter.redis.addr: must be set for a redis-stream dead-letter output",
			"dead_letter.stream: must be set for a redis-stream dead-letter output"}},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.tab.Role()+"/"+tc.typ] = true
		t.Run(tc.tab.Role()+"/"+tc.typ, func(t *testing.T) {
			if errs := tc.tab.Validate(tc.at, tc.typ, fields(t, tc.good), nil); len(errs) != 0 {
				t.Errorf("a complete entry: %v", errs)
			}
			errs := tc.tab.Validate(tc.at, tc.typ, fields(t, entry{}), nil)
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.missing, "\n") {
				t.Errorf("an empty entry:\n got %q\nwant %q", got, tc.missing)
			}
		})
	}
	for _, tab := range []validator{all.Sources, all.Sinks, all.DeadLetters} {
		for _, typ := range tab.Types() {
			if !covered[tab.Role()+"/"+typ] {
				t.Errorf("%s kind %q has no case here", tab.Role(), typ)
			}
		}
	}
}

// TestRegistryIngest checks which sources HTTP ingest can feed: the kinds
// with an appender.
func TestRegistryIngest(t *testing.T) {
	got := all.Sources.Where(func(k connectors.SourceKind) bool { return k.Append != nil })
	if got != "redis-stream or kafka" {
		t.Errorf("appendable sources %q, want redis-stream or kafka", got)
	}
	if all.Ingest.Start == nil || all.Ingest.Type != "http" {
		t.Errorf("ingest endpoint %+v", all.Ingest)
	}
}

// TestRegistryDuplicatePanics checks that a table refuses a type listed
// twice (a table is a program constant: fail at start, not at a lookup).
func TestRegistryDuplicatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a duplicate type")
		}
	}()
	k := connectors.SinkKind{Type: "x", New: func() connectors.Config { return connectors.None{} }}
	connectors.NewTable("sink", k, k)
}
