package testutil

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Redis is a redis-server process owned by a test.
type Redis struct {
	*RedisServer
	t testing.TB
}

// StartRedis starts redis-server on a free loopback port with its data in a
// fresh temporary directory and stops it when the test ends. Extra arguments
// are redis-server options such as "--appendonly", "yes". A missing
// redis-server fails the test (it never skips): install it with
// `apt-get install redis-server` or run `make test`, which does.
func StartRedis(t testing.TB, extra ...string) *Redis {
	t.Helper()
	s, err := LaunchRedis(RedisConfig{Dir: t.TempDir(), Args: extra})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return &Redis{RedisServer: s, t: t}
}

// Start (re)starts the server with the same port, directory and options;
// it fails the test when the server does not answer.
func (r *Redis) Start() {
	r.t.Helper()
	if err := r.RedisServer.Start(); err != nil {
		r.t.Fatal(err)
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := PickPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// WaitFor polls f until it returns nil or the deadline passes, then fails the
// test with f's last error. It never sleeps longer than 20ms at a time.
func WaitFor(t testing.TB, d time.Duration, f func() error) {
	t.Helper()
	if err := Poll(context.Background(), d, 20*time.Millisecond, "condition", f); err != nil {
		t.Fatal(err)
	}
}

// WaitUntil polls cond until it holds or the deadline passes, then fails
// the test naming what it waited for.
func WaitUntil(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	err := Poll(context.Background(), d, 10*time.Millisecond, what, func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	})
	if err != nil {
		t.Fatal(err)
	}
}
