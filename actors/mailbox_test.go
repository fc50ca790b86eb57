package actors

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/keycore"
)

// TestKeyActorMailboxAnswersBehindPoison: requests queued behind a poison
// pill (a key actor passivating) are answered as dead letters at once — a
// request future gets ErrDeadLetter, a LocalApply's Reply a DeadLetter — so
// their senders resend them. protoactor's own mailbox drops them and their
// senders wait out their timeout: the "plain" case shows it, so the test
// fails if the mailbox stops doing its job.
func TestKeyActorMailboxAnswersBehindPoison(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mailbox  actor.MailboxProducer
		answered bool
	}{
		{"deadletter", deadLetterMailbox(), true},
		{"plain", actor.UnboundedLockfree(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			system := actor.NewActorSystem()
			defer system.Shutdown()
			WatchDeadLetters(system)
			started, release := make(chan struct{}), make(chan struct{})
			pid := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
				switch ctx.Message().(type) {
				case string: // "block": hold the mailbox while the rest queues
					close(started)
					<-release
				case *keypb.Apply:
					ctx.Respond(&keypb.Applied{})
				}
			}, actor.WithMailbox(tc.mailbox)))
			system.Root.Send(pid, "block")
			<-started
			system.Root.Poison(pid)
			const wait = time.Second
			futs := make([]*actor.Future, 3)
			for i := range futs {
				futs[i] = system.Root.RequestFuture(pid, &keypb.Apply{Key: "k"}, wait)
			}
			reply := make(chan any, 1)
			system.Root.Send(pid, &LocalApply{Req: &keycore.Request{}, Reply: ReplyChan(reply)})
			close(release)

			for i, f := range futs {
				_, err := f.Result()
				switch {
				case tc.answered && !errors.Is(err, actor.ErrDeadLetter):
					t.Errorf("request %d behind the pill: %v, want a dead letter", i, err)
				case !tc.answered && !errors.Is(err, actor.ErrTimeout):
					t.Errorf("plain mailbox, request %d behind the pill: %v, want protoactor's silent drop (a timeout)", i, err)
				}
			}
			select {
			case x := <-reply:
				if _, ok := x.(DeadLetter); !ok || !tc.answered {
					t.Errorf("LocalApply behind the pill answered %T (answered=%v)", x, tc.answered)
				}
			case <-time.After(wait):
				if tc.answered {
					t.Error("LocalApply behind the pill never answered")
				}
			}
		})
	}
}

// TestMPSCQueueConcurrent: values pushed by several goroutines at once
// are each popped once, in each producer's order, while the consumer
// recycles the nodes it is done with (nodePool) under the producers.
func TestMPSCQueueConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name               string
		producers, perProd int
	}{
		{"one producer", 1, 20000},
		{"eight producers", 8, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q mpscQueue
			q.init()
			type item struct{ p, i int }
			done := make(chan struct{})
			for p := range tc.producers {
				go func() {
					for i := range tc.perProd {
						q.push(item{p, i})
					}
					done <- struct{}{}
				}()
			}
			next := make([]int, tc.producers)
			deadline := time.Now().Add(30 * time.Second)
			for got := 0; got < tc.producers*tc.perProd; {
				x := q.pop()
				if x == nil {
					if time.Now().After(deadline) {
						t.Fatalf("%d of %d values popped in 30 s", got, tc.producers*tc.perProd)
					}
					runtime.Gosched()
					continue
				}
				it := x.(item)
				if it.i != next[it.p] {
					t.Fatalf("producer %d: popped %d, want %d", it.p, it.i, next[it.p])
				}
				next[it.p]++
				got++
			}
			for range tc.producers {
				<-done
			}
			if x := q.pop(); x != nil {
				t.Fatalf("popped %v after every value", x)
			}
		})
	}
}
