package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// TestBatchActorAnswersEachKeyInOrder: the batch actor hands each request
// to its key's actor and answers once, in request order: outputs with their
// rows, a gap refused as a single request would be, a request to an actor
// that is gone as a dead letter.
func TestBatchActorAnswersEachKeyInOrder(t *testing.T) {
	ctx := context.Background()
	store, system, spawn := embeddedKeyActors(t)
	WatchDeadLetters(system)
	batch, err := SpawnBatch(system, BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SpawnBatch(system, BatchOptions{}); err == nil {
		t.Fatal("a second batch actor spawned under the same name")
	}
	part := record.Position{Source: "s", Partition: 0}.PartitionID()
	apply := func(key string, off int64, prev map[string]int64, evs ...record.Event) *keypb.Apply {
		req := &keycore.Request{Prev: prev}
		for i, e := range evs {
			e.Key, e.Pos = record.Key(key), record.Position{Source: "s", Partition: 0, Offset: off + int64(i)}
			req.Events = append(req.Events, KeyEvent(e, ""))
		}
		a, err := EncodeRequest(record.Key(key), req, false)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	user := record.Event{Side: record.Left, Op: record.OpCreate, After: record.Row{"id": json.Number("7"), "name": "ann", "vip": true}}
	domain := record.Event{Side: record.Right, Op: record.OpCreate, After: record.Row{"id": json.Number("1"), "user_id": json.Number("7"), "host": "a.example"}}
	k7, k8 := spawn("7"), spawn("8")
	gone := spawn("9")
	system.Root.Stop(gone)
	time.Sleep(50 * time.Millisecond)

	req := &keypb.ApplyBatch{TimeoutMs: 5000,
		Applies: []*keypb.Apply{
			apply("7", 1, nil, user, domain),
			apply("8", 3, nil, record.Event{Side: record.Left, Op: record.OpCreate, After: record.Row{"id": json.Number("8")}}),
			apply("9", 4, nil, user),
			apply("7", 5, map[string]int64{part: 50}, user), // names an offset key 7 never got: a gap
		},
		Pids: []string{k7.Id, k8.Id, gone.Id, k7.Id}}
	res, err := system.Root.RequestFuture(batch, req, 10*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	ab, ok := res.(*keypb.AppliedBatch)
	if !ok || len(ab.Applied) != 4 {
		t.Fatalf("answer %#v, want an AppliedBatch of 4", res)
	}
	first := ab.Applied[0]
	if first.Error != "" || len(first.Outputs) != 1 {
		t.Fatalf("key 7: %+v, want one joined output", first)
	}
	o, err := DecodeOutput(first.Outputs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Outputs[0].Row) != 0 || len(first.Outputs[0].RowBin) == 0 {
		t.Errorf("output row not in the binary encoding: %+v", first.Outputs[0])
	}
	if !rowHas(o.Row, "a.example") {
		t.Errorf("output row %#v lacks the domain's host", o.Row)
	}
	if !rowHas(o.Row, "ann") {
		t.Errorf("output row %#v lacks the user's name", o.Row)
	}
	if ap := ab.Applied[1]; ap.Error != "" || ap.DeadLetter || ap.Timeout {
		t.Errorf("key 8: %+v, want applied", ap)
	}
	if ap := ab.Applied[2]; !ap.DeadLetter {
		t.Errorf("key 9 (actor gone): %+v, want a dead letter", ap)
	}
	if ap := ab.Applied[3]; !ap.Gap || ap.Error == "" {
		t.Errorf("key 7 with a gap: %+v, want refused as a gap", ap)
	}
	snap, err := store.Load(ctx, "j", "7")
	if off, _ := snap.Offsets.Get(part); err != nil || off != 2 {
		t.Fatalf("key 7 durable offsets %v, %v; want %s at 2 (the gapped request not applied)", snap.Offsets, err, part)
	}
}

// rowHas says whether some value of r, at any depth, is the string s.
func rowHas(r map[string]any, s string) bool {
	for _, v := range r {
		switch x := v.(type) {
		case string:
			if x == s {
				return true
			}
		case map[string]any:
			if rowHas(x, s) {
				return true
			}
		}
	}
	return false
}

// TestBatchGatherTimesOut: a key that does not answer by the deadline is
// answered with timeout, and the keys that did keep their answers.
func TestBatchGatherTimesOut(t *testing.T) {
	answered, silent, late := make(chan any, 1), make(chan any, 1), make(chan any, 1)
	answered <- &keypb.Applied{Skipped: 1}
	raw := make([]any, 4) // raw[2]: answered before sending (no reply channel)
	go func() {
		time.Sleep(10 * time.Millisecond)
		late <- DeadLetter{}
	}()
	gather(raw, []chan any{answered, silent, nil, late}, time.Now().Add(200*time.Millisecond))
	if ap, ok := raw[0].(*keypb.Applied); !ok || ap.Skipped != 1 {
		t.Errorf("answer 0: %#v", raw[0])
	}
	if ap, ok := raw[1].(*keypb.Applied); !ok || !ap.Timeout {
		t.Errorf("answer 1 (no answer): %#v, want timeout", raw[1])
	}
	if raw[2] != nil {
		t.Errorf("answer 2 (no reply channel) = %#v, want left alone", raw[2])
	}
	if _, ok := raw[3].(DeadLetter); !ok {
		t.Errorf("answer 3: %#v, want a dead letter", raw[3])
	}
	if ap := wireAnswer(raw[3]); !ap.DeadLetter {
		t.Errorf("wire answer 3: %+v, want a dead letter", ap)
	}
}

// TestBatchActorOwnerWrites: asked to (owner_writes) and able to (Write
// says written), the batch actor writes the applied keys' outputs before it
// answers, and says so (written), the outputs still in the answer; not
// asked, or without a shared sink, or when the write fails, it writes
// nothing it reports written, and the sender writes them.
func TestBatchActorOwnerWrites(t *testing.T) {
	tests := []struct {
		name        string
		ownerWrites bool
		written     bool  // what Write says
		writeErr    error // what Write returns
		wantCalls   int
		wantWritten bool
	}{
		{"asked and written", true, true, nil, 1, true},
		{"not asked", false, true, nil, 0, false},
		{"no shared sink here", true, false, nil, 1, false},
		{"write failed", true, true, errors.New("broker down"), 1, false},
	}
	_, system, spawn := embeddedKeyActors(t)
	WatchDeadLetters(system)
	var mu sync.Mutex
	var calls int
	var got []record.Output
	var tc struct {
		written bool
		err     error
	}
	batch, err := SpawnBatch(system, BatchOptions{Write: func(ctx context.Context, outs []record.Output) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := ctx.Deadline(); !ok {
			t.Error("Write's context has no deadline")
		}
		calls++
		got = append(got, outs...)
		return tc.written, tc.err
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			calls, got, tc.written, tc.err = 0, nil, c.written, c.writeErr
			mu.Unlock()
			key := fmt.Sprint(100 + i)
			pid := spawn(key)
			kr := &keycore.Request{}
			for j, e := range []record.Event{
				{Side: record.Left, Op: record.OpCreate, After: record.Row{"id": json.Number(key), "name": "ann"}},
				{Side: record.Right, Op: record.OpCreate, After: record.Row{"id": json.Number("1"), "user_id": json.Number(key), "host": "a.example"}},
			} {
				e.Key, e.Pos = record.Key(key), record.Position{Source: "s", Partition: 0, Offset: int64(j + 1)}
				kr.Events = append(kr.Events, KeyEvent(e, ""))
			}
			a, err := EncodeRequest(record.Key(key), kr, false)
			if err != nil {
				t.Fatal(err)
			}
			req := &keypb.ApplyBatch{TimeoutMs: 5000, OwnerWrites: c.ownerWrites, Applies: []*keypb.Apply{a}, Pids: []string{pid.Id}}
			res, err := system.Root.RequestFuture(batch, req, 10*time.Second).Result()
			if err != nil {
				t.Fatal(err)
			}
			ab := res.(*keypb.AppliedBatch)
			if len(ab.Applied) != 1 || ab.Applied[0].Error != "" || len(ab.Applied[0].Outputs) != 1 {
				t.Fatalf("answer %+v, want one applied key with one output", ab)
			}
			mu.Lock()
			defer mu.Unlock()
			if calls != c.wantCalls || ab.Written != c.wantWritten {
				t.Fatalf("Write called %d times, written %v; want %d, %v", calls, ab.Written, c.wantCalls, c.wantWritten)
			}
			if c.wantCalls > 0 {
				o, err := DecodeOutput(ab.Applied[0].Outputs[0])
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || got[0].ID != o.ID {
					t.Errorf("Write got %+v, want the answered output %s", got, o.ID)
				}
			}
		})
	}
}

// TestBatchActorRefusesMissingPID: a request that names no key actor is
// answered with an error, not dropped.
func TestBatchActorRefusesMissingPID(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	batch, err := SpawnBatch(system, BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := system.Root.RequestFuture(batch, &keypb.ApplyBatch{Applies: []*keypb.Apply{{Key: "1"}}}, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	ab, _ := res.(*keypb.AppliedBatch)
	if ab == nil || len(ab.Applied) != 1 || ab.Applied[0].Error == "" {
		t.Fatalf("answer %#v, want one error", res)
	}
}
