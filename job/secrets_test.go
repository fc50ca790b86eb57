package job

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	sinkkafka "github.com/joinery/joinery/sinks/kafka"
	srcredis "github.com/joinery/joinery/sources/redisstream"
)

func TestExpandSecret(t *testing.T) {
	env := map[string]string{"PW": "s3cret", "EMPTY": "", "A_1": "x"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, c := range []struct {
		in, want, err string
	}{
		{"plain", "plain", ""},
		{"${PW}", "s3cret", ""},
		{"pre-${PW}-post", "pre-s3cret-post", ""},
		{"pa$$w0rd$x", "pa$w0rd$x", ""}, // was "paw0rd" with os.ExpandEnv
		{"$$", "$", ""},
		{"$$$$", "$$", ""},
		{"$PW", "$PW", ""}, // only ${} expands
		{"trailing$", "trailing$", ""},
		{"$${PW}", "${PW}", ""},
		{"${A_1}", "x", ""},
		{"${UNSET:-fallback}", "fallback", ""},
		{"${EMPTY:-fallback}", "fallback", ""},
		{"${PW:-fallback}", "s3cret", ""},
		{"${UNSET:-}", "", ""},
		{"${UNSET}", "", "${UNSET}: environment variable not set"},
		{"${EMPTY}", "", "${EMPTY}: environment variable not set"},
		{"${PW", "", "unterminated ${"},
		{"${1X}", "", "not a variable name"},
		{"${}", "", "not a variable name"},
	} {
		got, err := ExpandSecret(c.in, lookup)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ExpandSecret(%q) error %v, want %q", c.in, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ExpandSecret(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := ExpandSecret("${UNSET}", lookup); !errors.Is(err, ErrUnsetVar) {
		t.Errorf("unset var: %v, want ErrUnsetVar", err)
	}
}

// withRedis is the good job with a Redis state store whose password is pw.
func withRedis(pw string) string {
	return strings.Replace(good, "sinks:", "state: {store: redis, redis: {addr: 'r:6379', "+pw+"}}\nsinks:", 1)
}

func TestJobSecretUnsetVarNamesField(t *testing.T) {
	t.Setenv("JOINERY_TEST_UNSET", "")
	os.Unsetenv("JOINERY_TEST_UNSET")
	_, err := Parse([]byte(withRedis("password: '${JOINERY_TEST_UNSET}'")))
	if err == nil || !strings.Contains(err.Error(), "state.redis.password: ${JOINERY_TEST_UNSET}") || !errors.Is(err, ErrUnsetVar) {
		t.Fatalf("error %v, want one naming state.redis.password and the variable", err)
	}
	s, err := Parse([]byte(withRedis("password: '${JOINERY_TEST_UNSET:-dev}'")))
	if err != nil || s.State.Redis.Password != "dev" {
		t.Fatalf("default: %v %q", err, s.State.Redis.Password)
	}
	t.Setenv("JOINERY_TEST_PW", "pa$$w0rd$x") // a value is never expanded again
	s, err = Parse([]byte(withRedis("password: 'x${JOINERY_TEST_PW}'")))
	if err != nil || s.State.Redis.Password != "xpa$$w0rd$x" {
		t.Fatalf("expanded: %v %q", err, s.State.Redis.Password)
	}
	s, err = Parse([]byte(withRedis("password: 'pa$$w0rd$x'")))
	if err != nil || s.State.Redis.Password != "pa$w0rd$x" {
		t.Fatalf("$$: %v %q", err, s.State.Redis.Password)
	}
}

// TestJobSecretErrorOnce: each problem of a secret is reported once and
// by its first cause only: an unset ${VAR} or an unreadable *_file is not
// followed by what validating the unexpanded text would say ("not base64"),
// and a bad gossip key is one line, not one per check that looks at it.
func TestJobSecretErrorOnce(t *testing.T) {
	t.Setenv(EnvToken, "")
	t.Setenv(EnvReadToken, "")
	t.Setenv("JOINERY_TEST_GOSSIP", "")
	os.Unsetenv("JOINERY_TEST_GOSSIP")
	const key = "c2VjcmV0LXNlY3JldC0xNg=="
	for _, c := range []struct {
		add  string
		want []string // the lines of the error, each by a part of it
	}{
		{"cluster: {secret_key: '${JOINERY_TEST_GOSSIP}'}", []string{"cluster.secret_key: ${JOINERY_TEST_GOSSIP}: environment variable not set"}},
		{"cluster: {secret_key_file: /nope/gossip}", []string{"cluster.secret_key_file: open /nope/gossip"}},
		{"cluster: {secret_key: x, secret_key_file: /nope/gossip}", []string{"cluster.secret_key: set secret_key or secret_key_file, not both"}},
		{"cluster: {secret_key: '" + key + "', secret_keys: ['${JOINERY_TEST_GOSSIP}']}", []string{"cluster.secret_keys[0]: ${JOINERY_TEST_GOSSIP}"}},
		{"cluster: {secret_key: 'not base64!'}", []string{"cluster.secret_key: not base64"}},
		{"cluster: {secret_key: 'c2hvcnQ='}", []string{"cluster.secret_key: decodes to 5 bytes"}},
		// Two problems of two fields: both, once each.
		{"cluster: {secret_key: '${JOINERY_TEST_GOSSIP}', secret_keys: ['c2hvcnQ=']}", []string{
			"cluster.secret_key: ${JOINERY_TEST_GOSSIP}", "cluster.secret_keys[0]: decodes to 5 bytes"}},
	} {
		_, err := Parse([]byte(strings.Replace(good, "sinks:", c.add+"\nsinks:", 1)))
		if err == nil {
			t.Errorf("%s: no error", c.add)
			continue
		}
		lines := strings.Split(err.Error(), "\n")
		ok := len(lines) == len(c.want)
		for i := 0; ok && i < len(lines); i++ {
			ok = strings.Contains(lines[i], c.want[i])
		}
		if !ok {
			t.Errorf("%s: error\n%v\nwant %d line(s): %q", c.add, err, len(c.want), c.want)
		}
	}
}

// TestJobSecretFiles: every *_file option reads its secret (one trailing
// newline trimmed, relative to the job file, contents not expanded); value
// and file together, a missing file and an empty one are errors.
func TestJobSecretFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, v string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("redis-pw", "r-$$${X}\n")
	write("sasl-pw", "k\r\n")
	write("gossip", "c2VjcmV0LXNlY3JldC0xNg==\n")
	write("admin", "adm\n")
	write("read", "rd")
	write("metrics", "met\n")
	write("ingest", "ing\n")
	write("empty", "\n")
	yml := `name: files
join: {type: cdc, left: {name: users, pk: id, join_on: id}, right: {name: domains, pk: id, join_on: user_id}}
sources:
  - {name: cdc, type: redis-stream, redis: {addr: 'r:1', password_file: redis-pw}, stream: s, group: g, tables: {users: left, domains: right}}
sinks:
  - {type: kafka, kafka: {brokers: ['k:9092'], topic: t, sasl: {mechanism: plain, user: u, password_file: sasl-pw}}}
state: {store: redis, redis: {addr: 'r:1', password_file: redis-pw}}
cluster: {secret_key_file: gossip}
admin: {addr: '127.0.0.1:0', token_file: admin, read_token_file: read, metrics_token_file: metrics}
ingest: {addr: '127.0.0.1:0', source: cdc, token_file: ingest}
`
	p := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvToken, "")
	t.Setenv(EnvReadToken, "")
	plan, err := LoadPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	s := plan.Spec
	// A connector's secrets are its configuration's, filled when its kind
	// decodes it.
	for field, c := range map[string][2]string{
		"state.redis.password":      {s.State.Redis.Password, "r-$$${X}"},
		"sources[0].redis.password": {plan.Sources[0].Config.(*srcredis.Entry).Redis.Password, "r-$$${X}"},
		"sinks[0].kafka.sasl":       {plan.Sinks[0].Config.(*sinkkafka.Entry).Kafka.SASL.Password, "k"},
		"cluster.secret_key":        {s.Cluster.SecretKey, "c2VjcmV0LXNlY3JldC0xNg=="},
		"admin.token":               {s.Admin.Token, "adm"},
		"admin.read_token":          {s.Admin.ReadToken, "rd"},
		"admin.metrics_token":       {s.Admin.MetricsToken, "met"},
		"ingest.token":              {s.Ingest.Token, "ing"},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", field, c[0], c[1])
		}
	}
	for _, c := range []struct{ from, to, want string }{
		{"token_file: admin", "token: x, token_file: admin", "admin.token: set token or token_file, not both"},
		{"secret_key_file: gossip", "secret_key_file: nope", "cluster.secret_key_file: open"},
		{"read_token_file: read", "read_token_file: empty", "admin.read_token_file: " + filepath.Join(dir, "empty") + " is empty"},
		{"password_file: sasl-pw", "password_file: nope", "sinks[0].kafka.sasl.password_file: open"},
		{"{addr: 'r:1', password_file: redis-pw}, stream", "{addr: 'r:1', password: x, password_file: redis-pw}, stream", "sources[0].redis.password: set password or password_file, not both"},
	} {
		if err := os.WriteFile(p, []byte(strings.Replace(yml, c.from, c.to, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.to, err, c.want)
		}
	}
}

// TestJobSecurityChecks: what a node would only find when it starts is
// reported by validation (so `joinery check` finds it too).
func TestJobSecurityChecks(t *testing.T) {
	t.Setenv(EnvToken, "")
	t.Setenv(EnvReadToken, "")
	for _, c := range []struct{ add, want string }{
		{"cluster: {secret_key: 'not base64!'}", "cluster.secret_key: not base64"},
		{"cluster: {secret_key: 'c2hvcnQ='}", "cluster.secret_key: decodes to 5 bytes"},
		{"cluster: {secret_key: 'c2VjcmV0LXNlY3JldC0xNg=='}", ""},
		{"admin: {addr: '0.0.0.0:8081'}", "admin: 0.0.0.0:8081 is not a loopback address"},
		{"admin: {addr: ':8081'}", "is not a loopback address"},
		{"admin: {addr: '0.0.0.0:8081', insecure: true}", ""},
		{"admin: {addr: '0.0.0.0:8081', read_token: r}", ""},
		{"admin: {addr: '127.0.0.1:8081'}", ""},
		{"admin: {addr: '127.0.0.1:8081', tls: {cert_file: c.pem}}", "admin.tls: cert_file and key_file are both needed"},
		{"admin: {addr: '127.0.0.1:8081', tls: {cert_file: /nope/c.pem, key_file: /nope/k.pem}}", "admin.tls: cert_file/key_file: open /nope/c.pem"},
	} {
		s, err := Parse([]byte(strings.Replace(good, "sinks:", c.add+"\nsinks:", 1)))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.add, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.add, err, c.want)
		case c.want == "" && c.add[:7] == "cluster":
			if k, err := s.Cluster.GossipKey(); err != nil || len(k) != 16 {
				t.Errorf("gossip key %v %v", k, err)
			}
		}
	}
	t.Setenv(EnvToken, "from-env")
	if _, err := Parse([]byte(strings.Replace(good, "sinks:", "admin: {addr: '0.0.0.0:8081'}\nsinks:", 1))); err != nil {
		t.Errorf("%s set: %v", EnvToken, err)
	}
}

func TestJobKafkaTLS(t *testing.T) {
	base := strings.Replace(good, "sinks:\n  - {type: stdout}", "sinks:\n  - {type: kafka, kafka: {brokers: ['k:9093'], topic: t, tls: TLS}}", 1)
	for _, c := range []struct {
		tls  string
		on   bool
		want string
	}{
		{"true", true, ""},
		{"false", false, ""},
		{"{ca_file: /nope/ca.pem}", false, "sinks[0].kafka.tls: ca_file: open /nope/ca.pem"},
		{"{cert_file: c.pem}", false, "sinks[0].kafka.tls: cert_file and key_file go together"},
		{"{server_name: kafka.internal}", true, ""},
		{"{ca_fil: x}", false, "field ca_fil not found"},
		{"maybe", false, "want true, false or a mapping"},
	} {
		s, err := Parse([]byte(strings.Replace(base, "TLS", c.tls, 1)))
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("tls %s: error %v, want %q", c.tls, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("tls %s: %v", c.tls, err)
			continue
		}
		p, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		tc, err := s.KafkaTLSConfig(p.Sinks[0].Config.(*sinkkafka.Entry).Kafka)
		if err != nil || (tc != nil) != c.on {
			t.Errorf("tls %s: config %v %v, want on=%v", c.tls, tc, err, c.on)
		}
	}
}

func TestJobRedacted(t *testing.T) {
	t.Setenv(EnvToken, "")
	t.Setenv(EnvReadToken, "")
	yml := strings.Replace(good, "sinks:\n  - {type: stdout}", `sinks:
  - {type: redis-hash, redis: {addr: 'r:1', password: sink-pw}, key: h}
  - {type: kafka, kafka: {brokers: ['k:1'], topic: t, sasl: {mechanism: plain, user: u, password: sasl-pw}}}
state: {store: redis, redis: {addr: 'r:1', password: state-pw}}
cluster: {secret_key: 'c2VjcmV0LXNlY3JldC0xNg=='}
admin: {addr: '127.0.0.1:1', token: adm-tok, read_token: read-tok, metrics_token: met-tok}
dead_letter: {type: redis-stream, redis: {addr: 'r:1', password: dl-pw}, stream: d}`, 1)
	s, err := Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Redacted()
	for _, sec := range r.secrets() {
		if *sec.val != "" && *sec.val != Redacted {
			t.Errorf("%s = %q in the redacted spec", sec.field, *sec.val)
		}
	}
	// What `joinery check` prints: the connectors' secrets are redacted in
	// their fields as written, the other fields kept.
	printed, err := yaml.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sink-pw", "sasl-pw", "state-pw", "adm-tok", "read-tok", "met-tok", "dl-pw"} {
		if strings.Contains(string(printed), secret) {
			t.Errorf("%s printed:\n%s", secret, printed)
		}
	}
	if n := strings.Count(string(printed), Redacted); n != 8 || !strings.Contains(string(printed), "key: h") {
		t.Errorf("%d secrets redacted, want 8, other fields kept:\n%s", n, printed)
	}
	orig, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if s.State.Redis.Password != "state-pw" || !strings.Contains(string(orig), "sink-pw") || !strings.Contains(string(orig), "dl-pw") || s.Admin.Token != "adm-tok" {
		t.Errorf("Redacted changed the spec it copied:\n%s", orig)
	}
}

// FuzzExpandSecret: expansion never panics, and any literal written with
// every $ doubled comes back unchanged.
func FuzzExpandSecret(f *testing.F) {
	for _, s := range []string{"pa$$w0rd$x", "${A}", "${A:-b}", "$", "${", "${}", "x$${y}"} {
		f.Add(s)
	}
	lookup := func(k string) (string, bool) {
		if k == "A" {
			return "a$", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ExpandSecret(s, lookup)
		got, err := ExpandSecret(strings.ReplaceAll(s, "$", "$$"), lookup)
		if err != nil || got != s {
			t.Fatalf("escaped %q expanded to %q, %v", s, got, err)
		}
	})
}
