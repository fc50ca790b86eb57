package job

import (
	"strings"
	"testing"
)

// TestJobClusterSecurity: the cluster section's gossip keys and remoting
// TLS are validated before anything starts, each problem naming its field.
func TestJobClusterSecurity(t *testing.T) {
	key := "MDEyMzQ1Njc4OWFiY2RlZg==" // 16 bytes
	for _, c := range []struct{ cluster, want string }{
		{"{secret_key: " + key + "}", ""},
		{"{secret_key: " + key + ", secret_keys: [" + key + "]}", ""},
		{"{tls: {ca_file: ca.pem, cert_file: c.pem, key_file: k.pem}, insecure: false}", ""},
		{"{insecure: true}", ""},
		{"{secret_key: 'not base64!'}", "cluster.secret_key: not base64"},
		{"{secret_key: c2hvcnQ=}", "cluster.secret_key: decodes to 5 bytes, want 16, 24 or 32"},
		{"{secret_key: " + key + ", secret_keys: [c2hvcnQ=]}", "cluster.secret_keys[0]: decodes to 5 bytes"},
		{"{secret_keys: [" + key + "]}", "cluster.secret_keys: needs cluster.secret_key"},
		{"{tls: {cert_file: c.pem}}", "cluster.tls: ca_file, cert_file and key_file go together"},
	} {
		s, err := Parse([]byte(strings.Replace(good, "sinks:", "cluster: "+c.cluster+"\nsinks:", 1)))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.cluster, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.cluster, err, c.want)
		case c.want == "":
			p, extra, err := s.Cluster.GossipKeys()
			if err != nil || (s.Cluster.SecretKey != "") != (len(p) == 16) || len(extra) != len(s.Cluster.SecretKeys) {
				t.Errorf("%s: keys %x %x, %v", c.cluster, p, extra, err)
			}
		}
	}
}
