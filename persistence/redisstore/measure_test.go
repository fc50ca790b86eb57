package redisstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// TestLayoutMemory measures what a join key costs in Redis in layout
// version 1 (written with its scripts) and in this layout: N keys, each
// acquired and saved with a base and four parts of 30 to 60 bytes (and
// then again with a fifth part of 412 bytes, the size of an outbox entry
// of the seed's join, over hash-max-listpack-value), on a fresh
// redis-server each; it prints used_memory per key and a key's OBJECT
// ENCODING and MEMORY USAGE, and the server time of the scripts per key
// (INFO commandstats); the last run raises the server's
// hash-max-listpack-value to 1024. It is a measurement, not a check: set
// JOINERY_MEASURE_LAYOUT=1 to run it (the number of keys in
// JOINERY_MEASURE_KEYS, 20000 by default).
func TestLayoutMemory(t *testing.T) {
	if os.Getenv("JOINERY_MEASURE_LAYOUT") == "" {
		t.Skip("a measurement: set JOINERY_MEASURE_LAYOUT=1")
	}
	n := 20000
	if v := os.Getenv("JOINERY_MEASURE_KEYS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	// A user's state of the seed's join: a base (offsets, version, the
	// left row's key), its row and three domains' rows.
	value := func(i, size int) []byte {
		v := []byte(fmt.Sprintf(`{"id":%d,"name":"x`, i))
		for len(v) < size-2 {
			v = append(v, 'x')
		}
		return append(v, '"', '}')
	}
	snapshot := func(i int, e int64, outbox bool) persistence.Snapshot {
		sn := persistence.Snapshot{Job: "users-domains", Key: record.Key(fmt.Sprint("user-", i)), Epoch: e,
			State: value(i, 30), Offsets: record.OffsetsOf(map[string]int64{"users/0": int64(i), "domains/0": int64(3 * i)}),
			Parts: []persistence.Part{{Name: "l", Value: value(i, 60)}, {Name: "r:" + strconv.Itoa(3*i), Value: value(i, 45)},
				{Name: "r:" + strconv.Itoa(3*i+1), Value: value(i, 45)}, {Name: "r:" + strconv.Itoa(3*i+2), Value: value(i, 45)}}}
		if outbox {
			sn.Parts = append(sn.Parts, persistence.Part{Name: fmt.Sprintf("o:%016x", i), Value: value(i, 412)})
		}
		return sn
	}
	for _, run := range []struct {
		layout string
		outbox bool
		args   []string
	}{{"layout 1", false, nil}, {"layout 3", false, nil}, {"layout 1", true, nil}, {"layout 3", true, nil},
		{"layout 3", true, []string{"--hash-max-listpack-value", "1024"}}} {
		layout := run.layout
		snapshot := func(i int, e int64) persistence.Snapshot { return snapshot(i, e, run.outbox) }
		r := testutil.StartRedis(t, run.args...)
		s := newStore(t, r.Addr)
		if _, err := s.Lineage(ctx, "users-domains"); err != nil { // the job's keys, before the baseline
			t.Fatal(err)
		}
		if err := s.Save(ctx, []persistence.Snapshot{snapshot(-1, 0)}); err != nil { // a group's gen and timers keys
			t.Fatal(err)
		}
		before := usedMemory(t, s)
		if err := s.client.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if layout == "layout 1" {
				save1(t, s, snapshot(i, acquire1(t, s, "users-domains", snapshot(i, 0).Key)))
				continue
			}
			e, err := s.Acquire(ctx, "users-domains", snapshot(i, 0).Key)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Save(ctx, []persistence.Snapshot{snapshot(i, e)}); err != nil {
				t.Fatal(err)
			}
		}
		after := usedMemory(t, s)
		stats, err := s.client.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		l := layoutOf(s.prefix, "users-domains")
		gp := l.keyPrefix("user-7")
		var names []string
		if layout == "layout 1" {
			names = []string{stateKey1(gp, "user-7"), partsKey1(gp, "user-7"), epochKey1(gp, "user-7"), keysKey1(gp)}
		} else {
			names = []string{namesOf(t, s, "users-domains").keyHash("user-7")}
		}
		var desc []string
		for _, name := range names {
			enc, _ := s.client.ObjectEncoding(ctx, name).Result()
			use, _ := s.client.MemoryUsage(ctx, name).Result()
			desc = append(desc, fmt.Sprintf("%s: %s, MEMORY USAGE %d B", strings.TrimPrefix(name, gp), enc, use))
		}
		dbsize, _ := s.client.DBSize(ctx).Result()
		what := "base and 4 parts"
		if run.outbox {
			what = "base, 4 parts and a 412 B one"
		}
		if len(run.args) > 0 {
			what += " (redis-server " + strings.Join(run.args, " ") + ")"
		}
		t.Logf("%s, %s: %d keys, used_memory %d B per join key, %d Redis keys in all, %.1f server µs per key's Acquire and Save (EVALSHA); %s",
			layout, what, n, (after-before)/int64(n), dbsize, float64(commandUsec(stats, "evalsha"))/float64(n), strings.Join(desc, "; "))
	}
}

// commandUsec is the usec of cmd in an INFO commandstats answer.
func commandUsec(info, cmd string) int64 {
	for line := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":"); ok {
			for f := range strings.SplitSeq(rest, ",") {
				if v, ok := strings.CutPrefix(f, "usec="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					return n
				}
			}
		}
	}
	return 0
}

func usedMemory(t *testing.T, s *Store) int64 {
	t.Helper()
	info, err := s.client.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no used_memory in INFO memory")
	return 0
}
