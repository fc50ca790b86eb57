package kafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/record"
	sinkkafka "github.com/joinery/joinery/sinks/kafka"
	"github.com/joinery/joinery/sources"
	"github.com/joinery/joinery/sources/kafka"
)

// kcat returns the path of kcat (Debian package kcat). Without it the test
// fails in CI (CI=true) and is skipped elsewhere.
func kcat(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kcat not found in PATH and CI=true: install it (Debian: apt-get install kcat)")
		}
		t.Skip("kcat not found in PATH: install it (Debian: apt-get install kcat) to run this interoperability test")
	}
	return path
}

func runKcat(t *testing.T, bin string, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

// TestKafkaKcatRoundTrip checks interoperability with librdkafka through
// kcat: Debezium lines produced by kcat are read by the source, and what the
// sink writes is consumed by kcat.
func TestKafkaKcatRoundTrip(t *testing.T) {
	bin := kcat(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "users", "joined"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0] // 127.0.0.1:port
	lines := []string{
		`{"op":"c","before":null,"after":{"id":1,"name":"ann"},"ts_ms":1}`,
		`{"op":"u","before":{"id":1,"name":"ann"},"after":{"id":1,"name":"bob"},"ts_ms":2}`,
		`{"op":"d","before":{"id":1,"name":"bob"},"after":null,"ts_ms":3}`,
	}
	runKcat(t, bin, strings.Join(lines, "\n")+"\n", "-P", "-b", addr, "-t", "users")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	src, err := kafka.New(ctx, kafka.Config{Brokers: []string{addr}, Topic: "users", Group: "joinery"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var msgs []sources.Message
	for len(msgs) < len(lines) {
		got, err := src.Read(ctx, 10)
		if err != nil {
			t.Fatalf("Read after %d messages: %v", len(msgs), err)
		}
		msgs = append(msgs, got...)
	}
	for i, m := range msgs {
		if string(m.Value) != lines[i] || m.Pos != (record.Position{Source: "users", Partition: 0, Offset: int64(i)}) {
			t.Fatalf("message %d = %v %s, want offset %d %s", i, m.Pos, m.Value, i, lines[i])
		}
	}
	if err := src.Commit(ctx, []record.Position{msgs[len(msgs)-1].Pos}); err != nil {
		t.Fatal(err)
	}

	// The sink writes one output per event; kcat reads them back.
	sink, err := sinkkafka.New(ctx, sinkkafka.Config{Brokers: []string{addr}, Topic: "joined"})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	var outs []record.Output
	var want []string
	for i, m := range msgs {
		var ev struct {
			After record.Row `json:"after"`
		}
		if err := json.Unmarshal(m.Value, &ev); err != nil {
			t.Fatal(err)
		}
		kind := []record.Kind{record.Insert, record.UpdateAfter, record.Delete}[i]
		o := record.Output{ID: m.Pos.String() + "/1/0/0", Kind: kind, PK: "[1,null]", Row: ev.After}
		outs = append(outs, o)
		line, _, err := changelog.Changelog.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, "[1,null]\t"+string(line))
	}
	if err := sink.Write(ctx, outs); err != nil {
		t.Fatal(err)
	}
	got := runKcat(t, bin, "", "-C", "-b", addr, "-t", "joined", "-e", "-o", "beginning", "-f", "%k\t%s\n")
	if strings.TrimSpace(got) != strings.Join(want, "\n") {
		t.Fatalf("kcat consumed\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}
