package redisstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// TestStoreClusterRetryTryAgain holds a slot migration half done: the slot
// of one slot group is MIGRATING on its master and IMPORTING on another,
// and some of its keys have moved. A Save and a LoadMany over that group
// and others (one pipeline per master, the split group's script not first
// in it) are answered TRYAGAIN for the split group for as long as the
// migration is held; they retry it (retryable, runScriptsWait) instead of
// failing, and end with the right data once the slot has moved. The keys'
// direct answers during the hold (ASK for a moved key on the old master,
// TRYAGAIN for keys on both sides) are what retryable classifies as
// retryable; an unknown command is not.
func TestStoreClusterRetryTryAgain(t *testing.T) {
	c := testutil.StartRedisCluster(t, 3)
	s := newClusterStore(t, c, "try")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const job, moving = "try", 17
	slot := int(crc16(groupTag(job, moving)) % clusterSlots)
	from := c.Owner(slot)
	to := (from + 1) % len(c.Masters)
	// Keys of the moving group, and keys of other groups on the same
	// master, ahead of it in the batch: their scripts come first in the
	// master's pipeline.
	var split, others []record.Key
	for i := 0; len(split) < 40 || len(others) < 20; i++ {
		k := record.Key(fmt.Sprint("key-", i))
		g := groupOf(string(k))
		switch {
		case g == moving:
			split = append(split, k)
		case c.Owner(int(crc16(groupTag(job, g))%clusterSlots)) == from && len(others) < 20:
			others = append(others, k)
		}
	}
	all := append(slices.Clone(others), split...)
	batch := func(v string) []persistence.Snapshot {
		var b []persistence.Snapshot
		for _, k := range all {
			b = append(b, persistence.Snapshot{Job: job, Key: k, State: []byte(v + string(k)),
				Offsets: record.OffsetsOf(map[string]int64{"p/0": 1}), HasTimer: true, NextTimer: 7})
		}
		return b
	}
	if err := s.Save(ctx, batch("before ")); err != nil {
		t.Fatal(err)
	}
	src := redis.NewClient(&redis.Options{Addr: c.Masters[from].Addr})
	defer src.Close()
	tryAgains := func() int {
		n := 0
		for _, m := range c.Masters {
			cl := redis.NewClient(&redis.Options{Addr: m.Addr})
			info, err := cl.Info(ctx, "errorstats").Result()
			_ = cl.Close()
			if err != nil {
				t.Fatal(err)
			}
			n += errorCount(info, "TRYAGAIN")
		}
		return n
	}
	inSlot, err := src.ClusterGetKeysInSlot(ctx, slot, 1000).Result()
	if err != nil {
		t.Fatal(err)
	}

	type result struct {
		what string
		err  error
		took time.Duration
	}
	results := make(chan result, 2)
	held := false
	c.MigrateSlot(slot, to, 5, func(i int) {
		if i != 0 {
			return
		}
		held = true
		// The slot is split: 5 keys on the new master, the rest on the old.
		left, err := src.ClusterGetKeysInSlot(ctx, slot, 1000).Result()
		if err != nil {
			t.Fatal(err)
		}
		var moved []string
		for _, k := range inSlot {
			if !slices.Contains(left, k) {
				moved = append(moved, k)
			}
		}
		if len(moved) == 0 || len(left) == 0 {
			t.Fatalf("after the first batch %d keys moved and %d stayed; want both", len(moved), len(left))
		}
		askErr := src.Get(ctx, moved[0]).Err()
		tryErr := src.MGet(ctx, moved[0], left[0]).Err()
		unknown := src.Do(ctx, "NO-SUCH-COMMAND").Err()
		for _, tc := range []struct {
			what string
			err  error
			want bool
		}{{"GET of a moved key", askErr, true}, {"MGET of a moved and a staying key", tryErr, true}, {"an unknown command", unknown, false}} {
			if tc.err == nil || retryable(tc.err) != tc.want {
				t.Errorf("%s: %v: retryable = %v, want %v", tc.what, tc.err, retryable(tc.err), tc.want)
			}
		}
		before := tryAgains()
		began := time.Now()
		go func() {
			err := s.Save(ctx, batch("after "))
			results <- result{"Save", err, time.Since(began)}
			_, err = s.LoadMany(ctx, job, all)
			results <- result{"LoadMany", err, time.Since(began)}
		}()
		// Held until the split group's script was answered TRYAGAIN a few
		// times (over some backoffs).
		testutil.WaitFor(t, 30*time.Second, func() error {
			select {
			case r := <-results:
				t.Fatalf("%s returned (%v) while the slot was split", r.what, r.err)
			default:
			}
			if n := tryAgains() - before; n < 8 {
				return fmt.Errorf("%d TRYAGAIN answers since the hold", n)
			}
			return nil
		})
		t.Logf("held the migration %s, %d TRYAGAIN answers", time.Since(began).Round(time.Millisecond), tryAgains()-before)
	})
	if !held {
		t.Fatal("the migration never got past its first batch")
	}
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("%s during the held migration: %v (retryable %v)", r.what, r.err, retryable(r.err))
		}
		t.Logf("%s returned %s after the hold began", r.what, r.took.Round(time.Millisecond))
	}
	got, err := s.LoadMany(ctx, job, all)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range all {
		if want := "after " + string(k); string(got[i].State) != want {
			t.Fatalf("Load(%s) = %q, want %q", k, got[i].State, want)
		}
	}
	if c.Owner(slot) != to {
		t.Fatalf("slot %d did not move to master %d", slot, to)
	}
}
