package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

const topic = "t"

// produce writes "prefix-i" to partition i%3 for i in [from, to).
func produce(t *testing.T, brokers []string, prefix string, from, to int) {
	t.Helper()
	if err := produceErr(brokers, prefix, from, to); err != nil {
		t.Fatal(err)
	}
}

func produceErr(brokers []string, prefix string, from, to int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, rs...).FirstErr()
}

// fastGroup makes rebalances quick in tests.
var fastGroup = []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.FetchMaxWait(200 * time.Millisecond)}

func open(t *testing.T, cfg Config) *Source {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := newSource(ctx, cfg, fastGroup...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readN reads until n messages arrived.
func readN(t *testing.T, s *Source, n int) []sources.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []sources.Message
	for len(out) < n {
		msgs, err := s.Read(ctx, 7)
		if err != nil {
			t.Fatalf("Read after %d of %d messages: %v", len(out), n, err)
		}
		if len(msgs) > 7 {
			t.Fatalf("Read returned %d > max 7", len(msgs))
		}
		out = append(out, msgs...)
	}
	if len(out) != n {
		t.Fatalf("read %d messages, want %d: %v", len(out), n, out)
	}
	return out
}

// noMore checks that nothing arrives for d.
func noMore(t *testing.T, s *Source, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	msgs, err := s.Read(ctx, 100)
	if !errors.Is(err, context.DeadlineExceeded) || len(msgs) != 0 {
		t.Fatalf("Read = %d messages (%v), %v; want nothing", len(msgs), msgs, err)
	}
}

// checkOrder fails unless offsets grow within each partition and each
// message's value matches its position.
func checkOrder(t *testing.T, msgs []sources.Message) {
	t.Helper()
	last := map[int32]int64{}
	for _, m := range msgs {
		if prev, ok := last[m.Pos.Partition]; ok && m.Pos.Offset <= prev {
			t.Fatalf("partition %d: offset %d after %d", m.Pos.Partition, m.Pos.Offset, prev)
		}
		last[m.Pos.Partition] = m.Pos.Offset
	}
}

// keys lists "partition@offset" sorted.
func keys(msgs []sources.Message) string {
	var ks []string
	for _, m := range msgs {
		ks = append(ks, fmt.Sprintf("%d@%02d", m.Pos.Partition, m.Pos.Offset))
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// want lists "partition@offset" for the given partitions and offset range.
func want(parts []int32, from, to int64) string {
	var ks []string
	for _, p := range parts {
		for o := from; o < to; o++ {
			ks = append(ks, fmt.Sprintf("%d@%02d", p, o))
		}
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// positions returns, per partition, the position of offset off.
func positions(name string, parts []int32, off int64) []record.Position {
	var ps []record.Position
	for _, p := range parts {
		ps = append(ps, record.Position{Source: name, Partition: p, Offset: off})
	}
	return ps
}

func (s *Source) ownedPartitions() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []int32
	for p := range s.mu.owned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

var all = []int32{0, 1, 2}

func TestKafkaSourceConfigValidate(t *testing.T) {
	err := Config{Brokers: []string{""}, StartOffset: "middle", SASL: &SASL{Mechanism: "gssapi"}, RevokeWait: -time.Second, TxnTimeout: 10 * time.Second}.Validate()
	for _, f := range []string{"Brokers[0]", "Topic", "Group", "StartOffset", "SASL.Mechanism", "SASL.User", "SASL.Password", "RevokeWait", "TxnTimeout 10s is under 1m15s"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate error %v does not name %s", err, f)
		}
	}
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "Brokers is required") {
		t.Errorf("Validate() = %v", err)
	}
	ok := Config{Brokers: []string{"b:9092"}, Topic: "t", Group: "g", SASL: &SASL{Mechanism: MechanismScramSHA512, User: "u", Password: "p"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestKafkaSourceResumeAfterCommit(t *testing.T) {
	brokers := testutil.StartKafka(t, 3, topic)
	produce(t, brokers, "v", 0, 30) // 10 records per partition
	cfg := Config{Name: "users", Brokers: brokers, Topic: topic, Group: "g"}

	s := open(t, cfg)
	msgs := readN(t, s, 30)
	checkOrder(t, msgs)
	if got := keys(msgs); got != want(all, 0, 10) {
		t.Fatalf("read %s", got)
	}
	for _, m := range msgs {
		if m.Pos.Source != "users" || string(m.Value) != fmt.Sprintf("v-%d", m.Pos.Offset*3+int64(m.Pos.Partition)) {
			t.Fatalf("message %v = %q", m.Pos, m.Value)
		}
	}
	ctx := context.Background()
	// Commit offsets 0..4 of each partition; other sources are ignored.
	if err := s.Commit(ctx, append(positions("users", all, 4), record.Position{Source: "x", Offset: 99})); err != nil {
		t.Fatal(err)
	}
	// Committing an older position does not move the offset back.
	if err := s.Commit(ctx, positions("users", all, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Read(ctx, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close = %v", err)
	}
	if err := s.Commit(ctx, positions("users", all, 9)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close = %v", err)
	}

	// Reopen, even with StartOffset latest: the committed offsets win.
	cfg.StartOffset = StartLatest
	s2 := open(t, cfg)
	msgs = readN(t, s2, 15)
	checkOrder(t, msgs)
	if got := keys(msgs); got != want(all, 5, 10) {
		t.Fatalf("after reopen read %s, want offsets 5..9", got)
	}
	noMore(t, s2, 500*time.Millisecond)
}

func TestKafkaSourceStartOffset(t *testing.T) {
	brokers := testutil.StartKafka(t, 3, topic)
	produce(t, brokers, "old", 0, 6)

	for _, start := range []string{"", StartCommitted, StartEarliest} {
		s := open(t, Config{Brokers: brokers, Topic: topic, Group: "g-" + start + "x", StartOffset: start})
		if got := keys(readN(t, s, 6)); got != want(all, 0, 2) {
			t.Fatalf("StartOffset %q read %s", start, got)
		}
		s.Close()
	}

	s := open(t, Config{Brokers: brokers, Topic: topic, Group: "g-latest", StartOffset: StartLatest})
	// The start offset is resolved after the group assigned the partitions,
	// so keep producing until the source sees new records.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var (
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 100; ; i += 3 {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if err := produceErr(brokers, "new", i, i+3); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	msgs, err := s.Read(ctx, 100)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if !strings.HasPrefix(string(m.Value), "new-") {
			t.Fatalf("StartOffset latest delivered %q", m.Value)
		}
	}
}

func TestKafkaSourceGroupSharesPartitions(t *testing.T) {
	brokers := testutil.StartKafka(t, 3, topic)
	produce(t, brokers, "v", 0, 30)
	// a commits none of what it read before the rebalance: its revoke
	// releases the partitions after RevokeWait (revoke_test.go).
	cfg := Config{Name: "in", Brokers: brokers, Topic: topic, Group: "g", RevokeWait: 100 * time.Millisecond}
	ctx := context.Background()

	a := open(t, cfg)
	msgsA := readN(t, a, 30) // a owns all partitions
	if got := keys(msgsA); got != want(all, 0, 10) {
		t.Fatalf("a read %s", got)
	}

	// b joins; the group moves at least one partition from a to b.
	b := open(t, cfg)
	bCtx, bCancel := context.WithCancel(ctx)
	defer bCancel()
	var (
		mu    sync.Mutex
		fromB []sources.Message
		done  = make(chan error, 1)
	)
	go func() {
		for {
			msgs, err := b.Read(bCtx, 100)
			if err != nil {
				done <- err
				return
			}
			mu.Lock()
			fromB = append(fromB, msgs...)
			mu.Unlock()
		}
	}()
	var ownedA, ownedB []int32
	testutil.WaitFor(t, 20*time.Second, func() error {
		ownedA, ownedB = a.ownedPartitions(), b.ownedPartitions()
		if len(ownedA) == 0 || len(ownedB) == 0 || len(ownedA)+len(ownedB) != 3 {
			return fmt.Errorf("a owns %v, b owns %v", ownedA, ownedB)
		}
		return nil
	})
	// a commits offsets 0..4 of every partition it read: only the
	// partitions it still owns are committed.
	if err := a.Commit(ctx, positions("in", all, 4)); err != nil {
		t.Fatal(err)
	}
	// b reads its partitions from the start: a's commit skipped them.
	testutil.WaitFor(t, 20*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if got, w := keys(fromB), want(ownedB, 0, 10); got != w {
			return fmt.Errorf("b read %s, want %s", got, w)
		}
		return nil
	})
	mu.Lock()
	checkOrder(t, fromB)
	if err := b.Commit(ctx, positions("in", ownedB, 9)); err != nil {
		t.Fatal(err)
	}
	fromB = nil
	mu.Unlock()

	// a leaves without committing more: b takes over a's partitions from
	// a's committed offsets and gets a's uncommitted records, once.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if got, w := keys(fromB), want(ownedA, 5, 10); got != w {
			return fmt.Errorf("b read %s, want %s", got, w)
		}
		return nil
	})
	bCancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("b.Read = %v", err)
	}
	mu.Lock()
	checkOrder(t, fromB)
	got := keys(fromB)
	mu.Unlock()
	if w := want(ownedA, 5, 10); got != w {
		t.Fatalf("b read %s, want %s", got, w)
	}
	if p := b.ownedPartitions(); len(p) != 3 {
		t.Fatalf("b owns %v", p)
	}
}

func TestKafkaSourceNewFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	if _, err := New(ctx, Config{Brokers: []string{addr}, Topic: "t", Group: "g"}); err == nil {
		t.Fatal("New without a broker succeeded")
	}
	if _, err := New(ctx, Config{}); err == nil {
		t.Fatal("New with empty config succeeded")
	}
}

// assignments records what Config.OnPartitions reports: the partitions a
// member holds, and the history of changes.
type assignments struct {
	mu      sync.Mutex
	held    map[int32]bool
	changes []string
}

func (a *assignments) on(assigned, revoked []int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held == nil {
		a.held = map[int32]bool{}
	}
	for _, p := range assigned {
		a.held[p] = true
	}
	for _, p := range revoked {
		delete(a.held, p)
	}
	a.changes = append(a.changes, fmt.Sprintf("+%v-%v", assigned, revoked))
}

func (a *assignments) partitions() []int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []int32
	for p := range a.held {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (a *assignments) has(p int32) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held[p]
}

// TestKafkaSourceOnPartitions checks that OnPartitions reports each partition
// as assigned before any of its records is read, follows a rebalance (the
// partitions moved are reported revoked by one member and assigned to the
// other), and reports nothing once the source is closed.
func TestKafkaSourceOnPartitions(t *testing.T) {
	brokers := testutil.StartKafka(t, 3, topic)
	produce(t, brokers, "v", 0, 30)
	var asgA, asgB assignments
	cfg := Config{Name: "in", Brokers: brokers, Topic: topic, Group: "g", RevokeWait: 100 * time.Millisecond} // nothing is committed
	cfgA, cfgB := cfg, cfg
	cfgA.OnPartitions, cfgB.OnPartitions = asgA.on, asgB.on

	a := open(t, cfgA)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for n := 0; n < 30; {
		msgs, err := a.Read(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if !asgA.has(m.Pos.Partition) {
				t.Fatalf("record %s read before its partition was reported assigned (reports %v)", m.Pos, asgA.changes)
			}
		}
		n += len(msgs)
	}
	if got := asgA.partitions(); fmt.Sprint(got) != fmt.Sprint(all) {
		t.Fatalf("a reported %v, want %v", got, all)
	}

	// b joins: a keeps reading (polls let the rebalance run), and each
	// member's reports follow its ownership.
	b := open(t, cfgB)
	bCtx, bCancel := context.WithCancel(context.Background())
	defer bCancel()
	readLoop := func(s *Source) chan error {
		done := make(chan error, 1)
		go func() {
			for {
				if _, err := s.Read(bCtx, 100); err != nil {
					done <- err
					return
				}
			}
		}()
		return done
	}
	doneA, doneB := readLoop(a), readLoop(b)
	testutil.WaitFor(t, 20*time.Second, func() error {
		ownedA, ownedB := a.ownedPartitions(), b.ownedPartitions()
		repA, repB := asgA.partitions(), asgB.partitions()
		if len(ownedA) == 0 || len(ownedB) == 0 || len(ownedA)+len(ownedB) != 3 ||
			fmt.Sprint(repA) != fmt.Sprint(ownedA) || fmt.Sprint(repB) != fmt.Sprint(ownedB) {
			return fmt.Errorf("a owns %v, reported %v; b owns %v, reported %v", ownedA, repA, ownedB, repB)
		}
		return nil
	})
	asgA.mu.Lock()
	revokedSome := false
	for _, c := range asgA.changes[1:] {
		revokedSome = revokedSome || !strings.HasSuffix(c, "-[]")
	}
	asgA.mu.Unlock()
	if !revokedSome {
		t.Fatalf("a's partitions moved to b, but a reported no revocation: %v", asgA.changes)
	}

	// a leaves: b is assigned everything; a's closed source reports nothing.
	repA := asgA.partitions()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() error {
		if got := asgB.partitions(); fmt.Sprint(got) != fmt.Sprint(all) {
			return fmt.Errorf("b reported %v", got)
		}
		return nil
	})
	if got := asgA.partitions(); fmt.Sprint(got) != fmt.Sprint(repA) {
		t.Errorf("a reported changes after Close: %v", asgA.changes)
	}
	bCancel()
	<-doneA
	<-doneB
}
