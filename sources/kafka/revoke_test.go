package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources"
)

// TestKafkaSourceRevokeWaitsForCommits: a rebalance that takes partitions
// from a member waits, before it releases them, for the records the member
// delivered from them to be committed — the batches in flight completing
// during the revoke — so their new owner resumes after them instead of
// reading them again. A member that commits nothing releases them after
// RevokeWait, and the new owner reads them again (at least once).
func TestKafkaSourceRevokeWaitsForCommits(t *testing.T) {
	tests := []struct {
		name   string
		commit bool          // a commits what it delivered once its revoke waits
		wait   time.Duration // RevokeWait
	}{
		{"in-flight batches commit during the revoke", true, 20 * time.Second},
		{"nothing committed: released after RevokeWait", false, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			brokers := testutil.StartKafka(t, 3, topic)
			produce(t, brokers, "v", 0, 30)
			var (
				mu        sync.Mutex
				releasedA time.Time // a reported partitions revoked: the revoke returned
				timedOut  []int32   // what a's OnRevokeTimeout was told
			)
			cfg := Config{Name: "in", Brokers: brokers, Topic: topic, Group: "g", RevokeWait: tt.wait}
			cfgA := cfg
			cfgA.OnPartitions = func(_, revoked []int32) {
				if len(revoked) > 0 {
					mu.Lock()
					if releasedA.IsZero() {
						releasedA = time.Now()
					}
					mu.Unlock()
				}
			}
			cfgA.OnRevokeTimeout = func(parts []int32, _ time.Duration) {
				mu.Lock()
				timedOut = append(timedOut, parts...)
				mu.Unlock()
			}
			a := open(t, cfgA)
			readN(t, a, 30) // a owns every partition; its 30 records are in flight
			revoking := make(chan []int32, 1)
			a.mu.Lock()
			a.mu.revoking = func(parts []int32) { revoking <- parts }
			a.mu.Unlock()

			b := open(t, cfg) // b joins: the group takes partitions from a
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var fromB []sources.Message
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					msgs, err := b.Read(ctx, 100)
					if err != nil {
						return
					}
					mu.Lock()
					fromB = append(fromB, msgs...)
					mu.Unlock()
				}
			}()
			var parts []int32
			select {
			case parts = <-revoking:
			case <-time.After(30 * time.Second):
				t.Fatal("a's revoke did not wait for its delivered records")
			}
			waiting := time.Now()
			if tt.commit { // the batches in flight complete while the revoke waits
				if err := a.Commit(context.Background(), positions("in", all, 9)); err != nil {
					t.Fatalf("commit during the revoke: %v", err)
				}
			}
			var ownedA, ownedB []int32
			testutil.WaitFor(t, 40*time.Second, func() error {
				ownedA, ownedB = a.ownedPartitions(), b.ownedPartitions()
				if len(ownedA) == 0 || len(ownedB) == 0 || len(ownedA)+len(ownedB) != 3 {
					return fmt.Errorf("a owns %v, b owns %v", ownedA, ownedB)
				}
				return nil
			})
			slices.Sort(parts)
			if !slices.Equal(parts, ownedB) {
				t.Fatalf("a's revoke waited for %v; b owns %v", parts, ownedB)
			}
			mu.Lock()
			held := releasedA.Sub(waiting)
			told := slices.Clone(timedOut)
			mu.Unlock()
			slices.Sort(told)
			switch {
			case !tt.commit && !slices.Equal(told, ownedB):
				t.Errorf("OnRevokeTimeout told %v, want the partitions released uncommitted %v", told, ownedB)
			case tt.commit && len(told) > 0:
				t.Errorf("OnRevokeTimeout told %v, but everything in flight was committed", told)
			}
			// b's partitions resume after what a committed: one more record
			// each shows where.
			produce(t, brokers, "w", 30, 33)
			from := int64(0) // nothing committed: b reads a's records again
			if tt.commit {
				from = 10
				if held >= tt.wait {
					t.Errorf("the revoke held a's partitions %v after the commit, up to RevokeWait %v", held, tt.wait)
				}
			} else if held < tt.wait {
				t.Errorf("the revoke released a's uncommitted partitions after %v, before RevokeWait %v", held, tt.wait)
			}
			testutil.WaitFor(t, 20*time.Second, func() error {
				mu.Lock()
				defer mu.Unlock()
				if got, w := keys(fromB), want(ownedB, from, 11); got != w {
					return fmt.Errorf("b read %s, want %s", got, w)
				}
				return nil
			})
			cancel()
			<-done
		})
	}
}
