package redisstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources"
)

// partitionLog records OnPartitions calls.
type partitionLog struct {
	mu    sync.Mutex
	calls []string
}

func (p *partitionLog) hook(assigned, revoked []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case len(assigned) > 0:
		p.calls = append(p.calls, "assigned")
	case len(revoked) > 0:
		p.calls = append(p.calls, "revoked")
	default:
		p.calls = append(p.calls, "waiting")
	}
}

func (p *partitionLog) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.calls, ",")
}

func leaseConfig(addr, consumer string, log *partitionLog) Config {
	return Config{Options: redisopts.Options{Addr: addr}, Stream: "in", Group: "g", Consumer: consumer, Block: 20 * time.Millisecond,
		Lease: 300 * time.Millisecond, OnPartitions: log.hook}
}

// newLeased opens a source with cfg, closed when the test ends.
func newLeased(t *testing.T, cfg Config) *Source {
	t.Helper()
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// increasing fails unless the messages' offsets grow strictly.
func increasing(t *testing.T, msgs []sources.Message) {
	t.Helper()
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Pos.Offset <= msgs[i-1].Pos.Offset {
			t.Fatalf("offset %d after %d: not in stream order", msgs[i].Pos.Offset, msgs[i-1].Pos.Offset)
		}
	}
}

// TestRedisStreamSourceLeaseOneReader: of two sources of one group, one
// reads and the other waits; when the reader closes, the other takes over,
// delivering first what the reader left unacknowledged, then the rest, in
// stream order.
func TestRedisStreamSourceLeaseOneReader(t *testing.T) {
	r := testutil.StartRedis(t)
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	var logA, logB partitionLog
	a := newLeased(t, leaseConfig(r.Addr, "a", &logA))
	b := newLeased(t, leaseConfig(r.Addr, "b", &logB))
	appendValues(t, admin, "in", "a", "b", "c", "d", "e", "f")
	if got := values(readN(t, a, 3, 3)); got != "a,b,c" {
		t.Fatalf("a read %s", got)
	}
	if got := readFor(t, b, 700*time.Millisecond); len(got) != 0 {
		t.Fatalf("b read %s while a holds the lease", values(got))
	}
	if got := values(readN(t, a, 1, 1)); got != "d" {
		t.Fatalf("a read %s after b waited past the lease: a's renewals should keep it", got)
	}
	if err := a.Close(); err != nil { // a, d pending on a, unacknowledged
		t.Fatal(err)
	}
	msgs := readN(t, b, 6, 10)
	if got := values(msgs); got != "a,b,c,d,e,f" {
		t.Fatalf("b read %s after a closed, want a's unacknowledged entries, then the rest", got)
	}
	increasing(t, msgs)
	if logA.String() != "assigned" || logB.String() != "waiting,assigned" {
		t.Fatalf("OnPartitions: a %q, b %q", logA.String(), logB.String())
	}
}

// TestRedisStreamSourceLeaseLost: a holder that stops renewing (a paused
// process) loses the lease; the next source claims what it had in flight
// and reads on; the old holder's next Read reads nothing and fails with
// ErrLeaseLost, even though new entries are there.
func TestRedisStreamSourceLeaseLost(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	var logA, logB partitionLog
	a := newLeased(t, leaseConfig(r.Addr, "a", &logA))
	appendValues(t, admin, "in", "a", "b", "c")
	if got := values(readN(t, a, 2, 2)); got != "a,b" {
		t.Fatalf("a read %s", got)
	}
	// a pauses: its renewals stop (as a SIGSTOP would stop them).
	a.lease.mu.Lock()
	stop, stopped := a.lease.stop, a.lease.stopped
	a.lease.stop = nil
	a.lease.mu.Unlock()
	close(stop)
	<-stopped

	b := newLeased(t, leaseConfig(r.Addr, "b", &logB))
	msgs := readN(t, b, 3, 10) // waits for a's lease to run out
	if got := values(msgs); got != "a,b,c" {
		t.Fatalf("b read %s, want a's in-flight entries, then c", got)
	}
	appendValues(t, admin, "in", "d")
	if msgs, err := a.Read(ctx, 10); !errors.Is(err, ErrLeaseLost) || len(msgs) != 0 {
		t.Fatalf("a woke and read %q, %v; want nothing, ErrLeaseLost", values(msgs), err)
	}
	if got := values(readN(t, b, 1, 10)); got != "d" {
		t.Fatalf("b read %s, want d", got)
	}
	if n := pendingOf(t, admin, "in", "g")["a"]; n != 0 {
		t.Fatalf("%d entries pending on a, want none (b claimed them, a read nothing new)", n)
	}
}

// TestRedisStreamSourceLeaseExpiredNotTaken: a lease that ran out while
// nobody else took it (Redis was down longer than the lease) is taken again
// by its holder, which reads on; one taken by another source is lost.
func TestRedisStreamSourceLeaseExpiredNotTaken(t *testing.T) {
	r := testutil.StartRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	var logA partitionLog
	a := newLeased(t, leaseConfig(r.Addr, "a", &logA))
	appendValues(t, admin, "in", "a")
	readN(t, a, 1, 1)
	if err := admin.Del(ctx, a.lease.key).Err(); err != nil {
		t.Fatal(err)
	}
	appendValues(t, admin, "in", "b")
	if got := values(readN(t, a, 1, 1)); got != "b" {
		t.Fatalf("a read %s after its lease expired untaken", got)
	}
	if err := admin.Set(ctx, a.lease.key, "x|999", 0).Err(); err != nil {
		t.Fatal(err)
	}
	appendValues(t, admin, "in", "c")
	if msgs, err := a.Read(ctx, 10); !errors.Is(err, ErrLeaseLost) || len(msgs) != 0 {
		t.Fatalf("a read %q, %v after another source took the lease; want ErrLeaseLost", values(msgs), err)
	}
}

func TestRedisStreamSourceLeaseKeys(t *testing.T) {
	for _, tt := range []struct{ stream, wantTag string }{
		{"cdc.users", "{cdc.users}"},
		{"{cdc}.users", "{cdc}"},
		{"a{b}c", "{b}"},
		{"a{}c", "{a{}c}"},
	} {
		key, epoch := leaseKeys(tt.stream, "g")
		if !strings.HasPrefix(key, tt.wantTag+":") || !strings.HasPrefix(epoch, key) {
			t.Errorf("leaseKeys(%q) = %q, %q; want hash tag %s", tt.stream, key, epoch, tt.wantTag)
		}
	}
}

// TestRedisStreamSourceRedisRestart: while Redis is down Read fails with a
// transient error (the node retries those), and after Redis restarts from
// its append-only file the source reads on where it was, still holding
// its lease.
func TestRedisStreamSourceRedisRestart(t *testing.T) {
	r := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	var log partitionLog
	cfg := leaseConfig(r.Addr, "a", &log)
	cfg.Lease = 2 * time.Second
	a := newLeased(t, cfg)
	appendValues(t, admin, "in", "a", "b")
	if got := values(readN(t, a, 2, 10)); got != "a,b" {
		t.Fatalf("read %s", got)
	}
	r.Kill()
	if msgs, err := a.Read(ctx, 10); !sources.IsTransient(err) || len(msgs) != 0 {
		t.Fatalf("Read with Redis down = %q, %v; want a transient error", values(msgs), err)
	}
	r.Start()
	appendValues(t, admin, "in", "c")
	var got []sources.Message
	testutil.WaitFor(t, 10*time.Second, func() error {
		msgs, err := a.Read(ctx, 10)
		if err != nil && !sources.IsTransient(err) {
			t.Fatalf("Read after the restart: %v", err)
		}
		got = append(got, msgs...)
		if len(got) == 0 {
			return fmt.Errorf("nothing read yet (%v)", err)
		}
		return nil
	})
	if values(got) != "c" {
		t.Fatalf("read %s after the restart, want c", values(got))
	}
}
