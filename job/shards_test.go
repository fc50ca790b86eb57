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
