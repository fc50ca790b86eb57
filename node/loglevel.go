package node

import (
	"context"
	"log/slog"
)

// minLevel wraps a handler and drops records below min. Libraries (protoactor,
// memberlist) log routine events at INFO; the node shows their WARN and above
// unless its own logger is at DEBUG.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

// libLogger returns the logger for a library component.
func libLogger(l *slog.Logger, component string) *slog.Logger {
	l = l.With("component", component)
	if l.Enabled(context.Background(), slog.LevelDebug) {
		return l
	}
	return slog.New(minLevel{l.Handler(), slog.LevelWarn})
}
