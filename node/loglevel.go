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

// connLossMessages are protoactor's ERROR records about a remoting
// connection ending: a peer that stopped, left or died, or this node
// stopping. In a fleet they are routine (requests to a lost peer are resent
// to the key's new owner), so they are logged as WARN, and not at all
// (DEBUG) while this node is shutting down: a clean shutdown logs no ERROR.
var connLossMessages = map[string]bool{
	"EndpointWriter lost connection":                      true,
	"EndpointWriter failed to connect":                    true,
	"EndpointWriter error when closing the stream":        true,
	"EndpointWriter error when closing the client conn":   true,
	"EndpointWriter failed to create receive stream":      true,
	"EndpointWriter failed to send connect request":       true,
	"EndpointWriter failed to receive connect response":   true,
	"EndpointReader failed to send disconnection message": true,
	"stop endpoint activator failed":                      true,
	"stop endpoint supervisor failed":                     true,
}

// connLoss demotes connLossMessages (see there); stopping reports whether
// the node is shutting down.
type connLoss struct {
	slog.Handler
	stopping func() bool
}

func (h connLoss) Enabled(ctx context.Context, l slog.Level) bool { return h.Handler.Enabled(ctx, l) }

func (h connLoss) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && connLossMessages[r.Message] {
		r.Level = slog.LevelWarn
		if h.stopping() {
			r.Level = slog.LevelDebug
		}
		if !h.Handler.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h connLoss) WithAttrs(as []slog.Attr) slog.Handler {
	return connLoss{h.Handler.WithAttrs(as), h.stopping}
}

func (h connLoss) WithGroup(name string) slog.Handler {
	return connLoss{h.Handler.WithGroup(name), h.stopping}
}
