package job

import (
	"strings"
	"testing"
	"time"

	sinkredis "github.com/joinery/joinery/sinks/redisstream"
	srckafka "github.com/joinery/joinery/sources/kafka"
	"github.com/joinery/joinery/sources/redisstream"
)

// parsePlan parses and compiles a job file's contents.
func parsePlan(t *testing.T, in string) *Plan {
	t.Helper()
	p, err := parse([]byte(in), "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestJobShards checks a sharded redis-stream source and sink parse, and
// that HTTP ingest refuses a sharded source (it appends to one stream).
func TestJobShards(t *testing.T) {
	sharded := strings.NewReplacer(
		"type: file, path: x.jsonl,", "type: redis-stream, redis: {addr: 'r:1'}, stream: cdc, group: g, shards: 16,",
		"{type: stdout}", "{type: redis-stream, redis: {addr: 'r:1'}, stream: out, shards: 4}").Replace(good)
	p := parsePlan(t, sharded)
	src, sink := p.Sources[0].Config.(*redisstream.Entry), p.Sinks[0].Config.(*sinkredis.Entry)
	if src.Shards != 16 || sink.Shards != 4 {
		t.Errorf("shards = %d, %d; want 16, 4", src.Shards, sink.Shards)
	}
	if p.KeyGroups() != 0 || p.Sources[0].KeyGroups != nil {
		t.Errorf("a source sharded by the primary key gives %d key groups (%+v), want none", p.KeyGroups(), p.Sources[0].KeyGroups)
	}
	withIngest := strings.Replace(sharded, "sinks:", "ingest: {addr: ':8080', source: cdc}\nsinks:", 1)
	_, err := Parse([]byte(withIngest))
	if err == nil || !strings.Contains(err.Error(), "ingest.source: must not name a sharded") {
		t.Errorf("ingest of a sharded source: err = %v", err)
	}
}

// TestJobRepartition checks a repartitioned source: its key groups place
// the job's keys, and its reader of the repartition streams is a join_key
// source on streamshard.RepartitionStream, trimmed, under its own name,
// with the raw source's other settings.
func TestJobRepartition(t *testing.T) {
	in := strings.Replace(good, "type: file, path: x.jsonl,",
		"type: redis-stream, redis: {addr: 'r:1'}, stream: cdc, group: g, shards: 16, repartition: stream, on_bad_input: skip,", 1)
	p := parsePlan(t, in)
	if got := p.KeyGroups(); got != 16 {
		t.Errorf("KeyGroups = %d, want 16", got)
	}
	raw := p.Sources[0]
	rp, ok := raw.RepartitionReader()
	if !ok {
		t.Fatal("no repartition reader")
	}
	r, rawCfg := rp.Config.(*redisstream.Entry), raw.Config.(*redisstream.Entry)
	for _, c := range []struct{ what, got, want string }{
		{"name", rp.Name, raw.Name + ":repart"},
		{"stream", r.Stream, "cdc:repart:g"},
		{"partitioned_by", r.PartitionedBy, redisstream.PartitionedByJoinKey},
		{"repartition", r.Repartition, ""},
		{"group", r.Group, "g"},
		{"on_bad_input", rp.OnBadInput, "skip"},
		{"redis", r.Redis.Addr, "r:1"},
		{"key groups by", rp.KeyGroups.Field, "partitioned_by"},
	} {
		if c.got != c.want {
			t.Errorf("repartition reader's %s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if !r.TrimAcked || r.Shards != 16 || rawCfg.TrimAcked || rawCfg.Stream != "cdc" {
		t.Errorf("repartition reader trims %v with %d shards (raw trims %v, reads %s); want true, 16 (false, cdc)", r.TrimAcked, r.Shards, rawCfg.TrimAcked, rawCfg.Stream)
	}
	if _, ok := rp.RepartitionReader(); ok {
		t.Error("the repartition reader repartitions again")
	}
	// The kind refuses it for an event-time join (connectors.Validator.EventTime).
	timed := strings.Replace(in, "type: cdc\n", "type: window\n  window: {type: tumbling, size: 1m}\n", 1)
	if _, err := Parse([]byte(timed)); err == nil || !strings.Contains(err.Error(), "sources[0].repartition: is for changelog (cdc) joins") {
		t.Errorf("repartition in an event-time job: err = %v", err)
	}
}

// TestJobKafkaKeyGroups checks that kafka sources partitioned by the join
// key parse, are listed by KeyGrouped (their partitions, counted at
// start, are the key groups) and leave KeyGroups at 0.
func TestJobKafkaKeyGroups(t *testing.T) {
	in := strings.Replace(good, "type: file, path: x.jsonl, tables: {users: left, domains: right}}",
		"type: kafka, kafka: {brokers: ['k:9092'], topic: u, group: g, partition_key: '{\"user_id\":{key}}'}, partitioned_by: join_key, tables: {users: left}}\n"+
			"  - {name: d, type: kafka, kafka: {brokers: ['k:9092'], topic: d, group: g, partition_key: '{\"user_id\":{key}}'}, partitioned_by: join_key, tables: {domains: right}}", 1)
	if in == good {
		t.Fatal("case did not change the input")
	}
	p := parsePlan(t, in)
	if got := p.KeyGroups(); got != 0 {
		t.Errorf("KeyGroups = %d, want 0 (kafka partitions are counted at start)", got)
	}
	var topics []string
	for _, sp := range p.KeyGrouped() {
		k := sp.Config.(*srckafka.Entry).Kafka
		topics = append(topics, k.Topic+"="+k.PartitionKey)
		if sp.Kind.KeyGroups == nil {
			t.Errorf("source %s: its kind cannot count its key groups", sp.Name)
		}
	}
	if want := `u={"user_id":{key}} d={"user_id":{key}}`; strings.Join(topics, " ") != want {
		t.Errorf("KeyGrouped = %v, want %s", topics, want)
	}
	// HTTP ingest writes no record key: it must not feed such a source.
	withIngest := strings.Replace(in, "sinks:", "ingest: {addr: ':8080', source: d}\nsinks:", 1)
	if _, err := Parse([]byte(withIngest)); err == nil || !strings.Contains(err.Error(), `ingest.source: must not name a kafka source partitioned by the join key ("d")`) {
		t.Errorf("ingest into a kafka join_key source: err = %v", err)
	}
}

// TestJobKafkaRevokeWait checks a kafka source's kafka.revoke_wait: a
// duration, decoded into its compiled configuration (unset: 0, the
// default), refused by its field when negative or not under the consumer
// group's rebalance timeout.
func TestJobKafkaRevokeWait(t *testing.T) {
	for _, tc := range []struct {
		setting string
		want    time.Duration
		bad     string // "": valid
	}{
		{"", 0, ""},
		{", revoke_wait: 2s", 2 * time.Second, ""},
		{", revoke_wait: 500ms", 500 * time.Millisecond, ""},
		{", revoke_wait: -1s", 0, "sources[0].kafka.revoke_wait: must not be negative (got -1s)"},
		{", revoke_wait: 30s", 0, "sources[0].kafka.revoke_wait: must be under the consumer group's rebalance timeout 30s (got 30s)"},
		{", revoke_wait: 5m", 0, "sources[0].kafka.revoke_wait: must be under the consumer group's rebalance timeout 30s (got 5m0s)"},
		{", revoke_wait: soon", 0, "cannot unmarshal !!str `soon` into time.Duration"},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			in := strings.Replace(good, "type: file, path: x.jsonl,",
				"type: kafka, kafka: {brokers: ['k:9092'], topic: t, group: g"+tc.setting+"},", 1)
			p, err := parse([]byte(in), "")
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("err = %v, want %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Sources[0].Config.(*srckafka.Entry).Kafka.RevokeWait; got != tc.want {
				t.Errorf("revoke_wait = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestJobKafkaSinkConsumerSettings: a kafka sink or dead-letter output
// refuses a source's consumer settings by their field, not silently.
func TestJobKafkaSinkConsumerSettings(t *testing.T) {
	for _, tc := range []struct {
		where, setting, bad string
	}{
		{"sink", "", ""},
		{"sink", ", group: g", "sinks[0].kafka.group: is a kafka source's consumer setting"},
		{"sink", ", start_offset: latest", "sinks[0].kafka.start_offset: is a kafka source's consumer setting"},
		{"sink", ", revoke_wait: 2s", "sinks[0].kafka.revoke_wait: is a kafka source's consumer setting"},
		{"dead letter", "", ""},
		{"dead letter", ", group: g", "dead_letter.kafka.group: is a kafka source's consumer setting"},
	} {
		t.Run(tc.where+tc.setting, func(t *testing.T) {
			out := "{type: kafka, kafka: {brokers: ['k:9092'], topic: t" + tc.setting + "}}"
			in := strings.Replace(good, "sinks:\n  - {type: stdout}", "sinks:\n  - "+out, 1)
			if tc.where == "dead letter" {
				in = strings.Replace(good, "sinks:", "dead_letter: "+out+"\nsinks:", 1)
			}
			_, err := Parse([]byte(in))
			if tc.bad == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Fatalf("err = %v, want %q", err, tc.bad)
			}
		})
	}
}
