package kafka

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/internal/registryfake"
	"github.com/joinery/joinery/internal/testutil"
)

// TestKafkaSinkAvro: with Avro, the sink registers its schema under
// <topic>-value on start (once: a restart reuses the id) and writes values
// in the Confluent wire format that decode to the changelog lines; a
// registry that cannot be reached fails New.
func TestKafkaSinkAvro(t *testing.T) {
	brokers := testutil.StartKafka(t, 1, "out")
	reg := registryfake.New(registryfake.WithAuth("Bearer tok"))
	defer reg.Close()
	ctx := context.Background()
	cfg := Config{Brokers: brokers, Topic: "out", Avro: &Avro{
		Registry: debeziumavro.ClientConfig{URLs: []string{reg.URL()}, Token: "tok"}, Name: "users-domains", Columns: []string{"id", "d"}}}
	for range 2 {
		s, err := New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	versions := reg.Subject("out-value")
	if len(versions) != 1 || !strings.Contains(versions[0].Schema, `"name":"Change","namespace":"joinery.users_domains"`) {
		t.Fatalf("subject out-value has %d versions: %v", len(versions), versions)
	}
	cl, err := sr.NewClient(sr.URLs(reg.URL()), sr.BearerToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	dec := debeziumavro.NewDecoder(cl)
	rs := consume(t, brokers, "out", 2*len(batch))
	for i, r := range rs {
		o := batch[i%len(batch)]
		if string(r.Key) != o.PK || header(r, IDHeader) != o.ID {
			t.Fatalf("record %d key %s id %s, want %s %s", i, r.Key, header(r, IDHeader), o.PK, o.ID)
		}
		if len(r.Value) < 5 || r.Value[0] != 0 || binary.BigEndian.Uint32(r.Value[1:5]) != 1 {
			t.Fatalf("record %d is not framed with schema id 1: % x", i, r.Value[:min(5, len(r.Value))])
		}
		got, err := dec.DecodeValue(ctx, r.Value)
		if err != nil {
			t.Fatal(err)
		}
		line, _, _ := changelog.Changelog.Marshal(o)
		var want map[string]any
		d := json.NewDecoder(strings.NewReader(string(line)))
		d.UseNumber()
		if err := d.Decode(&want); err != nil {
			t.Fatal(err)
		}
		want["ts"], want["seq"] = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("record %d decodes to %v, want %v", i, got, want)
		}
	}

	reg.SetDown(true)
	if _, err := New(ctx, cfg); err == nil || !strings.Contains(err.Error(), "register the Avro schema under subject out-value") {
		t.Errorf("New with the registry down = %v", err)
	}
}
