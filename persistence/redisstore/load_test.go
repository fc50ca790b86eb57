package redisstore

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// TestStoreRedisDeltaOneRoundTrip: a batch of deltas is one EVALSHA that
// writes each key's changed part only (one HSET of the base, one of the
// part, one HDEL, no DEL of the hash), and LoadMany of many keys is one EVALSHA on one server.
func TestStoreRedisDeltaOneRoundTrip(t *testing.T) {
	r := testutil.StartRedis(t)
	s := newStore(t, r.Addr)
	ctx := context.Background()
	const n = 256
	keys := make([]record.Key, n)
	whole := make([]persistence.Snapshot, n)
	delta := make([]persistence.Snapshot, n)
	for i := range whole {
		keys[i] = record.Key(fmt.Sprint(i))
		var ps []persistence.Part
		for j := range 100 {
			ps = append(ps, persistence.Part{Name: fmt.Sprint("r:", j), Value: []byte("row")})
		}
		whole[i] = persistence.Snapshot{Job: "job", Key: keys[i], State: []byte("base"), Parts: ps}
		delta[i] = persistence.Snapshot{Job: "job", Key: keys[i], State: []byte("base2"), Delta: true,
			Parts: []persistence.Part{{Name: "r:7", Value: []byte("new")}, {Name: "r:8"}}}
	}
	if err := s.Save(ctx, whole); err != nil {
		t.Fatal(err)
	}
	h := &countingHook{}
	s.client.AddHook(h)
	if err := s.client.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	h.sent()
	if err := s.Save(ctx, delta); err != nil {
		t.Fatal(err)
	}
	if cmds, p := h.sent(); p != 0 || !slices.Equal(cmds, []string{"evalsha"}) {
		t.Fatalf("Save of deltas sent %d pipelines and commands %q; want one EVALSHA", p, cmds)
	}
	info, err := s.client.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]int{"set": 0, "hset": 2 * n, "hdel": n, "del": 0, "hlen": 0} {
		if got := commandCalls(info, cmd); got != want {
			t.Errorf("server saw %s called %d times, want %d", cmd, got, want)
		}
	}

	h.sent()
	got, err := s.LoadMany(ctx, "job", append(keys, "missing"))
	if err != nil {
		t.Fatal(err)
	}
	if cmds, p := h.sent(); p > 0 || len(cmds) < 1 || len(cmds) > 2 || cmds[0] != "evalsha" {
		t.Fatalf("LoadMany sent %d pipelines and commands %q; want one EVALSHA (and EVAL when cold)", p, cmds)
	}
	if len(got) != n+1 || len(got[n].State) != 0 || got[n].Key != "missing" {
		t.Fatalf("LoadMany returned %d snapshots, the missing key's %+v", len(got), got[len(got)-1])
	}
	for i, sn := range got[:n] {
		base, ps, err := stateparts.Unpack(sn.State)
		if err != nil || sn.Key != keys[i] || string(base) != "base2" || len(ps) != 99 {
			t.Fatalf("LoadMany[%d] = key %q base %q, %d parts, %v", i, sn.Key, base, len(ps), err)
		}
	}
}
