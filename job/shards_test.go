package job

import (
	"strings"
	"testing"

	"github.com/joinery/joinery/sources/redisstream"
)

// TestJobShards checks a sharded redis-stream source and sink parse, and
// that HTTP ingest refuses a sharded source (it appends to one stream).
func TestJobShards(t *testing.T) {
	sharded := strings.NewReplacer(
		"type: file, path: x.jsonl,", "type: redis-stream, redis: {addr: 'r:1'}, stream: cdc, group: g, shards: 16,",
		"{type: stdout}", "{type: redis-stream, redis: {addr: 'r:1'}, stream: out, shards: 4}").Replace(good)
	s, err := Parse([]byte(sharded))
	if err != nil {
		t.Fatal(err)
	}
	if s.Sources[0].Shards != 16 || s.Sinks[0].Shards != 4 {
		t.Errorf("shards = %d, %d; want 16, 4", s.Sources[0].Shards, s.Sinks[0].Shards)
	}
	withIngest := strings.Replace(sharded, "sinks:", "ingest: {addr: ':8080', source: cdc}\nsinks:", 1)
	_, err = Parse([]byte(withIngest))
	if err == nil || !strings.Contains(err.Error(), "ingest.source: must not name a sharded") {
		t.Errorf("ingest of a sharded source: err = %v", err)
	}
	if MaxShards != redisstream.MaxShards {
		t.Errorf("job.MaxShards %d != redisstream.MaxShards %d", MaxShards, redisstream.MaxShards)
	}
}

// TestJobRepartition checks a repartitioned source: its key groups place
// the job's keys, and its reader of the repartition streams is a join_key
// source on streamshard.RepartitionStream, trimmed, under its own name,
// with the raw source's other settings.
func TestJobRepartition(t *testing.T) {
	in := strings.Replace(good, "type: file, path: x.jsonl,",
		"type: redis-stream, redis: {addr: 'r:1'}, stream: cdc, group: g, shards: 16, repartition: stream, on_bad_input: skip,", 1)
	s, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.KeyGroups(); got != 16 {
		t.Errorf("KeyGroups = %d, want 16", got)
	}
	raw := s.Sources[0]
	r := raw.RepartitionReader()
	for _, c := range []struct{ what, got, want string }{
		{"name", r.Name, raw.Name + ":repart"},
		{"stream", r.Stream, "cdc:repart:g"},
		{"partitioned_by", r.PartitionedBy, PartitionedByJoinKey},
		{"repartition", r.Repartition, ""},
		{"group", r.Group, "g"},
		{"on_bad_input", r.OnBadInput, "skip"},
		{"redis", r.Redis.Addr, "r:1"},
	} {
		if c.got != c.want {
			t.Errorf("repartition reader's %s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if !r.TrimAcked || r.Shards != 16 || raw.TrimAcked {
		t.Errorf("repartition reader trims %v with %d shards (raw trims %v); want true, 16 (false)", r.TrimAcked, r.Shards, raw.TrimAcked)
	}
}

// TestJobKafkaKeyGroups checks that kafka sources partitioned by the join
// key parse, are listed by KafkaKeyGroups (their partitions, counted at
// start, are the key groups) and leave KeyGroups at 0.
func TestJobKafkaKeyGroups(t *testing.T) {
	in := strings.Replace(good, "type: file, path: x.jsonl, tables: {users: left, domains: right}}",
		"type: kafka, kafka: {brokers: ['k:9092'], topic: u, group: g, partition_key: '{\"user_id\":{key}}'}, partitioned_by: join_key, tables: {users: left}}\n"+
			"  - {name: d, type: kafka, kafka: {brokers: ['k:9092'], topic: d, group: g, partition_key: '{\"user_id\":{key}}'}, partitioned_by: join_key, tables: {domains: right}}", 1)
	if in == good {
		t.Fatal("case did not change the input")
	}
	s, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.KeyGroups(); got != 0 {
		t.Errorf("KeyGroups = %d, want 0 (kafka partitions are counted at start)", got)
	}
	var topics []string
	for _, src := range s.KafkaKeyGroups() {
		topics = append(topics, src.Kafka.Topic+"="+src.Kafka.PartitionKey)
	}
	if want := `u={"user_id":{key}} d={"user_id":{key}}`; strings.Join(topics, " ") != want {
		t.Errorf("KafkaKeyGroups = %v, want %s", topics, want)
	}
	// HTTP ingest writes no record key: it must not feed such a source.
	withIngest := strings.Replace(in, "sinks:", "ingest: {addr: ':8080', source: d}\nsinks:", 1)
	if _, err := Parse([]byte(withIngest)); err == nil || !strings.Contains(err.Error(), `ingest.source: must not name a kafka source partitioned by the join key ("d")`) {
		t.Errorf("ingest into a kafka join_key source: err = %v", err)
	}
}
