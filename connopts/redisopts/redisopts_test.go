package redisopts

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/testutil"
)

func TestFailed(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"nil reply", redis.Nil, false},
		{"cancelled", fmt.Errorf("read: %w", context.Canceled), false},
		{"closed client", redis.ErrClosed, false},
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"timeout", context.DeadlineExceeded, true},
		{"pool timeout", redis.ErrPoolTimeout, true},
		{"other", errors.New("boom"), true},
	} {
		if got := Failed(c.err); got != c.want {
			t.Errorf("%s: Failed(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestErrorHook counts the failed calls of a client on a real Redis: a nil
// reply, an existing group and a script's first EVALSHA are not failures;
// an unknown command, a failed pipeline and every call once the server is
// gone are.
func TestErrorHook(t *testing.T) {
	r := testutil.StartRedis(t)
	var n atomic.Int64
	c := Options{Addr: r.Addr, OnRedisError: func() { n.Add(1) }}.Client()
	defer c.Close()
	ctx := context.Background()
	step := func(what string, want int64, f func()) {
		t.Helper()
		f()
		if got := n.Load(); got != want {
			t.Fatalf("after %s: %d failed calls counted, want %d", what, got, want)
		}
	}
	step("a nil reply", 0, func() { _ = c.Get(ctx, "missing").Err() })
	step("creating a group twice", 0, func() {
		_ = c.XGroupCreateMkStream(ctx, "s", "g", "0").Err()
		_ = c.XGroupCreateMkStream(ctx, "s", "g", "0").Err() // BUSYGROUP
	})
	step("a script run the first time", 0, func() { _ = redis.NewScript(`return 1`).Run(ctx, c, nil).Err() })
	step("a pipeline with a nil reply", 0, func() {
		_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "k", "v", 0)
			p.Get(ctx, "missing")
			return nil
		})
	})
	step("an unknown command", 1, func() { _ = c.Do(ctx, "NOSUCHCOMMAND").Err() })
	step("a pipeline with an error reply", 2, func() {
		_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "k", "v", 0)
			p.LPush(ctx, "k", "x") // WRONGTYPE
			p.LPush(ctx, "k", "y")
			return nil
		})
	})
	r.Stop()
	step("a ping with the server gone", 3, func() { _ = c.Ping(ctx).Err() })
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	step("a cancelled call", 3, func() { _ = c.Ping(cctx).Err() })
}

// TestClusterClient checks that a cluster client gets the connection
// settings a one-server client gets (credentials, a clone of TLS, context
// deadlines, no maintenance notifications), its own copy of the addresses,
// and its caller's cluster settings.
func TestClusterClient(t *testing.T) {
	tc := &tls.Config{ServerName: "redis.example"}
	addrs := []string{"10.0.0.1:6379", "10.0.0.2:6379"}
	o := Options{Addr: "ignored:1", Username: "u", Password: "p", TLS: tc, OnRedisError: func() {}}
	c := o.ClusterClient(addrs, func(co *redis.ClusterOptions) { co.MaxRedirects = 7 })
	defer c.Close()
	addrs[0] = "changed:1"
	one, got := o.GoRedis(), c.Options()
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"Addrs", got.Addrs, []string{"10.0.0.1:6379", "10.0.0.2:6379"}},
		{"Username", got.Username, one.Username},
		{"Password", got.Password, one.Password},
		{"ContextTimeoutEnabled", got.ContextTimeoutEnabled, one.ContextTimeoutEnabled},
		{"MaintNotificationsConfig.Mode", got.MaintNotificationsConfig.Mode, one.MaintNotificationsConfig.Mode},
		{"TLSConfig.ServerName", got.TLSConfig.ServerName, "redis.example"},
		{"TLSConfig cloned", got.TLSConfig != tc, true},
		{"MaxRedirects (tune)", got.MaxRedirects, 7},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
}
