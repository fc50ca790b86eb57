package job

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJobRedisTLS(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := strings.Replace(good, "sinks:", "state: {store: redis, redis: {addr: 'r:6380', tls: TLS}}\nsinks:", 1)
	for _, c := range []struct{ tls, want string }{
		{"{enabled: true}", ""},
		{"{insecure_skip_verify: true}", ""},
		{"{ca_file: " + notPEM + "}", "state.redis.tls: ca_file " + notPEM + ": no PEM certificate"},
		{"{ca_file: /nope/ca.pem}", "state.redis.tls: ca_file: open /nope/ca.pem"},
		{"{cert_file: a.pem}", "cert_file and key_file go together"},
	} {
		s, err := Parse([]byte(strings.Replace(base, "TLS", c.tls, 1)))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.tls, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.tls, err, c.want)
		case c.want == "":
			tc, err := s.RedisTLSConfig(s.State.Redis)
			if err != nil || tc == nil {
				t.Errorf("%s: config %v, %v", c.tls, tc, err)
			}
		}
	}
	s, _ := Parse([]byte(good))
	if tc, err := s.RedisTLSConfig(Redis{Addr: "x"}); tc != nil || err != nil {
		t.Errorf("no tls: %v %v", tc, err)
	}
}
