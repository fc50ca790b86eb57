package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
)

// fleet is a changing list of live members (Config.Members).
type fleet struct {
	mu    sync.Mutex
	names []string
}

func (f *fleet) set(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names = names
}

func (f *fleet) members() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.names)
}

// groupMembers asks the brokers how many members group has.
func groupMembers(ctx context.Context, cl *kgo.Client, group string) (int, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, g := range resp.Groups {
		n += len(g.Members)
	}
	return n, nil
}

// TestKafkaSourceExpect: with Expect (cluster.expect) 3, a source does not
// join its consumer group — is assigned nothing, reads nothing — while the
// fleet has fewer live members, and joins once the third is live, so the
// group forms with the three and each reads its key groups; a source whose
// fleet never reaches Expect joins after ExpectWait and reads every
// partition.
func TestKafkaSourceExpect(t *testing.T) {
	const partitions = 6
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "users"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("users"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for i := range 60 {
		rs = append(rs, &kgo.Record{Key: fmt.Appendf(nil, `{"user_id":%d}`, i), Value: []byte("v")})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f := &fleet{}
	var (
		mu       sync.Mutex
		reported []string // "name+[partitions]" in order
	)
	names := []string{"a", "b", "c"}
	srcs := map[string]*Source{}
	for i, name := range names {
		f.set(names[:i+1]...)
		srcs[name] = open(t, Config{Brokers: brokers, Topic: "users", Group: "g", KeyGroups: true, Member: name,
			Members: f.members, Expect: 3, ExpectWait: 30 * time.Second,
			OnPartitions: func(assigned, _ []int32) {
				mu.Lock()
				reported = append(reported, fmt.Sprintf("%s+%v", name, assigned))
				mu.Unlock()
			}})
		if i == len(names)-1 {
			break
		}
		// Short of the expected members: nobody joined, nothing is read.
		time.Sleep(300 * time.Millisecond)
		if n, err := groupMembers(ctx, cl, "g"); err != nil || n != 0 {
			t.Fatalf("%d of 3 members live: the group has %d members (%v), want none", i+1, n, err)
		}
		noMore(t, srcs[name], 200*time.Millisecond)
		mu.Lock()
		if len(reported) > 0 {
			t.Fatalf("%d of 3 members live: assignments %v, want none", i+1, reported)
		}
		mu.Unlock()
	}
	// The third is live: the group forms with the three, each reading the
	// key groups the balancer gives its name.
	owner := streamshard.Assign(partitions, names)
	testutil.WaitFor(t, 30*time.Second, func() error {
		for _, name := range names {
			if got, want := srcs[name].ownedPartitions(), mine(owner, name); !slices.Equal(got, want) {
				return fmt.Errorf("%s owns %v, want %v", name, got, want)
			}
		}
		return nil
	})
	for _, name := range names {
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		msgs, err := srcs[name].Read(rctx, 100)
		rcancel()
		if err != nil || len(msgs) == 0 {
			t.Fatalf("%s read %v, %v", name, msgs, err)
		}
		for _, m := range msgs {
			if owner[m.Pos.Partition] != name {
				t.Errorf("%s read %s, of %s's key group", name, m.Pos, owner[m.Pos.Partition])
			}
		}
	}

	t.Run("closed while waiting", func(t *testing.T) {
		lone := &fleet{}
		lone.set("d")
		d := open(t, Config{Brokers: brokers, Topic: "users", Group: "closed", Members: lone.members, Expect: 3, ExpectWait: time.Minute})
		start := time.Now()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("Close took %v while the source waited for its expected members", took)
		}
		if n, err := groupMembers(ctx, cl, "closed"); err != nil || n != 0 {
			t.Errorf("closed before its members came: group has %d members (%v)", n, err)
		}
	})

	t.Run("wait bounded", func(t *testing.T) {
		lone := &fleet{}
		lone.set("d") // e and f never come
		const wait = 300 * time.Millisecond
		start := time.Now()
		d := open(t, Config{Brokers: brokers, Topic: "users", Group: "solo", Members: lone.members, Expect: 3, ExpectWait: wait})
		got := readN(t, d, 60)
		if took := time.Since(start); took < wait {
			t.Errorf("d read after %v, before ExpectWait %v", took, wait)
		}
		parts := map[int32]bool{}
		for _, m := range got {
			parts[m.Pos.Partition] = true
		}
		if len(parts) != partitions {
			t.Errorf("d read partitions %v, want all %d", parts, partitions)
		}
	})
}
