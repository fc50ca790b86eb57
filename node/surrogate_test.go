package node_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/internal/testutil"
)

// loneSurrogateUsers are two users whose ids escape different unpaired
// UTF-16 surrogates. encoding/json reads both ids as "\uFFFDk", so without
// the bad-utf8 check the second user would overwrite the first.
var loneSurrogateUsers = [][]byte{
	[]byte(`{"op":"c","after":{"id":"\ud800k","firstname":"First","lastname":"High"},"source":{"table":"users","lsn":1}}`),
	[]byte(`{"op":"c","after":{"id":"\udbffk","firstname":"Second","lastname":"High"},"source":{"table":"users","lsn":2}}`),
}

// goodAfterSurrogates follow them: a user whose id escapes a valid pair
// and one whose id spells "\ud800k" with an escaped backslash (not an
// escape), each with a domain.
var goodAfterSurrogates = [][]byte{
	[]byte(`{"op":"c","after":{"id":"\ud83d\ude00","firstname":"Pair","lastname":"Ok"},"source":{"table":"users","lsn":3}}`),
	[]byte(`{"op":"c","after":{"id":"\\ud800k","firstname":"Text","lastname":"Ok"},"source":{"table":"users","lsn":4}}`),
	[]byte(`{"op":"c","after":{"id":1,"user_id":"\ud83d\ude00","domain_name":"Emoji"},"source":{"table":"domains","lsn":5}}`),
	[]byte(`{"op":"c","after":{"id":2,"user_id":"\\ud800k","domain_name":"Backslash"},"source":{"table":"domains","lsn":6}}`),
}

var goodAfterSurrogatesWant = map[string]string{
	"\U0001F600,1": "Pair|Ok|Emoji",
	`\ud800k,2`:    "Text|Ok|Backslash",
}

// TestNodeLoneSurrogatesDeadLettered sends the two users through a file,
// a Redis stream (a real redis-server) and a Kafka topic (kfake): both are
// dead-lettered as bad-utf8 with their raw bytes, neither reaches the
// join, and the records after them (a surrogate pair, an escaped
// backslash) are joined under their own keys.
func TestNodeLoneSurrogatesDeadLettered(t *testing.T) {
	records := append(append([][]byte{}, loneSurrogateUsers...), goodAfterSurrogates...)
	for _, kind := range []string{"file", "redis-stream", "kafka"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			var src string
			var app ingest.Appender
			switch kind {
			case "file":
				writeLines(t, filepath.Join(dir, "in.jsonl"), records)
				src = "{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}"
			case "redis-stream":
				rs := testutil.StartRedis(t)
				a, err := ingest.RedisStream(rs.Addr, "cdc-in")
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				app = a
				src = fmt.Sprintf("{name: cdc, type: redis-stream, redis: {addr: %q}, stream: cdc-in, group: joinery, tables: {users: left, domains: right}}", rs.Addr)
			case "kafka":
				kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "cdc"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(kc.Close)
				a, err := ingest.Kafka(kc.ListenAddrs(), "cdc")
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				app = a
				src = fmt.Sprintf("{name: cdc, type: kafka, kafka: {brokers: [%q], topic: cdc, group: joinery}, tables: {users: left, domains: right}}", kc.ListenAddrs()[0])
			}
			if app != nil {
				if err := app.Append(context.Background(), records); err != nil {
					t.Fatal(err)
				}
			}
			n := start(t, parse(t, dir, "name: surrogates\n"+joinYAML+"sources: ["+src+"]\nsinks: [{type: table}]\ndead_letter: dead.jsonl\n"))
			want := []string{"1:bad-utf8", "2:bad-utf8"}
			dead := func() []string {
				var got []string
				for i, r := range readDeadFile(t, filepath.Join(dir, "dead.jsonl")) {
					raw, _ := r.Bytes()
					if !strings.Contains(r.Error, "surrogate") || string(raw) != string(loneSurrogateUsers[min(i, 1)]) {
						t.Errorf("dead letter %d: %+v, want the raw record and an error naming the surrogate", i, r)
					}
					got = append(got, fmt.Sprintf("%d:%s", i+1, r.Reason))
				}
				return got
			}
			if kind == "file" {
				run(t, n)
			} else {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- n.Run(ctx) }()
				testutil.WaitFor(t, 60*time.Second, func() error {
					if got := tableMap(n.Table()); !reflect.DeepEqual(got, goodAfterSurrogatesWant) {
						return fmt.Errorf("table %v", got)
					}
					if got := dead(); len(got) < len(want) {
						return fmt.Errorf("dead letters %v", got)
					}
					return nil
				})
				cancel()
				if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
					t.Fatalf("run: %v", err)
				}
			}
			diff(t, kind, tableMap(n.Table()), goodAfterSurrogatesWant)
			if got := dead(); !reflect.DeepEqual(got, want) {
				t.Errorf("dead letters %v, want %v", got, want)
			}
			if c := n.Stats().BadBySource()["cdc"]["bad-utf8"]; c != 2 {
				t.Errorf("bad-utf8 count of source cdc = %d, want 2", c)
			}
		})
	}
}

// TestNodeIngestLoneSurrogates posts the two users to HTTP ingest, one
// request each and both in one request: every request is refused with 400
// and reason bad-utf8 naming the record, nothing reaches the stream, and
// each refusal is counted.
func TestNodeIngestLoneSurrogates(t *testing.T) {
	rs := testutil.StartRedis(t)
	n := start(t, parse(t, t.TempDir(), "name: surrogates\n"+joinYAML+fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc-in, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: table}]
ingest: {addr: "127.0.0.1:0", source: cdc}
admin: {addr: "127.0.0.1:0"}
`, rs.Addr)))
	base := portURL(t, n.IngestAddr())
	for _, c := range []struct {
		body   string
		record string
	}{
		{string(loneSurrogateUsers[0]), `"record":1`},
		{string(loneSurrogateUsers[1]), `"record":1`},
		{string(goodAfterSurrogates[0]) + "\n" + string(loneSurrogateUsers[1]), `"record":2`},
	} {
		code, body := do(t, "POST", base+"/ingest", "", []byte(c.body))
		if code != http.StatusBadRequest || !strings.Contains(body, `"reason":"bad-utf8"`) || !strings.Contains(body, c.record) || !strings.Contains(body, "surrogate") {
			t.Errorf("POST %s = %d %s, want 400 bad-utf8 with %s", c.body, code, body, c.record)
		}
	}
	_, metrics := do(t, "GET", "http://"+n.AdminAddr()+"/metrics", "", nil)
	if want := `joinery_rejected_total{job="surrogates",reason="bad-utf8",source="cdc"} 3`; !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s", want)
	}
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	if l, err := rc.XLen(context.Background(), "cdc-in").Result(); err != nil || l != 0 {
		t.Errorf("stream holds %d entries (%v), want 0", l, err)
	}
}
