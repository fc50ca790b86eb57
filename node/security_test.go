package node_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
)

// portURL is base for a server bound to addr (0.0.0.0 or 127.0.0.1), reached
// over 127.0.0.1.
func portURL(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return "http://127.0.0.1:" + port
}

func do(t *testing.T, method, url, token string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-ndjson")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestNodeAdminSecurity runs the example on a real Redis with the admin
// server bound to 0.0.0.0 (off loopback by its configured address) and
// calls it over 127.0.0.1: reads need a token, a read token cannot act, a
// long key is 414, and inspecting keys that do not exist creates no epoch
// key in Redis and no actor.
func TestNodeAdminSecurity(t *testing.T) {
	rs := testutil.StartRedis(t)
	spec, err := job.Load("../examples/users-domains/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec.Sources[0].Rate = 0
	spec.State = job.State{Store: "redis", Redis: job.Redis{Addr: rs.Addr}}
	spec.Admin = job.Admin{Addr: "0.0.0.0:0", Token: "4dm1n", AdminSecurity: job.AdminSecurity{ReadToken: "r34d"}}
	n := start(t, spec)
	run(t, n)
	base := portURL(t, n.AdminAddr())
	jobURL := base + "/v1/jobs/users-domains"

	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/v1/members", "", 401},
		{"GET", "/v1/jobs/users-domains/keys/1", "", 401},
		{"GET", "/v1/jobs/users-domains/hot", "", 401},
		{"GET", "/v1/jobs/users-domains/keys/1", "wrong", 401},
		{"GET", "/v1/jobs/users-domains/keys/1", "r34d", 200},
		{"POST", "/v1/jobs/users-domains/keys/1/passivate", "r34d", 403},
		{"GET", "/v1/jobs/users-domains/keys/" + strings.Repeat("x", 2000), "r34d", 414},
		{"GET", "/healthz", "", 200},
	} {
		if code, body := do(t, c.method, base+c.path, c.token, nil); code != c.want {
			t.Errorf("%s %s (token %q) = %d, want %d: %s", c.method, c.path, c.token, code, c.want, body)
		}
	}

	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	ctx := context.Background()
	keysBefore, err := rc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	active := func() int {
		_, body := do(t, "GET", base+"/v1/members", "r34d", nil)
		var ms []struct {
			Self       bool `json:"self"`
			KeysActive int  `json:"keys_active"`
		}
		if err := json.Unmarshal([]byte(body), &ms); err != nil || len(ms) != 1 {
			t.Fatalf("members: %s (%v)", body, err)
		}
		return ms[0].KeysActive
	}
	activeBefore := active()
	for i := range 50 {
		code, body := do(t, "GET", fmt.Sprintf("%s/keys/missing-%d", jobURL, i), "r34d", nil)
		if code != 404 {
			t.Fatalf("inspect of a missing key = %d %s, want 404", code, body)
		}
		if code, _ := do(t, "GET", fmt.Sprintf("%s/keys/missing-%d/why", jobURL, i), "r34d", nil); code != 404 {
			t.Fatalf("why of a missing key = %d, want 404", code)
		}
	}
	keysAfter, err := rc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var created []string
	seen := map[string]bool{}
	for _, k := range keysBefore {
		seen[k] = true
	}
	for _, k := range keysAfter {
		if !seen[k] {
			created = append(created, k)
		}
	}
	if len(created) > 0 {
		t.Errorf("inspecting 50 missing keys created %d Redis keys, e.g. %q", len(created), created[0])
	}
	if a := active(); a != activeBefore {
		t.Errorf("inspecting 50 missing keys changed the active actors from %d to %d", activeBefore, a)
	}
	// A key with state still answers.
	if code, body := do(t, "GET", jobURL+"/keys/1", "r34d", nil); code != 200 || !strings.Contains(body, "Myasnikov") {
		t.Errorf("inspect key 1 = %d %s", code, body)
	}
}

// TestNodeIngestSlowBodyFlood opens 64 connections (the in-flight limit)
// that send an ingest POST's headers and never its body: a real POST still
// gets 202, because the body is read before a slot is taken (it got 429
// while they were open). The flood is answered 408 after body_timeout.
// Also: the token is required, and a record with a duplicate field or
// invalid UTF-8 is refused with its reason and appends nothing.
func TestNodeIngestSlowBodyFlood(t *testing.T) {
	rs := testutil.StartRedis(t)
	n := start(t, parse(t, t.TempDir(), "name: flood\n"+joinYAML+fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc-in, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: table}]
ingest: {addr: "0.0.0.0:0", source: cdc, token: "1ngest", max_inflight: 64, body_timeout: 3s}
admin: {addr: "127.0.0.1:0"}
`, rs.Addr)))
	base := portURL(t, n.IngestAddr())
	addr := strings.TrimPrefix(base, "http://")
	var flood []net.Conn
	for range 64 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /ingest HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer 1ngest\r\nContent-Type: application/x-ndjson\r\nContent-Length: 100000\r\n\r\n{")
		flood = append(flood, c)
	}
	time.Sleep(300 * time.Millisecond) // let the server take every one of them in

	rec := []byte(`{"op":"c","source":{"table":"users"},"after":{"id":1,"firstname":"A"}}`)
	start := time.Now()
	if code, body := do(t, "POST", base+"/ingest", "1ngest", rec); code != http.StatusAccepted {
		t.Fatalf("POST during the flood = %d %s, want 202", code, body)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("POST during the flood took %v", d)
	}
	for _, c := range []struct {
		token, body, want string
		code              int
	}{
		{"", string(rec), "token", 401},
		{"wrong", string(rec), "token", 401},
		{"1ngest", `{"op":"c","source":{"table":"users"},"after":{"id":1,"id":2}}`, `"reason":"duplicate-field"`, 400},
		{"1ngest", "{\"op\":\"c\",\"source\":{\"table\":\"users\"},\"after\":{\"id\":\"\xff\"}}", `"reason":"bad-utf8"`, 400},
	} {
		code, body := do(t, "POST", base+"/ingest", c.token, []byte(c.body))
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("POST %q (token %q) = %d %s, want %d with %s", c.body, c.token, code, body, c.code, c.want)
		}
	}
	_, metrics := do(t, "GET", "http://"+n.AdminAddr()+"/metrics", "", nil)
	for _, reason := range []string{"duplicate-field", "bad-utf8"} {
		if want := fmt.Sprintf(`joinery_rejected_total{job="flood",reason=%q,source="cdc"} 1`, reason); !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	if l, err := rc.XLen(context.Background(), "cdc-in").Result(); err != nil || l != 1 {
		t.Errorf("stream holds %d entries (%v), want 1: refused records must not be appended", l, err)
	}
	// The slow clients get 408 once body_timeout passed.
	_ = flood[0].SetReadDeadline(time.Now().Add(20 * time.Second))
	status, err := bufio.NewReader(flood[0]).ReadString('\n')
	if err != nil || !strings.Contains(status, "408") {
		t.Errorf("slow client got %q (%v), want 408", status, err)
	}
}

// TestNodeRefusesOpenAdminOffLoopback: a job file with the admin endpoint
// off loopback and no token is rejected before anything starts.
func TestNodeRefusesOpenAdminOffLoopback(t *testing.T) {
	dir := t.TempDir()
	yml := "name: open\n" + joinYAML + `
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]
admin: {addr: "0.0.0.0:0"}
`
	p := filepath.Join(dir, "job.yaml")
	writeLines(t, p, [][]byte{[]byte(yml)})
	if _, err := job.Load(p); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("job.Load: %v, want a refusal naming the loopback rule", err)
	}
}

// TestNodeTLSDoors: ingest with client_ca_file (mTLS, off loopback, no
// token) accepts a client with a certificate from that CA and refuses one
// without; the admin API serves HTTPS with its cert_file/key_file.
func TestNodeTLSDoors(t *testing.T) {
	rs := testutil.StartRedis(t)
	dir := t.TempDir()
	certs := testutil.WriteTLSFiles(t, dir)
	n := start(t, parse(t, dir, "name: mtls\n"+joinYAML+fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sources: [{name: cdc, type: redis-stream, redis: {addr: %[1]q}, stream: cdc-in, group: joinery, tables: {users: left, domains: right}}]
sinks: [{type: table}]
ingest: {addr: "0.0.0.0:0", source: cdc, tls: {cert_file: cert.pem, key_file: key.pem, client_ca_file: ca.pem}}
admin: {addr: "127.0.0.1:0", read_token: r, tls: {cert_file: cert.pem, key_file: key.pem}}
`, rs.Addr)))
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(certs.CA)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatal(err)
	}
	clientCert, err := tls.LoadX509KeyPair(certs.Cert, certs.Key)
	if err != nil {
		t.Fatal(err)
	}
	post := func(withCert bool) (int, error) {
		tc := &tls.Config{RootCAs: pool}
		if withCert {
			tc.Certificates = []tls.Certificate{clientCert}
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
		url := strings.Replace(portURL(t, n.IngestAddr()), "http://", "https://", 1) + "/ingest"
		resp, err := hc.Post(url, "application/x-ndjson", strings.NewReader(`{"op":"c","source":{"table":"users"},"after":{"id":1}}`))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := post(true); err != nil || code != http.StatusAccepted {
		t.Errorf("POST with a client certificate = %d, %v; want 202", code, err)
	}
	if code, err := post(false); err == nil {
		t.Errorf("POST without a client certificate = %d, want a TLS handshake failure", code)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	admin := strings.Replace(portURL(t, n.AdminAddr()), "http://", "https://", 1)
	req, _ := http.NewRequest("GET", admin+"/v1/members", nil)
	req.Header.Set("Authorization", "Bearer r")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("admin over HTTPS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("admin over HTTPS = %d, want 200", resp.StatusCode)
	}
	if resp, err := http.Get(portURL(t, n.AdminAddr()) + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("the admin API answered plain HTTP 200 with tls set")
		}
	}
}
