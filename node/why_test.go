package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/internal/testutil"
)

// TestNodeKeyWhy runs a window join from two Redis Streams where the left
// stream lags: the admin API's watermarks name the lagging partition, key
// inspect shows the window's contents, and key why says the window waits for
// watermark 9999 while ls/0 holds the watermark at 1999.
func TestNodeKeyWhy(t *testing.T) {
	rs := testutil.StartRedis(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	add := func(stream, key string, ts int64, v string) {
		t.Helper()
		val := fmt.Sprintf(`{"k":%q,"ts":%d,"v":%q}`, key, ts, v)
		if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"value": val}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	add("ls", "a", 1000, "l1")
	add("ls", "b", 3000, "l2")
	add("rs", "a", 2000, "r1")
	for ts := int64(4000); ts <= 25000; ts += 3000 {
		add("rs", "b", ts, fmt.Sprint("r", ts))
	}
	n := start(t, parse(t, t.TempDir(), fmt.Sprintf(`name: why
join:
  type: window
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  window: {type: tumbling, size: 10s}
state: {store: redis, redis: {addr: %[1]q}}
sources:
  - {name: ls, type: redis-stream, redis: {addr: %[1]q}, stream: ls, group: g, side: left, watermark: {max_out_of_orderness: 1s}}
  - {name: rs, type: redis-stream, redis: {addr: %[1]q}, stream: rs, group: g, side: right, watermark: {max_out_of_orderness: 1s}}
sinks: [{type: table}]
admin: {addr: "127.0.0.1:0"}
`, rs.Addr)))
	// Not ready before its sources open (Run opens them).
	if resp, err := http.Get("http://" + n.AdminAddr() + "/readyz"); err != nil {
		t.Fatal(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "not open yet") {
			t.Errorf("/readyz before Run = %d %q, want 503 naming a source not open yet", resp.StatusCode, body)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("run: %v", err)
		}
	}()
	c, err := admin.NewClient("http://"+n.AdminAddr(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var wm admin.Watermarks
	testutil.WaitFor(t, 30*time.Second, func() error {
		wm, err = c.Watermarks(ctx, "why")
		if err != nil {
			return err
		}
		if wm.Global != 1999 {
			return fmt.Errorf("global watermark %d, want 1999 (ls's newest event 3000 minus 1s, minus 1 as in Flink)", wm.Global)
		}
		return nil
	})
	parts := map[string]admin.Watermark{}
	for _, p := range wm.Partitions {
		parts[p.Partition] = p
	}
	if l, r := parts["ls/0"], parts["rs/0"]; l.Watermark != 1999 || l.LagMs != 23001 || r.Watermark != 23999 || r.LagMs != 1001 || r.Source != "rs" {
		t.Errorf("partitions %+v: want ls/0 at 1999 lagging 23001 ms behind the newest event (25000), rs/0 at 23999", wm.Partitions)
	}

	if resp, err := http.Get("http://" + n.AdminAddr() + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz with its sources reading = %v, %v; want 200", resp, err)
	} else {
		resp.Body.Close()
	}
	resp, err := http.Get("http://" + n.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `joinery_watermark_lag_seconds{job="why",partition="ls/0",source="ls"}`) {
		t.Errorf("/metrics has no watermark lag for ls/0")
	}

	// The watermark covers what the reader observed; key a's request may
	// still be on its way to the key.
	var ks admin.KeyState
	testutil.WaitFor(t, 30*time.Second, func() error {
		ks, err = c.Inspect(ctx, "why", "a")
		if err != nil {
			return err
		}
		if !strings.Contains(string(ks.State), `"r1"`) {
			return fmt.Errorf("key a holds %s", ks.State)
		}
		return nil
	})
	if !strings.Contains(string(ks.State), `"l1"`) || !strings.Contains(string(ks.State), `"r1"`) || len(ks.Timers) == 0 || ks.Timers[0] != 9999 {
		t.Errorf("inspect a: state %s, timers %v; want the window holding l1 and r1, timer 9999", ks.State, ks.Timers)
	}
	why, err := c.Why(ctx, "why", "a")
	if err != nil {
		t.Fatal(err)
	}
	if why.Watermark != 1999 || why.HeldBy == nil || why.HeldBy.Partition != "ls/0" || why.HeldBy.Idle {
		t.Errorf("why: watermark %d, held by %+v; want 1999 held by ls/0 (lagging)", why.Watermark, why.HeldBy)
	}
	if len(why.Waits) != 1 || why.Waits[0].NeedsWatermark != 9999 || why.Waits[0].Behind != 8000 ||
		why.Waits[0].What != "window [0,10000) fires: 1 left, 1 right" {
		t.Errorf("why waits %+v; want window [0,10000) needing 9999", why.Waits)
	}
	if len(n.Table()) != 0 {
		t.Errorf("window fired early: %v", n.Table())
	}

	// The left stream catches up: the window fires and the key has nothing
	// left to wait for.
	add("ls", "b", 30000, "l3")
	testutil.WaitFor(t, 30*time.Second, func() error {
		// Window [0,10000): a has l1,r1; b has l2 with r4000 and r7000.
		if len(n.Table()) != 3 {
			return fmt.Errorf("table %v, want 3 pairs", n.Table())
		}
		return nil
	})
	if _, err := c.Why(ctx, "why", "nope"); !errors.Is(err, admin.ErrNotFound) {
		t.Errorf("why of an unknown key: %v, want not found", err)
	}
}
