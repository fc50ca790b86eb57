package node_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
)

// runUntil runs the node until the table equals want, then stops it.
func runUntil(t *testing.T, n interface {
	Run(context.Context) error
}, table func() map[string]string, want map[string]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	testutil.WaitFor(t, 60*time.Second, func() error {
		if got := table(); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("table has %d rows, want %d", len(got), len(want))
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
}

// TestNodeKafka reads Debezium events from a Kafka topic (franz-go's
// in-process kfake cluster) and writes the join to a Kafka topic and a
// Redis hash view.
func TestNodeKafka(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "cdc", "joined"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	brokers := kc.ListenAddrs()
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 9, Users: 20, Domains: 60, Changes: 600})
	app, err := ingest.Kafka(brokers, "cdc")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if err := app.Append(context.Background(), h.Lines); err != nil {
		t.Fatal(err)
	}
	n := start(t, parse(t, t.TempDir(), "name: kafka\n"+joinYAML+fmt.Sprintf(`
sources: [{name: cdc, type: kafka, kafka: {brokers: [%[1]q], topic: cdc, group: joinery}, tables: {users: left, domains: right}}]
sinks:
  - {type: kafka, kafka: {brokers: [%[1]q], topic: joined}, format: upsert}
  - {type: redis-hash, redis: {addr: %[2]q}, key: users_domains}
  - {type: table}
`, brokers[0], rs.Addr)))
	want := h.LeftJoin()
	runUntil(t, n, func() map[string]string { return tableMap(n.Table()) }, want)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	if got := rc.HLen(context.Background(), "users_domains").Val(); got != int64(len(want)) {
		t.Errorf("redis hash view has %d rows, want %d", got, len(want))
	}
}

// TestNodeHTTPIngest posts the example's Debezium records over HTTP (NDJSON)
// into a Redis Stream source: the POST is answered only once the records are
// in the stream, and the join result follows.
func TestNodeHTTPIngest(t *testing.T) {
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 13, Users: 15, Domains: 40, Changes: 300})
	n := start(t, parse(t, t.TempDir(), "name: http\n"+joinYAML+fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc-in, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: table}]
ingest: {addr: "127.0.0.1:0", source: cdc}
`, rs.Addr)))
	body := bytes.Join(h.Lines, []byte("\n"))
	resp, err := http.Post("http://"+n.IngestAddr()+"/ingest", "application/x-ndjson", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /ingest = %d, want 202", resp.StatusCode)
	}
	runUntil(t, n, func() map[string]string { return tableMap(n.Table()) }, h.LeftJoin())
}
