package node

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestConnLossDemoted: protoactor's connection-loss ERRORs become WARN, and
// vanish while the node stops; other ERRORs stay ERROR.
func TestConnLossDemoted(t *testing.T) {
	var buf bytes.Buffer
	stopping := false
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	l := slog.New(connLoss{libLogger(base, "protoactor").Handler(), func() bool { return stopping }})
	l.Error("EndpointWriter lost connection", "address", "10.0.0.2:8090")
	l.Error("EndpointReader failed to deserialize")
	stopping = true
	l.Error("EndpointWriter lost connection", "address", "10.0.0.3:8090")
	out := buf.String()
	if !strings.Contains(out, `level=WARN msg="EndpointWriter lost connection" component=protoactor address=10.0.0.2:8090`) {
		t.Errorf("a peer's lost connection is not a WARN:\n%s", out)
	}
	if strings.Contains(out, "10.0.0.3") {
		t.Errorf("a lost connection while stopping was logged:\n%s", out)
	}
	if !strings.Contains(out, `level=ERROR msg="EndpointReader failed to deserialize"`) {
		t.Errorf("another protoactor ERROR was demoted:\n%s", out)
	}
}
