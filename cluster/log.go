package cluster

import (
	"bytes"
	"context"
	"log"
	"log/slog"
)

// newMemberlistLogger bridges memberlist's *log.Logger to slog. memberlist
// prefixes each line with its level ("[DEBUG] memberlist: ..."); the bridge
// maps that prefix to the slog level instead of logging everything at one
// level as slog.NewLogLogger would.
func newMemberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(logBridge{l: l}, "", 0)
}

type logBridge struct{ l *slog.Logger }

var logLevels = []struct {
	prefix []byte
	level  slog.Level
}{
	{[]byte("[DEBUG]"), slog.LevelDebug},
	{[]byte("[INFO]"), slog.LevelInfo},
	{[]byte("[WARN]"), slog.LevelWarn},
	{[]byte("[ERR]"), slog.LevelError},
	{[]byte("[ERROR]"), slog.LevelError},
}

func (b logBridge) Write(p []byte) (int, error) {
	msg := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for _, ll := range logLevels {
		if rest, ok := bytes.CutPrefix(msg, ll.prefix); ok {
			level, msg = ll.level, bytes.TrimSpace(rest)
			break
		}
	}
	msg = bytes.TrimPrefix(msg, []byte("memberlist: "))
	if level > slog.LevelDebug && bytes.Contains(msg, []byte("use of closed network connection")) {
		// memberlist's probe and gossip goroutines race its Shutdown
		// closing the transport: on a clean stop these say nothing an
		// operator must act on (an ERROR line would page).
		level = slog.LevelDebug
	}
	ctx := context.Background()
	if b.l.Enabled(ctx, level) {
		b.l.Log(ctx, level, string(msg), slog.String("component", "memberlist"))
	}
	return len(p), nil
}
