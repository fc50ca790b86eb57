package redisstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLease is how long a reader's lease on a stream lasts without being
// renewed, when Config.Lease is 0.
const DefaultLease = 10 * time.Second

// ErrLeaseLost is returned by Read when another source took the stream's
// lease: this one was paused, or cut off from Redis, past Config.Lease.
// The source reads nothing more (its offsets could no longer keep growing);
// close it and open a new one, which waits for the lease like any other.
var ErrLeaseLost = errors.New("redisstream: lease lost: another consumer of the group reads the stream now")

// The reader lease. Key actors skip an event whose offset is not above the
// highest they applied for its partition, which is only right when a
// stream's entries reach Joinery in offset order. Several consumers of one
// group reading the stream at once would break that (each gets a share of
// the new entries, and they race to the key actors), so one source at a time
// holds the stream's lease and reads; the others wait (a hot standby).
//
// The lease is a key holding "consumer|epoch", with a TTL that a goroutine
// renews every Lease/3. Every read of new entries checks the lease and reads
// in one script, so a holder that was paused past its lease and wakes up
// cannot read another entry: the check and the read are atomic. A source
// that acquires the lease first claims every entry pending on other
// consumers, whatever their idle time (their reader no longer holds the
// lease), and delivers them in ID order before new ones. What the old holder
// still has in flight was claimed too, so whichever copy reaches a key first
// is applied and the other one is skipped, in either order.
//
// The epoch (a counter, INCR at each acquisition) lets a holder whose lease
// merely expired — Redis down longer than the lease, say — take it again if
// nobody else took it in between, without losing its place.
type lease struct {
	key, epochKey string
	ttl           time.Duration

	mu      sync.Mutex
	me      string // "consumer|epoch" while held; "" before
	epoch   string
	lost    bool
	stop    chan struct{}
	stopped chan struct{}
}

// LeaseKey is the key of the lease on stream for group: while a source
// reads, it holds "consumer|epoch" (operators and tests read it to see
// which node reads the stream).
func LeaseKey(stream, group string) string {
	key, _ := leaseKeys(stream, group)
	return key
}

// slotTag is stream's own hash tag when it has one, else the stream name
// made into one.
func slotTag(stream string) string {
	if i := strings.IndexByte(stream, '{'); i >= 0 {
		if j := strings.IndexByte(stream[i+1:], '}'); j > 0 {
			return stream[i : i+j+2]
		}
	}
	return "{" + stream + "}"
}

// LineageKey is the key beside stream's group where Commit writes the state
// store's lineage it committed with (Config.Lineage), in the stream's hash
// slot like the lease.
func LineageKey(stream, group string) string {
	return slotTag(stream) + ":joinery:lineage:" + stream + ":" + group
}

// leaseKeys returns the lease's keys, in the stream's hash slot (so the
// scripts work on Redis Cluster): the stream's own hash tag when it has one,
// else the stream name made into one.
func leaseKeys(stream, group string) (key, epochKey string) {
	base := slotTag(stream) + ":joinery:lease:" + stream + ":" + group
	return base, base + ":epoch"
}

var acquireScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return {0, v} end
local e = redis.call('INCR', KEYS[2])
local me = ARGV[1] .. '|' .. e
redis.call('SET', KEYS[1], me, 'PX', ARGV[2])
return {1, me, tostring(e)}
`)

// renewScript extends the lease when this source holds it, or takes it
// again when it expired and nobody took it since (the epoch is unchanged).
// It returns 1 when held, 0 when lost.
var renewScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not v and redis.call('GET', KEYS[2]) == ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`)

// readScript is renewScript, then, when held, XREADGROUP of new entries
// (never blocking). It returns {0} when the lease is lost, {1, reply} with
// XREADGROUP's reply, or {2, lastID} when there is nothing new: lastID is
// the stream's last entry (or 0-0), from which an XREAD can wait.
var readScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
elseif not v and redis.call('GET', KEYS[2]) == ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  return {0}
end
local r = redis.call('XREADGROUP', 'GROUP', ARGV[4], ARGV[5], 'COUNT', ARGV[6], 'STREAMS', KEYS[3], '>')
if r then return {1, r} end
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
if #last > 0 then return {2, last[1][1]} end
return {2, '0-0'}
`)

var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// tryAcquire takes the lease if it is free. On success it starts renewing.
func (l *lease) tryAcquire(ctx context.Context, c *redis.Client, consumer string) (bool, error) {
	res, err := acquireScript.Run(ctx, c, []string{l.key, l.epochKey}, consumer, l.ttl.Milliseconds()).Slice()
	if err != nil {
		return false, fmt.Errorf("redisstream: acquire lease %s: %w", l.key, err)
	}
	if len(res) < 3 || res[0] != int64(1) {
		return false, nil
	}
	me, _ := res[1].(string)
	epoch, _ := res[2].(string)
	l.mu.Lock()
	l.me, l.epoch = me, epoch
	stop, stopped := make(chan struct{}), make(chan struct{})
	l.stop, l.stopped = stop, stopped
	l.mu.Unlock()
	go l.renewLoop(c, stop, stopped)
	return true, nil
}

// held reports whether the lease was acquired, and lost whether it was
// lost since.
func (l *lease) held() (held, lost bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.me != "", l.lost
}

func (l *lease) args() (me, epoch string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.me, l.epoch
}

func (l *lease) setLost() {
	l.mu.Lock()
	l.lost = true
	l.mu.Unlock()
}

// renewLoop renews the lease every ttl/3 until it is lost or released. A
// failed round trip is retried at the next tick: the reads check the lease
// themselves, so a holder that cannot renew cannot read either.
func (l *lease) renewLoop(c *redis.Client, stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	me, epoch := l.args()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		n, err := renewScript.Run(ctx, c, []string{l.key, l.epochKey}, me, l.ttl.Milliseconds(), epoch).Int()
		cancel()
		if err == nil && n == 0 {
			l.setLost()
			return
		}
	}
}

// read reads up to count new entries if the lease is still held: lost
// reports that it is not; when there is nothing new, entries is empty and
// lastID is where to wait from.
func (l *lease) read(ctx context.Context, c *redis.Client, stream, group, consumer string, count int) (entries []redis.XMessage, lastID string, lost bool, err error) {
	me, epoch := l.args()
	res, err := readScript.Run(ctx, c, []string{l.key, l.epochKey, stream}, me, l.ttl.Milliseconds(), epoch, group, consumer, count).Slice()
	if err != nil {
		return nil, "", false, fmt.Errorf("redisstream: read %s: %w", stream, err)
	}
	switch {
	case len(res) == 1 && res[0] == int64(0):
		l.setLost()
		return nil, "", true, nil
	case len(res) == 2 && res[0] == int64(2):
		id, _ := res[1].(string)
		return nil, id, false, nil
	case len(res) == 2 && res[0] == int64(1):
		entries, err := parseXRead(res[1])
		return entries, "", false, err
	}
	return nil, "", false, fmt.Errorf("redisstream: read %s: unexpected script reply %v", stream, res)
}

// parseXRead converts an XREADGROUP reply as a script returns it
// ({{stream, {{id, {field, value, ...}}, ...}}}) to messages.
func parseXRead(v any) ([]redis.XMessage, error) {
	bad := fmt.Errorf("redisstream: malformed XREADGROUP reply %v", v)
	streams, ok := v.([]any)
	if !ok {
		return nil, bad
	}
	var out []redis.XMessage
	for _, st := range streams {
		pair, ok := st.([]any)
		if !ok || len(pair) != 2 {
			return nil, bad
		}
		msgs, ok := pair[1].([]any)
		if !ok {
			return nil, bad
		}
		for _, m := range msgs {
			idFields, ok := m.([]any)
			if !ok || len(idFields) != 2 {
				return nil, bad
			}
			id, ok := idFields[0].(string)
			if !ok {
				return nil, bad
			}
			msg := redis.XMessage{ID: id}
			if fields, ok := idFields[1].([]any); ok {
				msg.Values = make(map[string]any, len(fields)/2)
				for i := 0; i+1 < len(fields); i += 2 {
					k, _ := fields[i].(string)
					msg.Values[k] = fields[i+1]
				}
			}
			out = append(out, msg)
		}
	}
	return out, nil
}

// release stops renewing and deletes the lease if this source still holds
// it, so a waiting source takes over at once.
func (l *lease) release(c *redis.Client) {
	l.mu.Lock()
	me, stop, stopped := l.me, l.stop, l.stopped
	l.stop = nil
	l.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-stopped
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = releaseScript.Run(ctx, c, []string{l.key}, me).Err()
}
