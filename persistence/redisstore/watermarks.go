package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/joinery/joinery/persistence"
)

var _ persistence.WatermarkStore = (*Store)(nil)

// wmKey is the job's watermark board, in the job's group 0: a hash, field =
// node name, value = encodeWatermark's "watermark|heartbeat unix ms|idle (0
// or 1)". It holds one field per node, so one slot is plenty.
func wmKey(prefix, job string) string { return layoutOf(prefix, job).prefixes[0] + "wm" }

func encodeWatermark(w persistence.NodeWatermark) string {
	idle := "0"
	if w.Idle {
		idle = "1"
	}
	return strconv.FormatInt(w.Watermark, 10) + "|" + strconv.FormatInt(w.Heartbeat.UnixMilli(), 10) + "|" + idle
}

var errBadWatermark = errors.New("redisstore: bad watermark entry")

func decodeWatermark(node, v string) (persistence.NodeWatermark, error) {
	wm, rest, ok1 := strings.Cut(v, "|")
	hb, idle, ok2 := strings.Cut(rest, "|")
	if !ok1 || !ok2 || (idle != "0" && idle != "1") {
		return persistence.NodeWatermark{}, errBadWatermark
	}
	w, err1 := strconv.ParseInt(wm, 10, 64)
	h, err2 := strconv.ParseInt(hb, 10, 64)
	if err1 != nil || err2 != nil {
		return persistence.NodeWatermark{}, errBadWatermark
	}
	return persistence.NodeWatermark{Node: node, Watermark: w, Heartbeat: time.UnixMilli(h), Idle: idle == "1"}, nil
}

// PublishWatermark implements persistence.WatermarkStore with one HSET.
func (s *Store) PublishWatermark(ctx context.Context, job string, w persistence.NodeWatermark) error {
	if s.closed.Load() {
		return persistence.ErrClosed
	}
	if err := s.client.HSet(ctx, wmKey(s.prefix, job), w.Node, encodeWatermark(w)).Err(); err != nil {
		return wrap("publish watermark", err)
	}
	return nil
}

// Watermarks implements persistence.WatermarkStore with one HGETALL; entries
// that do not decode are left out.
func (s *Store) Watermarks(ctx context.Context, job string) ([]persistence.NodeWatermark, error) {
	if s.closed.Load() {
		return nil, persistence.ErrClosed
	}
	h, err := s.client.HGetAll(ctx, wmKey(s.prefix, job)).Result()
	if err != nil {
		return nil, wrap("watermarks", err)
	}
	out := make([]persistence.NodeWatermark, 0, len(h))
	for node, v := range h {
		if w, err := decodeWatermark(node, v); err == nil {
			out = append(out, w)
		}
	}
	return out, nil
}

// DeleteWatermark implements persistence.WatermarkStore with one HDEL.
func (s *Store) DeleteWatermark(ctx context.Context, job, node string) error {
	if s.closed.Load() {
		return persistence.ErrClosed
	}
	if err := s.client.HDel(ctx, wmKey(s.prefix, job), node).Err(); err != nil {
		return wrap("delete watermark", err)
	}
	return nil
}
