package actors

import (
	"runtime"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestBarePropsGoWithTheirKind registers bare Props that reach their
// kind's Props, as a node's do (Deps → budget → actor system → cluster →
// kinds), drops the kind, and checks that the registry forgets it: a
// registry entry that held its bare Props strongly kept the kind, and with
// it a closed node's whole actor system, for the life of the process.
func TestBarePropsGoWithTheirKind(t *testing.T) {
	count := func() (n int) {
		bare.Range(func(any, any) bool { n++; return true })
		return n
	}
	before := count()
	func() {
		type cycle struct{ kind *actor.Props }
		c := &cycle{}
		b := actor.PropsFromProducer(func() actor.Actor { _ = c.kind; return nil })
		kp := &kindProducer{bare: b}
		c.kind = actor.PropsFromProducer(kp.produce)
		registerBare(c.kind, b)
		if bareProps(c.kind) != b {
			t.Fatal("bareProps does not find the registered bare Props")
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for count() > before {
		if time.Now().After(deadline) {
			t.Fatalf("the bare Props registry still holds %d entries of a kind nothing refers to", count()-before)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
