package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkJob is a job with a secret in every kind of secret field; the values
// come from the environment, a file and the job file itself.
const checkJob = `name: secrets
join: {type: cdc, left: {name: users, pk: id, join_on: id}, right: {name: domains, pk: id, join_on: user_id}}
sources:
  - {name: cdc, type: redis-stream, redis: {addr: 'r:1', password: '${CHECK_SRC_PW}'}, stream: s, group: g, tables: {users: left, domains: right}}
sinks:
  - {type: kafka, kafka: {brokers: ['k:9092'], topic: t, sasl: {mechanism: plain, user: u, password: 'sasl-$$ecret'}}}
  - {type: redis-hash, redis: {addr: 'r:1', password_file: sink-pw}, key: h}
state: {store: redis, redis: {addr: 'r:1', password: state-secret-pw}}
dead_letter: {type: redis-stream, redis: {addr: 'r:1', password: dl-secret-pw}, stream: d}
cluster: {secret_key: '${CHECK_GOSSIP}'}
admin: {addr: '127.0.0.1:0', token: admin-secret-tok, read_token_file: read-tok, metrics_token: metrics-secret-tok}
ingest: {addr: '127.0.0.1:0', source: cdc, token: ingest-secret-tok}
`

func writeJob(t *testing.T, yml string) string {
	t.Helper()
	dir := t.TempDir()
	for name, v := range map[string]string{"job.yaml": yml, "sink-pw": "sink-secret-pw\n", "read-tok": "read-secret-tok\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "job.yaml")
}

// TestCheckRedactsSecrets: `check` prints the effective spec with no secret
// in it, whichever way the secret was given.
func TestCheckRedactsSecrets(t *testing.T) {
	t.Setenv("JOINERY_TOKEN", "")
	t.Setenv("JOINERY_READ_TOKEN", "")
	t.Setenv("CHECK_SRC_PW", "src-secret-pw")
	t.Setenv("CHECK_GOSSIP", "c2VjcmV0LXNlY3JldC0xNg==")
	var out, errOut strings.Builder
	if code := run([]string{"check", "--config", writeJob(t, checkJob)}, &out, &errOut); code != 0 {
		t.Fatalf("check exit %d: %s", code, errOut.String())
	}
	for _, secret := range []string{"src-secret-pw", "sasl-$ecret", "sink-secret-pw", "state-secret-pw", "dl-secret-pw",
		"c2VjcmV0LXNlY3JldC0xNg==", "admin-secret-tok", "read-secret-tok", "metrics-secret-tok", "ingest-secret-tok"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("check output contains %q:\n%s", secret, out.String())
		}
	}
	if n := strings.Count(out.String(), "<redacted>"); n != 10 {
		t.Errorf("check output has %d redactions, want 10:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "password_file: sink-pw") {
		t.Errorf("check output lost the password_file path:\n%s", out.String())
	}
}

// TestCheckAndRunRefuseWhatRunRefuses: an unset ${VAR} and a gossip key
// that does not decode to an AES key size fail check and run alike, naming
// the field.
func TestCheckAndRunRefuseWhatRunRefuses(t *testing.T) {
	t.Setenv("JOINERY_TOKEN", "")
	t.Setenv("JOINERY_READ_TOKEN", "")
	for _, c := range []struct {
		name, src, gossip, want string
	}{
		{"unset var", "", "c2VjcmV0LXNlY3JldC0xNg==", "sources[0].redis.password: ${CHECK_SRC_PW}: environment variable not set"},
		{"17-byte gossip key", "pw", "c2VjcmV0LXNlY3JldC0xNmI=", "cluster.secret_key: decodes to 17 bytes"},
		{"gossip key not base64", "pw", "not-base64!", "cluster.secret_key: not base64"},
	} {
		if c.src == "" {
			os.Unsetenv("CHECK_SRC_PW")
		} else {
			t.Setenv("CHECK_SRC_PW", c.src)
		}
		t.Setenv("CHECK_GOSSIP", c.gossip)
		path := writeJob(t, checkJob)
		for _, cmd := range []string{"check", "run"} {
			var out, errOut strings.Builder
			code := run([]string{cmd, "--config", path}, &out, &errOut)
			if code != 2 || !strings.Contains(errOut.String(), c.want) {
				t.Errorf("%s: %s exit %d, stderr %q; want 2 with %q", c.name, cmd, code, errOut.String(), c.want)
			}
		}
	}
	t.Setenv("CHECK_SRC_PW", "x") // restored by t.Setenv's cleanup
}

// TestCheckRefusesExposedCluster: check refuses, as run does, gossip
// without a key and remoting without TLS on a non-loopback address, and
// accepts them with cluster.insecure or on loopback.
func TestCheckRefusesExposedCluster(t *testing.T) {
	base := "name: exposed\njoin:\n  type: cdc\n  left: {name: users, pk: id, join_on: id}\n  right: {name: domains, pk: id, join_on: user_id}\n" +
		"sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]\nsinks: [{type: table}]\n"
	for _, c := range []struct {
		name, cluster, want string
	}{
		{"gossip off loopback without a key", "cluster: {gossip: '0.0.0.0:7946', remote: '127.0.0.1:0'}\n", "gossip would listen unprotected"},
		{"remoting off loopback without tls", "cluster: {remote: '0.0.0.0:8090'}\n", "remoting would listen unprotected"},
		{"insecure says so", "cluster: {gossip: '0.0.0.0:7946', remote: '0.0.0.0:8090', insecure: true}\n", ""},
		{"loopback", "cluster: {gossip: '127.0.0.1:0', remote: '127.0.0.1:0'}\n", ""},
	} {
		path := writeJob(t, base+c.cluster)
		var out, errOut strings.Builder
		code := run([]string{"check", "--config", path}, &out, &errOut)
		switch {
		case c.want == "" && code != 0:
			t.Errorf("%s: check exit %d, stderr %q; want ok", c.name, code, errOut.String())
		case c.want != "" && (code != 2 || !strings.Contains(errOut.String(), c.want)):
			t.Errorf("%s: check exit %d, stderr %q; want 2 with %q", c.name, code, errOut.String(), c.want)
		}
	}
}

// TestConfigErrorPrintedOnce: `check` and `run` with an unset
// ${JOINERY_GOSSIP_KEY} print the job's error once, its first cause only
// (not also "not base64", which validating the unexpanded text said, twice),
// and exit 2.
func TestConfigErrorPrintedOnce(t *testing.T) {
	t.Setenv("JOINERY_TOKEN", "")
	t.Setenv("JOINERY_READ_TOKEN", "")
	t.Setenv("JOINERY_GOSSIP_KEY", "")
	os.Unsetenv("JOINERY_GOSSIP_KEY")
	p := writeJob(t, `name: once
join: {type: cdc, left: {name: users, pk: id, join_on: id}, right: {name: domains, pk: id, join_on: user_id}}
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}}]
cluster: {secret_key: '${JOINERY_GOSSIP_KEY}'}
`)
	for _, cmd := range []string{"check", "run"} {
		var out, errOut strings.Builder
		code := run([]string{cmd, "--config", p}, &out, &errOut)
		got := errOut.String()
		if code != 2 || out.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q; want 2 and nothing", cmd, code, out.String())
		}
		if strings.Count(got, "cluster.secret_key") != 1 || !strings.Contains(got, "${JOINERY_GOSSIP_KEY}: environment variable not set") ||
			strings.Contains(got, "base64") || strings.Count(got, "invalid job file") != 1 {
			t.Errorf("%s: stderr\n%s\nwant one error, naming cluster.secret_key and the unset variable only", cmd, got)
		}
	}
}

// TestCheckPrintsKeptColumns: `check` says which columns of each side's
// rows the key state keeps.
func TestCheckPrintsKeptColumns(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"check", "--config", "../../examples/users-domains/job.yaml"}, &out, &errOut); code != 0 {
		t.Fatalf("check exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"# state keeps users: firstname, id, lastname\n", "# state keeps domains: domain_name, id, user_id\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCheckPrintsEventTimeKeptColumns: for an event-time join `check` says
// which columns of each side the key state keeps: key, time and projected
// columns, or every column without a projection.
func TestCheckPrintsEventTimeKeptColumns(t *testing.T) {
	for _, c := range []struct {
		name, project string
		want          []string
	}{
		{"projected", "\n  project: [{name: lv, from: l.v}, {name: rw, from: r.w}]", []string{"# state keeps l: k, ts, v\n", "# state keeps r: k, ts, w\n"}},
		{"whole rows", "", []string{"# state keeps l: every column\n", "# state keeps r: every column\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "job.yaml")
			body := fmt.Sprintf(`name: kept-timed
join:
  type: unbounded
  ttl: 1h
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}%s
sources:
  - {name: ls, type: file, path: l.jsonl, side: left}
  - {name: rs, type: file, path: r.jsonl, side: right}
sinks:
  - {type: stdout}
`, c.project)
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			if code := run([]string{"check", "--config", path}, &out, &errOut); code != 0 {
				t.Fatalf("check exit %d: %s", code, errOut.String())
			}
			for _, want := range c.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("check output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
