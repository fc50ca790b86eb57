package job

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/sinks/jsonl"
	sinkkafka "github.com/joinery/joinery/sinks/kafka"
	sinkredis "github.com/joinery/joinery/sinks/redisstream"
)

const good = `
name: users-domains
join:
  type: cdc
  mode: left
  left:  {name: users,   pk: id, join_on: id}
  right: {name: domains, pk: id, join_on: user_id}
  project:
    - {name: user_id, from: users.id}
sources:
  - {name: cdc, type: file, path: x.jsonl, tables: {users: left, domains: right}}
sinks:
  - {type: stdout}
`

func TestJobParseGood(t *testing.T) {
	s, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := s.CDCSpec()
	if err != nil {
		t.Fatal(err)
	}
	if cs.Left.JoinOn != "id" || cs.Right.JoinOn != "user_id" || len(cs.Project) != 1 {
		t.Errorf("spec = %+v", cs)
	}
}

// TestJobValidateNamesField checks that each bad field is reported by its path.
func TestJobValidateNamesField(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"name", "name: users-domains", "name: ''", "name:"},
		{"join type", "type: cdc", "type: nosuch", "join.type:"},
		{"join mode", "mode: left", "mode: sideways", "join.mode:"},
		{"left pk", "left:  {name: users,   pk: id, join_on: id}", "left:  {name: users, join_on: id}", "join.left.pk"},
		{"project from", "from: users.id", "from: nosuch.id", "join.project[0].from"},
		{"source type", "type: file, path", "type: ftp, path", "sources[0].type"},
		{"source path", "path: x.jsonl, ", "", "sources[0].path"},
		{"source side", "tables: {users: left, domains: right}", "tables: {users: up}", "sources[0].tables.users"},
		{"sink type", "{type: stdout}", "{type: printer}", "sinks[0].type"},
		{"sink format", "{type: stdout}", "{type: stdout, format: xml}", "sinks[0].format"},
		{"unknown field", "sinks:", "sinkz:", "field sinkz not found"},
		{"state store", "sinks:", "state: {store: etcd}\nsinks:", "state.store"},
		{"redis addr", "sinks:", "state: {store: redis}\nsinks:", "state.redis.addr"},
		{"seed", "sinks:", "cluster: {seeds: [nohostport]}\nsinks:", "cluster.seeds[0]"},
		{"cluster expect", "sinks:", "cluster: {expect: -1}\nsinks:", "cluster.expect: must not be negative"},
		{"cluster expect_wait", "sinks:", "cluster: {expect: 3, expect_wait: -1s}\nsinks:", "cluster.expect_wait: must not be negative"},
		{"on_bad_input", "path: x.jsonl,", "path: x.jsonl, on_bad_input: ignore,", "sources[0].on_bad_input"},
		{"on_truncate", "path: x.jsonl,", "path: x.jsonl, on_truncate: clear,", "sources[0].on_truncate"},
		{"max_record_bytes", "path: x.jsonl,", "path: x.jsonl, max_record_bytes: -1,", "sources[0].max_record_bytes"},
		{"dead letter type", "sinks:", "dead_letter: {type: s3}\nsinks:", "dead_letter.type"},
		{"dead letter path", "sinks:", "dead_letter: {type: file}\nsinks:", "dead_letter.path"},
		{"dead letter stream", "sinks:", "dead_letter: {type: redis-stream, redis: {addr: r:6379}}\nsinks:", "dead_letter.stream"},
		{"dead letter redis", "sinks:", "dead_letter: {type: redis-stream, stream: dlq}\nsinks:", "dead_letter.redis.addr"},
		{"dead letter topic", "sinks:", "dead_letter: {type: kafka, kafka: {brokers: [k:9092]}}\nsinks:", "dead_letter.kafka.topic"},
		{"dead letter brokers", "sinks:", "dead_letter: {type: kafka, kafka: {topic: dlq}}\nsinks:", "dead_letter.kafka.brokers"},
		{"redis-stream lease", "type: file, path: x.jsonl,", "type: redis-stream, redis: {addr: 'r:1'}, stream: s, group: g, lease: 10ms,", "sources[0].lease"},
		{"redis-stream shards", "type: file, path: x.jsonl,", "type: redis-stream, redis: {addr: 'r:1'}, stream: s, group: g, shards: -2,", "sources[0].shards: must be 0"},
		{"redis-stream too many shards", "type: file, path: x.jsonl,", "type: redis-stream, redis: {addr: 'r:1'}, stream: s, group: g, shards: 5000,", "sources[0].shards: must be 0"},
		{"file shards", "path: x.jsonl,", "path: x.jsonl, shards: 4,", "sources[0].shards: is only for a redis-stream source"},
		{"sink shards", "{type: stdout}", "{type: redis-stream, redis: {addr: 'r:1'}, stream: out, shards: -1}", "sinks[0].shards: must be 0"},
		{"stdout shards", "{type: stdout}", "{type: stdout, shards: 2}", "sinks[0].shards: is only for a redis-stream sink"},
		{"partitioned_by unknown", "type: file, path: x.jsonl,", "type: redis-stream, redis: {addr: 'r:1'}, stream: s, group: g, shards: 4, partitioned_by: user,", "sources[0].partitioned_by: must be pk or join_key"},
		{"partitioned_by join_key unsharded", "type: file, path: x.jsonl,", "type: redis-stream, redis: {addr: 'r:1'}, stream: s, group: g, partitioned_by: join_key,", "sources[0].partitioned_by: join_key needs a sharded source"},
		{"partitioned_by join_key shard counts differ", "type: file, path: x.jsonl, tables: {users: left, domains: right}}",
			"type: redis-stream, redis: {addr: 'r:1'}, stream: u, group: g, shards: 8, partitioned_by: join_key, tables: {users: left}}\n  - {name: d, type: redis-stream, redis: {addr: 'r:1'}, stream: d, group: g, shards: 4, partitioned_by: join_key, tables: {domains: right}}",
			// Co-partitioning is checked over the kinds' key groupings
			// (connectors.KeyGrouping), so its messages name key groups.
			`sources[1].partitioned_by: sources partitioned by the join key must be co-partitioned: "d" has 4 key groups, "cdc" 8`},
		{"repartition unknown", "type: file, path: x.jsonl,", "type: redis-stream, redis: {addr: 'r:1'}, stream: s, group: g, shards: 4, repartition: kafka,", "sources[0].repartition: must be stream"},
		{"repartition unsharded", "type: file, path: x.jsonl,", "type: redis-stream, redis: {addr: 'r:1'}, stream: s, group: g, repartition: stream,", "sources[0].repartition: stream needs a sharded redis-stream source"},
		{"repartition of a join_key source", "type: file, path: x.jsonl,", "type: redis-stream, redis: {addr: 'r:1'}, stream: s, group: g, shards: 4, partitioned_by: join_key, repartition: stream,", "sources[0].repartition: a join_key source is co-partitioned already"},
		{"repartition shard counts differ", "type: file, path: x.jsonl, tables: {users: left, domains: right}}",
			"type: redis-stream, redis: {addr: 'r:1'}, stream: u, group: g, shards: 8, partitioned_by: join_key, tables: {users: left}}\n  - {name: d, type: redis-stream, redis: {addr: 'r:1'}, stream: d, group: g, shards: 4, repartition: stream, tables: {domains: right}}",
			`sources[1].repartition: sources partitioned by the join key must be co-partitioned: "d" has 4 key groups, "cdc" 8`},
		{"kafka join_key without partition_key", "type: file, path: x.jsonl,", "type: kafka, kafka: {brokers: ['k:9092'], topic: t, group: g}, partitioned_by: join_key,", "sources[0].kafka.partition_key: is required with partitioned_by: join_key"},
		{"kafka partition_key without the key", "type: file, path: x.jsonl,", "type: kafka, kafka: {brokers: ['k:9092'], topic: t, group: g, partition_key: 'user'}, partitioned_by: join_key,", "sources[0].kafka.partition_key: must contain {key}"},
		{"kafka partition_key without join_key", "type: file, path: x.jsonl,", "type: kafka, kafka: {brokers: ['k:9092'], topic: t, group: g, partition_key: '{key}'},", "sources[0].kafka.partition_key: is only for a source with partitioned_by: join_key"},
		{"kafka join_key beside a sharded join_key source", "type: file, path: x.jsonl, tables: {users: left, domains: right}}",
			"type: redis-stream, redis: {addr: 'r:1'}, stream: u, group: g, shards: 8, partitioned_by: join_key, tables: {users: left}}\n  - {name: d, type: kafka, kafka: {brokers: ['k:9092'], topic: d, group: g, partition_key: '{key}'}, partitioned_by: join_key, tables: {domains: right}}",
			`sources[1].partitioned_by: sources partitioned by the join key must be co-partitioned: "d" follows Kafka's default partitioner over the record key "{key}", "cdc" the shards' FNV-1a`},
		{"kafka join_key partition keys differ", "type: file, path: x.jsonl, tables: {users: left, domains: right}}",
			"type: kafka, kafka: {brokers: ['k:9092'], topic: u, group: g, partition_key: '{\"id\":{key}}'}, partitioned_by: join_key, tables: {users: left}}\n  - {name: d, type: kafka, kafka: {brokers: ['k:9092'], topic: d, group: g, partition_key: '{\"user_id\":{key}}'}, partitioned_by: join_key, tables: {domains: right}}",
			`sources[1].partitioned_by: sources partitioned by the join key must be co-partitioned: "d" follows Kafka's default partitioner over the record key "{\"user_id\":{key}}", "cdc" Kafka's default partitioner over the record key "{\"id\":{key}}"`},
		{"dead letter unknown field", "sinks:", "dead_letter: {type: file, path: x, paht: y}\nsinks:", "dead_letter.paht: unknown field"},
		{"source unknown field", "path: x.jsonl,", "path: x.jsonl, filtr: 'x > 1',", "sources[0].filtr: unknown field"},
		{"kafka unknown field", "type: file, path: x.jsonl,", "type: kafka, kafka: {brokers: ['k:9092'], topc: t, group: g},", "sources[0].kafka.topc: unknown field"},
		{"sink unknown nested field", "{type: stdout}", "{type: redis-hash, redis: {addr: 'r:1', adr: x}, key: h}", "sinks[0].redis.adr: unknown field"},
		{"file partitioned_by", "path: x.jsonl,", "path: x.jsonl, partitioned_by: join_key,", "sources[0].partitioned_by: is only for a redis-stream or kafka source (this one is file)"},
		{"kafka repartition", "type: file, path: x.jsonl,", "type: kafka, kafka: {brokers: ['k:9092'], topic: t, group: g}, repartition: stream,", "sources[0].repartition: is only for a redis-stream source (this one is kafka)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := strings.Replace(good, c.from, c.to, 1)
			if in == good {
				t.Fatalf("case did not change the input")
			}
			_, err := Parse([]byte(in))
			if err == nil {
				t.Fatalf("no error for\n%s", in)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
		})
	}
}

// TestJobValidateReportsAll checks that several problems are reported at once.
func TestJobValidateReportsAll(t *testing.T) {
	in := strings.Replace(strings.Replace(good, "type: cdc", "type: x", 1), "{type: stdout}", "{type: y}", 1)
	_, err := Parse([]byte(in))
	if err == nil || !strings.Contains(err.Error(), "join.type") || !strings.Contains(err.Error(), "sinks[0].type") {
		t.Fatalf("want both join.type and sinks[0].type in %v", err)
	}
}

func FuzzJobParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("name: [\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err == nil && s.Validate() != nil {
			t.Fatalf("Parse accepted a spec Validate rejects")
		}
	})
}

func TestJobEnvOverrides(t *testing.T) {
	t.Setenv(EnvNodeName, "joinery-2")
	t.Setenv(EnvAdvertise, "10.1.2.3")
	t.Setenv(EnvSeeds, "a:7946, b:7946,")
	t.Setenv(EnvRedisAddr, "redis:6379")
	s, err := Parse([]byte(good + "state: {store: redis, redis: {addr: file:1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cluster
	if c.NodeName != "joinery-2" || c.Advertise != "10.1.2.3" || len(c.Seeds) != 2 || c.Seeds[1] != "b:7946" || s.State.Redis.Addr != "redis:6379" {
		t.Errorf("env not applied: %+v, redis %q", c, s.State.Redis.Addr)
	}
	t.Setenv(EnvSeeds, "nohostport")
	if _, err := Parse([]byte(good)); err == nil || !strings.Contains(err.Error(), "cluster.seeds[0]") {
		t.Errorf("bad seed from env not reported: %v", err)
	}
	t.Setenv(EnvSeeds, "")
	t.Setenv(EnvExpect, "3")
	if s, err := Parse([]byte(good + "cluster: {expect: 1}\n")); err != nil || s.Cluster.Expect != 3 {
		t.Errorf("%s=3 not applied over the file's 1: %v", EnvExpect, err)
	}
	t.Setenv(EnvExpect, "three")
	if _, err := Parse([]byte(good)); err == nil || !strings.Contains(err.Error(), "JOINERY_EXPECT must be a whole number") {
		t.Errorf("bad %s not reported: %v", EnvExpect, err)
	}
}

func TestJobTimedSpecs(t *testing.T) {
	base := `
name: ads
join:
  type: %s
  mode: %s
  left:  {name: visits, key: user, ts: ts}
  right: {name: ads,    key: user, ts: ts}
  window: {type: tumbling, size: 10s}
  lower: 0s
  upper: 2m
sources:
  - {name: v, type: file, path: v.jsonl, side: left, watermark: {max_out_of_orderness: 5s}}
`
	for _, c := range []struct{ typ, mode, wantErr string }{
		{"window", "inner", ""},
		{"window", "full", ""},
		{"interval", "inner", ""},
		{"interval", "left", "join.mode"},
		{"time-bounded", "left", ""},
		{"temporal", "left", ""},
		{"temporal", "full", "join.type"},
		{"time-bounded", "semi", ""},
		{"window", "semi", ""},
		{"interval", "semi", "join.mode"},
		{"temporal", "semi", "join.type"},
		{"time-bounded", "anti", "join.mode: must be inner, left, right, full or semi"},
	} {
		s, err := Parse([]byte(fmt.Sprintf(base, c.typ, c.mode)))
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s/%s: %v", c.typ, c.mode, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s/%s: error %v, want one naming %s", c.typ, c.mode, err, c.wantErr)
		case err == nil:
			f, _ := s.TimedFactory()
			if f() == nil || s.SourceFormat(s.Sources[0]) != "json" {
				t.Errorf("%s/%s: no machine or wrong default format", c.typ, c.mode)
			}
		}
	}
}

// TestJobBadInputFields checks the defaults and parsing of the bad-input
// fields and both forms of dead_letter.
func TestJobBadInputFields(t *testing.T) {
	s, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	src := s.Sources[0]
	if src.BadInputPolicy() != PolicyDeadLetter || src.TruncatePolicy() != PolicyDeadLetter ||
		src.RecordLimit() != DefaultMaxRecordBytes || !src.DedupOn() || s.DeadLetter.Enabled() {
		t.Errorf("defaults: %+v, dead letter %+v", src, s.DeadLetter)
	}
	// The dead-letter output's connector fields are decoded once, by its
	// kind, into the plan.
	for _, tc := range []struct {
		yaml, typ string
		want      connectors.Config // nil: no output
	}{
		{"dead_letter: dead.jsonl", "file", &jsonl.Entry{Path: "dead.jsonl"}},
		{"dead_letter: ''", "", nil},
		{"dead_letter: {type: file, path: d.jsonl}", "file", &jsonl.Entry{Path: "d.jsonl"}},
		{"dead_letter: {type: redis-stream, redis: {addr: 'r:1'}, stream: dlq}", "redis-stream", &sinkredis.Entry{RedisEntry: connectors.RedisEntry{Redis: Redis{Addr: "r:1"}}, Stream: "dlq"}},
		{"dead_letter: {type: kafka, kafka: {brokers: ['k:1'], topic: dlq}}", "kafka", &sinkkafka.Entry{KafkaEntry: connectors.KafkaEntry{Kafka: Kafka{Brokers: []string{"k:1"}, Topic: "dlq"}}}},
	} {
		in := strings.Replace(good, "path: x.jsonl,", "path: x.jsonl, on_bad_input: fail, on_truncate: ignore, max_record_bytes: 100, dedup: false,", 1) + tc.yaml + "\n"
		p, err := parse([]byte(in), "")
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		switch dl := p.DeadLetter; {
		case tc.want == nil && dl != nil:
			t.Errorf("%s: dead letter %+v, want none", tc.yaml, dl)
		case tc.want != nil && (dl == nil || dl.Type != tc.typ || !reflect.DeepEqual(dl.Config, tc.want)):
			t.Errorf("%s: dead letter %+v, want %s %+v", tc.yaml, dl, tc.typ, tc.want)
		}
		src := p.Spec.Sources[0]
		if src.BadInputPolicy() != PolicyFail || src.TruncatePolicy() != PolicyIgnore || src.RecordLimit() != 100 || src.DedupOn() {
			t.Errorf("%s: source %+v", tc.yaml, src)
		}
	}
}

// TestJobEnvRedisUsernameTLS: the Helm chart's redis.username and redis.tls
// reach state.redis through the environment.
func TestJobEnvRedisUsernameTLS(t *testing.T) {
	ca := testutil.WriteTLSFiles(t, t.TempDir()).CA
	t.Setenv(EnvRedisUsername, "joinery")
	t.Setenv(EnvRedisTLSCA, ca)
	s, err := Parse([]byte(good + "state: {store: redis, redis: {addr: redis:6379}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := s.State.Redis
	if r.Username != "joinery" || !r.TLS.Enabled || r.TLS.CAFile != ca {
		t.Errorf("state.redis = %+v, want username joinery and TLS with the CA file", r)
	}
	t.Setenv(EnvRedisTLSCA, "")
	t.Setenv(EnvRedisTLS, "true")
	s, err = Parse([]byte(good + "state: {store: redis, redis: {addr: redis:6379}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !s.State.Redis.TLS.Enabled || s.State.Redis.TLS.CAFile != "" {
		t.Errorf("JOINERY_REDIS_TLS=true: tls = %+v", s.State.Redis.TLS)
	}
}

// TestJobSemiProject: a left semi join outputs the left row only, so a
// projection of a right column is refused, naming the column.
func TestJobSemiProject(t *testing.T) {
	_, err := Parse([]byte(`
name: semi
join:
  type: time-bounded
  mode: semi
  left:  {name: visits, key: user, ts: ts}
  right: {name: ads, key: user, ts: ts}
  lower: 0s
  upper: 2m
  project: [{name: v, from: visits.id}, {name: a, from: ads.id}]
sources:
  - {name: v, type: file, path: v.jsonl, side: left}
`))
	if err == nil || !strings.Contains(err.Error(), "join.project[1].side: a left semi join outputs the left row only") {
		t.Errorf("semi with a right column: %v", err)
	}
}

// TestJobHalfBounded: open and ttl on time-bounded and unbounded joins,
// with clear errors for the nonsense.
func TestJobHalfBounded(t *testing.T) {
	base := `
name: half
join:
  type: %s
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  %s
sources:
  - {name: v, type: file, path: v.jsonl, side: left}
`
	for _, c := range []struct{ typ, fields, wantErr string }{
		{"time-bounded", "lower: 5s\n  open: upper\n  ttl: none", ""},
		{"time-bounded", "upper: -1ms\n  open: lower\n  ttl: 1h", ""},
		{"unbounded", "ttl: none", ""},
		{"unbounded", "ttl: 10m", ""},
		{"time-bounded", "lower: 5s\n  open: upper", "join.ttl: must be set with open: upper"},
		{"time-bounded", "upper: 5s\n  open: upper\n  ttl: none", "join.upper: must not be set with open: upper"},
		{"time-bounded", "upper: 5s\n  ttl: 1h", "join.ttl: only for unbounded joins and half-bounded time-bounded joins"},
		{"time-bounded", "open: sideways\n  ttl: 1h", "join.open: must be lower or upper"},
		{"time-bounded", "upper: -2h\n  open: lower\n  ttl: 1h", "join.ttl: must be at least -upper (7200000)"},
		{"interval", "upper: 1s\n  open: lower", "join.open: only for time-bounded joins"},
		{"unbounded", "ttl: never", "ttl: want a duration (10m) or none"},
		{"unbounded", "", "join.ttl: must be positive"},
	} {
		_, err := Parse([]byte(fmt.Sprintf(base, c.typ, c.fields)))
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s %q: %v", c.typ, c.fields, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s %q: error %v, want %q", c.typ, c.fields, err, c.wantErr)
		}
	}
}

// TestJobKafkaModes: temporal: {semantics: kafka} with grace and history
// on a temporal join (Kafka Streams' versioned KStream-KTable join) and
// cdc: {kinds: kafka} are accepted, and every bad combination is refused
// naming its field.
func TestJobKafkaModes(t *testing.T) {
	base := `
name: kafka
join:
  type: %s
  mode: left
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  %s
sources:
  - {name: v, type: file, path: v.jsonl, side: left}
`
	for _, c := range []struct{ typ, fields, wantErr string }{
		{"temporal", "temporal: {semantics: kafka, grace: 10ms, history: 5m}", ""},
		{"temporal", "temporal: {semantics: kafka, history: 1h}", ""},
		{"temporal", "temporal: {semantics: kafka, grace: 1h, history: 1h}", ""},
		{"temporal", "temporal: {semantics: kafka}", "join.temporal.history: required for type temporal with semantics kafka"},
		{"temporal", "temporal: {semantics: kafka, grace: 2s}", "join.temporal.history: required"},
		{"temporal", "temporal: {semantics: kafka, grace: 2h, history: 1h}", "join.temporal.grace: must not exceed temporal.history (2h0m0s > 1h0m0s)"},
		{"temporal", "temporal: {semantics: kafka, grace: -1ms, history: 1h}", "join.temporal.grace: must not be negative"},
		{"temporal", "temporal: {semantics: kafka, history: -1h}", "join.temporal.history: must not be negative"},
		{"temporal", "temporal: {semantics: kafka, grace: 1500us, history: 1h}", "join.temporal.grace: must be a whole number of milliseconds"},
		{"temporal", "temporal: {grace: 1s, history: 1h}", "join.temporal.grace: only for type temporal with semantics kafka"},
		{"temporal", "temporal: {semantics: flink, history: 1h}", "join.temporal.history: only for type temporal with semantics kafka"},
		{"temporal-latest", "temporal: {semantics: kafka, grace: 1s}", "join.temporal.grace: only for type temporal with semantics kafka"},
		{"temporal-latest", "temporal: {semantics: kafka, history: 1h}", "join.temporal.history: only for type temporal with semantics kafka"},
		{"interval", "upper: 1s\n  temporal: {semantics: kafka, history: 1h}", "join.temporal: only for temporal joins"},
		{"temporal", "temporal: {semantics: kafka, history: 1h}\n  cdc: {kinds: kafka}", "join.cdc: only for cdc joins"},
	} {
		s, err := Parse([]byte(fmt.Sprintf(base, c.typ, c.fields)))
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s %q: %v", c.typ, c.fields, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s %q: error %v, want %q", c.typ, c.fields, err, c.wantErr)
		case err == nil:
			f, _ := s.TimedFactory()
			if _, ok := f().(*joins.TemporalKafka); !ok {
				t.Errorf("%s %q: machine %T, want a *joins.TemporalKafka", c.typ, c.fields, f())
			}
			if !s.PadsNullKeys() {
				t.Errorf("%s %q: a left kafka join pads null-key probes (KIP-962)", c.typ, c.fields)
			}
		}
	}
	cdc := strings.Replace(good, "  mode: left\n", "  mode: left\n  cdc: {kinds: %s}\n", 1)
	for _, c := range []struct{ kinds, wantErr string }{
		{"kafka", ""},
		{"update", ""},
		{"flink", ""},
		{"spark", "join.cdc.kinds: must be update, flink or kafka (got \"spark\")"},
	} {
		s, err := Parse([]byte(fmt.Sprintf(cdc, c.kinds)))
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("kinds %s: %v", c.kinds, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("kinds %s: error %v, want %q", c.kinds, err, c.wantErr)
		case c.kinds == "kafka":
			if cs, err := s.CDCSpec(); err != nil || cs.Kinds != joins.KindsKafka {
				t.Errorf("kinds kafka: spec %+v, %v", cs, err)
			}
		}
	}
}
