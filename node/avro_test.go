package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/registryfake"
	"github.com/joinery/joinery/record"
)

// TestNodeKafkaDebeziumAvro is the Done-when test of debezium-avro sources:
// one users ⋈ domains history goes through Kafka (kfake) twice, as Debezium
// JSON and as Debezium Avro in the Confluent wire format with an in-process
// FAKE Schema Registry (internal/registryfake), each on a users and a
// domains topic; both jobs give the same joined table, equal to the
// history's true join. The Avro topics also carry a schema change mid-stream
// (domains gets an optional column: a new schema id), a tombstone, a record
// with an unknown schema id, one whose string is not UTF-8 and one that is
// not in the wire format (all dead-lettered with their reasons), and the registry is unreachable when
// the node starts: the source stalls and retries instead of dead-lettering.
// The job's Avro upsert sink folds to the same table, and a third copy of
// the topics in debezium-jsonschema (the header, then JSON) too.
func TestNodeKafkaDebeziumAvro(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "json.users", "json.domains", "avro.users", "avro.domains", "avro.joined", "jsch.users", "jsch.domains"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	brokers := kc.ListenAddrs()
	reg := registryfake.New()
	defer reg.Close()
	h := cdcgen.Generate(cdcgen.Config{Seed: 19, Users: 20, Domains: 60, Changes: 600})

	usersCols := []debeziumavro.Column{{Name: "id", Type: `"long"`}, {Name: "firstname", Type: `"string"`}, {Name: "lastname", Type: `"string"`, Optional: true}}
	domainsCols := []debeziumavro.Column{{Name: "id", Type: `"long"`}, {Name: "user_id", Type: `"long"`, Optional: true}, {Name: "domain_name", Type: `"string"`}}
	domainsV2Cols := append(append([]debeziumavro.Column(nil), domainsCols...), debeziumavro.Column{Name: "note", Type: `"string"`, Optional: true})
	encoder := func(subject, ns string, cols []debeziumavro.Column) *debeziumavro.Encoder {
		text := debeziumavro.EnvelopeSchema(ns, cols)
		s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
		if err != nil {
			t.Fatal(err)
		}
		return debeziumavro.NewEncoder(s, reg.Register(subject, registryfake.Schema{Schema: text}))
	}
	usersEnc := encoder("avro.users-value", "dbserver1.public.users", usersCols)
	domainsEnc := encoder("avro.domains-value", "dbserver1.public.domains", domainsCols)
	domainsV2Enc := encoder("avro.domains-value", "dbserver1.public.domains", domainsV2Cols)
	if domainsV2Enc.ID() == domainsEnc.ID() {
		t.Fatal("the evolved schema has the old id")
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx := context.Background()
	produce := func(topic string, value []byte) {
		t.Helper()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	domains := 0
	for i, line := range h.Lines {
		e, err := debezium.DecodeEnvelope(line, record.Position{})
		if err != nil {
			t.Fatal(err)
		}
		produce("json."+e.Table, line)
		produce("jsch."+e.Table, append([]byte{0, 0, 0, 0, 9}, line...)) // JsonSchemaConverter: header, then JSON
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		m["source"] = map[string]any{"version": "2.7.0.Final", "connector": "postgresql", "name": "dbserver1",
			"ts_ms": m["ts_ms"], "db": "app", "schema": "public", "table": e.Table}
		enc := usersEnc
		if e.Table == "domains" {
			enc = domainsEnc
			if domains++; domains > 100 { // schema evolution: later domains have a note
				enc = domainsV2Enc
				for _, row := range []string{"before", "after"} {
					if r, ok := m[row].(map[string]any); ok {
						r["note"] = fmt.Sprintf("n%d", i)
					}
				}
			}
		}
		b, err := enc.Encode(m)
		if err != nil {
			t.Fatalf("encode %s: %v", line, err)
		}
		produce("avro."+e.Table, b)
		if i == 300 {
			produce("avro.users", nil)                                           // a tombstone
			produce("avro.users", append([]byte{0, 0, 0, 0x7f, 0x7f}, b[5:]...)) // an unknown schema id
			bad, err := usersEnc.Encode(map[string]any{"op": "c", "ts_ms": 1, "source": m["source"],
				"after": map[string]any{"id": 999999, "firstname": "k\xff", "lastname": nil}}) // not UTF-8
			if err != nil {
				t.Fatal(err)
			}
			produce("avro.users", bad)
			produce("avro.domains", []byte(`{"op":"c","after":{"id":1,"user_id":1}}`)) // JSON on an Avro topic
		}
	}
	if domains <= 100 {
		t.Fatalf("only %d domains changes: no schema change mid-stream", domains)
	}

	run := func(format, prefix, extra, sinks string, started func()) ([][2]any, *testNode) {
		dir := t.TempDir()
		n := start(t, parse(t, dir, "name: "+prefix+"\n"+joinYAML+fmt.Sprintf(`
sources:
  - {name: users, type: kafka, format: %[1]s, kafka: {brokers: [%[2]q], topic: %[3]s.users, group: g}, side: left%[4]s}
  - {name: domains, type: kafka, format: %[1]s, kafka: {brokers: [%[2]q], topic: %[3]s.domains, group: g}, side: right%[4]s}
sinks: [{type: table}%[5]s]
dead_letter: dead.jsonl
`, format, brokers[0], prefix, extra, sinks)))
		started()
		want := h.LeftJoin()
		runUntil(t, n, func() map[string]string { return tableMap(n.Table()) }, want)
		var rows [][2]any
		for _, r := range n.Table() {
			rows = append(rows, [2]any{r.PK, map[string]any(r.Row)})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i][0].(string) < rows[j][0].(string) })
		return rows, &testNode{dead: filepath.Join(dir, "dead.jsonl"), retries: n.Stats().Retries.Load(), tombs: n.Stats().Tombs.Load()}
	}
	jsonRows, _ := run("debezium", "json", "", "", func() {})
	if jschRows, _ := run("debezium-jsonschema", "jsch", "", "", func() {}); !reflect.DeepEqual(jschRows, jsonRows) {
		t.Errorf("the debezium-jsonschema job's table differs from the JSON job's:\n %v\n %v", jschRows, jsonRows)
	}

	avroRows, an := run("debezium-avro", "avro", fmt.Sprintf(", schema_registry: {url: %q}", reg.URL()),
		fmt.Sprintf(", {type: kafka, format: upsert, encoding: avro, kafka: {brokers: [%q], topic: avro.joined}, schema_registry: {url: %q}}", brokers[0], reg.URL()),
		func() { // the sink registered its schema; the sources find the registry unreachable: they stall, retrying
			reg.SetDown(true)
			go func() {
				time.Sleep(2 * time.Second)
				reg.SetDown(false)
			}()
		})
	if !reflect.DeepEqual(avroRows, jsonRows) {
		t.Errorf("the Avro job's table differs from the JSON job's:\n avro %v\n json %v", avroRows, jsonRows)
	}
	if len(avroRows) == 0 {
		t.Fatal("empty join")
	}
	got := map[string]string{} // source -> reason
	for _, d := range readDeadFile(t, an.dead) {
		got[d.Source] += d.Reason
		if d.Error == "" || d.RawBase64 == "" && d.Raw == "" {
			t.Errorf("dead letter %+v without its error or bytes", d)
		}
	}
	if want := map[string]string{"users": debeziumavro.ReasonUnknownSchema + debezium.ReasonBadUTF8, "domains": debeziumavro.ReasonBadHeader}; !reflect.DeepEqual(got, want) {
		t.Errorf("dead letters by source %v, want %v", got, want)
	}
	// The Avro upsert topic, folded by key, is the table.
	cl, err := debeziumavro.NewClient(debeziumavro.ClientConfig{URLs: []string{reg.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	dec := debeziumavro.NewDecoder(cl)
	folded := map[string]any{}
	for _, r := range consumeAll(t, brokers, "avro.joined") {
		if r.Value == nil {
			delete(folded, string(r.Key))
			continue
		}
		v, err := dec.DecodeValue(ctx, r.Value)
		if err != nil {
			t.Fatal(err)
		}
		folded[string(r.Key)] = v.(map[string]any)["value"]
	}
	var sunk [][2]any
	for pk, v := range folded {
		sunk = append(sunk, [2]any{pk, v})
	}
	sort.Slice(sunk, func(i, j int) bool { return sunk[i][0].(string) < sunk[j][0].(string) })
	if !reflect.DeepEqual(sunk, avroRows) {
		t.Errorf("the Avro upsert topic folds to\n %v\nthe table is\n %v", sunk, avroRows)
	}
	if an.retries == 0 {
		t.Error("no retries while the registry was down")
	}
	if an.tombs != 1 {
		t.Errorf("tombstones %d, want 1", an.tombs)
	}
}

type testNode struct {
	dead           string
	retries, tombs int64
}
