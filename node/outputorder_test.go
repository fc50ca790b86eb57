package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
)

// TestNodeOutputOrderTwoReaders: users and domains come from two Kafka
// topics, read by two nodes (n1 reads users, n2 reads domains), so one join
// key's inputs arrive at two nodes and its outputs are made by whichever of
// the two owns it. A consumer that applies the upsert topic in arrival
// order, as a KTable or a JDBC sink does, ignoring seq, must end equal to
// the true join: each key's owner writes its outputs to the shared Kafka
// sink (owner_writes), so they arrive in the order the key made them. When
// each reading node wrote the outputs of its own requests, the two nodes'
// writes of one key raced and the topic's last record of a row could be an
// older change (this test failed 2 runs in 3 that way).
func TestNodeOutputOrderTwoReaders(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "users", "domains", "joined"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	brokers := kc.ListenAddrs()
	rs := testutil.StartRedis(t)
	// Few keys, many changes: the two sides' changes of a key interleave.
	h := cdcgen.Generate(cdcgen.Config{Seed: 5, Users: 8, Domains: 24, Changes: 3000})
	byTable := map[string][][]byte{}
	for _, l := range h.Lines {
		var env struct {
			Source struct {
				Table string `json:"table"`
			} `json:"source"`
		}
		if err := json.Unmarshal(l, &env); err != nil {
			t.Fatal(err)
		}
		byTable[env.Source.Table] = append(byTable[env.Source.Table], l)
	}
	for _, table := range []string{"users", "domains"} {
		app, err := ingest.Kafka(brokers, table)
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Append(context.Background(), byTable[table]); err != nil {
			t.Fatal(err)
		}
		app.Close()
	}
	dir := t.TempDir()
	common := "name: order\n" + joinYAML + fmt.Sprintf(`state: {store: redis, redis: {addr: %q}}
sinks: [{type: kafka, kafka: {brokers: [%q], topic: joined}, format: upsert}]
`, rs.Addr, brokers[0])
	source := func(table, side string) string {
		return fmt.Sprintf("sources: [{name: %[1]s, type: kafka, kafka: {brokers: [%[3]q], topic: %[1]s, group: order-%[1]s}, tables: {%[1]s: %[2]s}}]\n",
			table, side, brokers[0])
	}
	n1 := start(t, parse(t, dir, common+source("users", "left")+"cluster: {node_name: n1}\n"))
	n2 := start(t, parse(t, dir, common+source("domains", "right")+fmt.Sprintf("cluster: {seeds: [%q], node_name: n2}\n", n1.GossipAddr())))
	for _, n := range []*node.Node{n1, n2} {
		testutil.WaitFor(t, 20*time.Second, seesAlive(n, 2))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, n := range []*node.Node{n1, n2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs <- err
			}
		}()
	}
	defer func() {
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("run: %v", err)
		}
	}()

	// The consumer: the upsert topic applied in arrival order, keyed by
	// the record key (the row's primary key), a tombstone deleting it.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("joined"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rows := map[string]string{}
	want := h.LeftJoin()
	last := time.Now()
	deadline := time.Now().Add(90 * time.Second)
	for {
		pctx, pcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			last = time.Now()
			if r.Value == nil {
				delete(rows, string(r.Key))
				return
			}
			_, _, v, err := changelog.DecodeUpsert(r.Value)
			if err != nil {
				t.Fatalf("record %q: %v", r.Value, err)
			}
			name := v["domain_name"]
			if name == nil {
				name = ""
			}
			rows[string(r.Key)] = fmt.Sprintf("%v,%v=%v|%v|%v", v["user_id"], v["domain_id"], v["firstname"], v["lastname"], name)
		})
		got := map[string]string{}
		for _, line := range rows {
			k, v, _ := strings.Cut(line, "=")
			got[strings.ReplaceAll(k, "<nil>", "null")] = v
		}
		// Equal, and no record for a while: every output is in.
		if reflect.DeepEqual(got, want) && time.Since(last) > 2*time.Second {
			return
		}
		if time.Now().After(deadline) {
			diff(t, "upsert topic applied in arrival order vs the true join", got, want)
			t.Fatalf("the upsert topic, applied in arrival order, is not the join after 90 s (%d rows, want %d)", len(got), len(want))
		}
	}
}
