package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestMemberlistLogLevels checks the bridge's level mapping, and that the
// errors of memberlist's goroutines racing a clean Shutdown ("use of
// closed network connection") are not logged as errors.
func TestMemberlistLogLevels(t *testing.T) {
	tests := []struct{ line, want string }{
		{"[DEBUG] memberlist: Stream connection from=1.2.3.4:5", "DEBUG"},
		{"[INFO] memberlist: Marking n2 as failed, suspect timeout reached", "INFO"},
		{"[WARN] memberlist: Was able to connect to n5 over TCP but UDP probes failed", "WARN"},
		{"[ERR] memberlist: Failed to send UDP ping: write udp 10.0.0.1:7946->10.0.0.2:7946: use of closed network connection", "DEBUG"},
		{"[ERR] memberlist: Failed to send gossip to 10.0.0.2:7946: write udp: use of closed network connection", "DEBUG"},
		{"[ERR] memberlist: Conflicting address for n2", "ERROR"},
		{"no prefix at all", "INFO"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		l := newMemberlistLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
		l.Print(tt.line)
		if got := buf.String(); !strings.Contains(got, "level="+tt.want) {
			t.Errorf("%q logged as %q, want level %s", tt.line, got, tt.want)
		}
	}
}
