package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/connopts/kafkaopts"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
)

// memAppender records appended values; it fails while err is set and blocks
// while block is open.
type memAppender struct {
	mu     sync.Mutex
	values []string
	err    error
	block  chan struct{}
	inside chan struct{}
}

func (m *memAppender) Append(ctx context.Context, values [][]byte) error {
	if m.block != nil {
		m.inside <- struct{}{}
		<-m.block
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	for _, v := range values {
		m.values = append(m.values, string(v))
	}
	return nil
}

func (m *memAppender) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.values...)
}

type answer struct {
	status int
	body   string
	header http.Header
}

func post(t *testing.T, h http.Handler, contentType, body string) answer {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/ingest", strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return answer{rec.Code, strings.TrimSpace(rec.Body.String()), rec.Header()}
}

func TestIngestConfigValidate(t *testing.T) {
	err := Config{MaxBodyBytes: -1, MaxInflight: -1}.Validate()
	for _, f := range []string{"Appender", "MaxBodyBytes", "MaxInflight"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate error %v does not name %s", err, f)
		}
	}
	if a := post(t, Handler(Config{}), ContentTypeJSON, "1"); a.status != http.StatusInternalServerError {
		t.Errorf("misconfigured handler answered %d", a.status)
	}
}

func TestIngestParsing(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		want                    []string
		errHas                  string
	}{
		{"one value", ContentTypeJSON, ` {"op":"c","after":{"id":1}} `, 202, []string{`{"op":"c","after":{"id":1}}`}, ""},
		{"array", "application/json; charset=utf-8", "[{\"a\":1},\n 2, \"x\", null]", 202, []string{`{"a":1}`, "2", `"x"`, "null"}, ""},
		{"empty array", ContentTypeJSON, `[]`, 202, nil, ""},
		{"ndjson", ContentTypeNDJSON, "{\"a\":1}\r\n\n  \n[1,2]\n\"s\"", 202, []string{`{"a":1}`, "[1,2]", `"s"`}, ""},
		{"empty ndjson", ContentTypeNDJSON, "\n\n", 202, nil, ""},
		{"bad json", ContentTypeJSON, "[\n{\"a\":1},\n{\"a\":}\n]", 400, nil, "line 3"},
		{"truncated json", ContentTypeJSON, "[\n1,", 400, nil, "line 2"},
		{"empty json", ContentTypeJSON, "", 400, nil, "line 1"},
		{"trailing data", ContentTypeJSON, "1\n2", 400, nil, "line 2"},
		{"bad ndjson", ContentTypeNDJSON, "{\"a\":1}\n\n{\"a\":1} 2\n", 400, nil, "line 3"},
		{"text", "text/plain", "1", 415, nil, "Content-Type"},
		{"no type", "", "1", 415, nil, "Content-Type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &memAppender{}
			a := post(t, Handler(Config{Appender: m}), tc.contentType, tc.body)
			if a.status != tc.status {
				t.Fatalf("status %d (%s), want %d", a.status, a.body, tc.status)
			}
			if tc.errHas != "" && !strings.Contains(a.body, tc.errHas) {
				t.Fatalf("body %s does not contain %q", a.body, tc.errHas)
			}
			if tc.status == 202 {
				var res struct{ Appended int }
				if err := json.Unmarshal([]byte(a.body), &res); err != nil || res.Appended != len(tc.want) {
					t.Fatalf("body %s, want appended %d", a.body, len(tc.want))
				}
			}
			if got := m.got(); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("appended %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIngestLimitsAndFailures(t *testing.T) {
	m := &memAppender{}
	h := Handler(Config{Appender: m, MaxBodyBytes: 10})
	if a := post(t, h, ContentTypeJSON, `"0123456789"`); a.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("over the limit: %d %s", a.status, a.body)
	}
	if a := post(t, h, ContentTypeJSON, `"01234567"`); a.status != http.StatusAccepted {
		t.Fatalf("at the limit: %d %s", a.status, a.body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "POST" {
		t.Fatalf("GET: %d allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	m.err = errors.New("log down")
	if a := post(t, h, ContentTypeJSON, `1`); a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || !strings.Contains(a.body, "log down") {
		t.Fatalf("failing appender: %d %s %v", a.status, a.body, a.header)
	}
	if got := m.got(); len(got) != 1 {
		t.Fatalf("appended %q", got)
	}
}

func TestIngestBackpressure(t *testing.T) {
	m := &memAppender{block: make(chan struct{}), inside: make(chan struct{}, 2)}
	h := Handler(Config{Appender: m, MaxInflight: 2})
	var wg sync.WaitGroup
	answers := make([]answer, 2)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = post(t, h, ContentTypeJSON, `1`)
		}()
	}
	<-m.inside
	<-m.inside // two requests are appending
	a := post(t, h, ContentTypeJSON, `1`)
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "1" {
		t.Fatalf("third request: %d %s retry-after %q", a.status, a.body, a.header.Get("Retry-After"))
	}
	close(m.block)
	wg.Wait()
	for _, a := range answers {
		if a.status != http.StatusAccepted {
			t.Fatalf("blocked request: %d %s", a.status, a.body)
		}
	}
	m.block = nil
	if a := post(t, h, ContentTypeJSON, `1`); a.status != http.StatusAccepted {
		t.Fatalf("after the backlog: %d %s", a.status, a.body)
	}
}

func TestIngestRedisStream(t *testing.T) {
	r := testutil.StartRedis(t)
	app, err := RedisStream(r.Addr, "users", RedisDB(1))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	srv := httptest.NewServer(Handler(Config{Appender: app}))
	defer srv.Close()
	body := "{\"op\":\"c\",\"after\":{\"id\":1}}\n{\"op\":\"d\",\"before\":{\"id\":1}}\n"
	resp, err := http.Post(srv.URL, ContentTypeNDJSON, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || !bytes.Contains(b, []byte(`"appended":2`)) {
		t.Fatalf("answer %d %s", resp.StatusCode, b)
	}
	admin := redis.NewClient(&redis.Options{Addr: r.Addr, DB: 1})
	defer admin.Close()
	entries := admin.XRange(context.Background(), "users", "-", "+").Val()
	if len(entries) != 2 || entries[0].Values[streamshard.ValueField] != `{"op":"c","after":{"id":1}}` || entries[1].Values[streamshard.ValueField] != `{"op":"d","before":{"id":1}}` {
		t.Fatalf("stream = %v", entries)
	}

	// Redis down: 503.
	r.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("1"))
	req.Header.Set("Content-Type", ContentTypeJSON)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("redis down: %d", resp.StatusCode)
	}
	if _, err := RedisStream("", "", RedisDB(-1), RedisMaxLen(-1)); err == nil || !strings.Contains(err.Error(), "RedisDB") {
		t.Fatalf("RedisStream with bad options: %v", err)
	}
}

func TestIngestKafka(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "users"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	app, err := Kafka(c.ListenAddrs(), "users")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	h := Handler(Config{Appender: app})
	if a := post(t, h, ContentTypeJSON, `[{"id":1},{"id":2},{"id":3}]`); a.status != http.StatusAccepted || a.body != `{"appended":3}` {
		t.Fatalf("answer %d %s", a.status, a.body)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("users"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for len(got) < 3 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	if strings.Join(got, ",") != `{"id":1},{"id":2},{"id":3}` {
		t.Fatalf("topic holds %q", got)
	}
	if _, err := Kafka(nil, "", KafkaSASL(&saslNoUser)); err == nil || !strings.Contains(err.Error(), "SASL.User") {
		t.Fatalf("Kafka with bad options: %v", err)
	}
}

var saslNoUser = kafkaopts.SASL{Mechanism: kafkaopts.MechanismPlain}

// TestIngestToken: with a token, the Bearer scheme in any case carries it;
// no header, a wrong token, another scheme and a bare token (which the
// handler used to accept) are 401 and append nothing.
func TestIngestToken(t *testing.T) {
	app := &memAppender{}
	h := Handler(Config{Appender: app, Token: "1ngest"})
	for _, c := range []struct {
		auth   string
		status int
	}{
		{"", 401},
		{"Bearer wrong", 401},
		{"Basic 1ngest", 401},
		{"1ngest", 401},
		{"Bearer1ngest", 401},
		{"Bearer 1ngest", 202},
		{"bearer 1ngest", 202},
		{"BEARER  1ngest", 202},
	} {
		req := httptest.NewRequest(http.MethodPost, "/ingest", strings.NewReader(`{"a":1}`))
		req.Header.Set("Content-Type", ContentTypeJSON)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Errorf("Authorization %q: %d %s, want %d", c.auth, rec.Code, rec.Body, c.status)
		}
		if c.status == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: 401 without WWW-Authenticate: Bearer", c.auth)
		}
	}
	if got := len(app.got()); got != 3 {
		t.Errorf("%d records appended, want 3 (one per accepted request)", got)
	}
}
