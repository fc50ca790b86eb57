package node_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/ingest"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/persistence"
)

// TestNodeRollbackRereadsKafka is TestNodeRollbackRereadsStream with a
// Kafka source (kfake): the state Redis is snapshotted part-way, the node
// goes on and its group commits past the snapshot, then the state Redis is
// killed -9 and restarted from the snapshot while more records arrive. The
// node stops on the rollback; restarted, its source moves the partition
// back to the store's committed offset + 1 (the group's committed offset
// carries the lineage the store is behind), the lost range is applied
// again, and the view ends equal to the true join.
func TestNodeRollbackRereadsKafka(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "cdc"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	brokers := kc.ListenAddrs()
	view := testutil.StartRedis(t)
	state := testutil.StartRedis(t, "--dbfilename", "dump.rdb", "--save", "")
	h := cdcgen.Generate(cdcgen.Config{Seed: 25, Users: 20, Domains: 60, Changes: 900})
	ctx := context.Background()
	vc := redis.NewClient(&redis.Options{Addr: view.Addr})
	defer vc.Close()
	sc := redis.NewClient(&redis.Options{Addr: state.Addr})
	defer sc.Close()
	app, err := ingest.Kafka(brokers, "cdc")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	kcl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer kcl.Close()
	// committed(n) waits for the group's committed offset of cdc/0 to be n.
	committed := func(n int64) func() error {
		return func() error {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Group = "joinery"
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic, rt.Partitions = "cdc", []int32{0}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, kcl)
			if err != nil {
				return err
			}
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					if p.Offset == n {
						return nil
					}
					return fmt.Errorf("group committed %d, want %d", p.Offset, n)
				}
			}
			return errors.New("no committed offset")
		}
	}
	dir := t.TempDir()
	yml := "name: rewindk\n" + joinYAML + fmt.Sprintf(`
state: {store: redis, redis: {addr: %[2]q}}
sources: [{name: cdc, type: kafka, kafka: {brokers: [%[1]q], topic: cdc, group: joinery}, tables: {users: left, domains: right}}]
sinks: [{type: redis-hash, redis: {addr: %[3]q}, key: view}]
`, brokers[0], state.Addr, view.Addr)
	runNode := func() (*node.Node, context.CancelFunc, chan error) {
		n := start(t, parse(t, dir, yml))
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- n.Run(rctx) }()
		return n, cancel, done
	}
	third := len(h.Lines) / 3
	if err := app.Append(ctx, h.Lines[:third]); err != nil {
		t.Fatal(err)
	}
	n1, cancel1, done1 := runNode()
	testutil.WaitFor(t, time.Minute, committed(int64(third)))
	if err := sc.Save(ctx).Err(); err != nil { // the snapshot the restart goes back to
		t.Fatal(err)
	}
	if err := app.Append(ctx, h.Lines[third:2*third]); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, committed(int64(2*third)))
	state.Kill()
	state.Start() // from the snapshot: the second third's state is gone, its records committed
	if err := app.Append(ctx, h.Lines[2*third:]); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done1:
		if !errors.Is(err, persistence.ErrRollback) {
			t.Fatalf("the node on the rolled-back store stopped with %v, want a rollback error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the node did not stop on the rolled-back store")
	}
	cancel1()
	if err := n1.Close(ctx); err != nil {
		t.Fatal(err)
	}

	n2, cancel2, done2 := runNode()
	want := h.LeftJoin()
	testutil.WaitFor(t, time.Minute, func() error {
		if err := committed(int64(len(h.Lines)))(); err != nil {
			return err
		}
		if got := hashView(t, vc, "view"); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("view has %d rows, the join %d", len(got), len(want))
		}
		return nil
	})
	diff(t, "view after the rewind vs brute-force join", hashView(t, vc, "view"), want)
	if got, min := n2.Stats().In.Load(), int64(len(h.Lines)-2*third+third); got < min {
		t.Errorf("the restarted node read %d records, want at least %d (the lost third again, and the last)", got, min)
	}
	cancel2()
	if err := <-done2; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	if err := n2.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
