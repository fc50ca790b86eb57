package node_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/kafka"
)

// eosInput is users ⋈ domains as Debezium changes over a 2-partition
// topic: users 1..users, domains 1..domains of user d%users+1, every third
// domain renamed, every fifth moved to another user; and the true join's
// final rows (left join: a user without domains padded),
// "user_id,domain_id" -> "firstname|lastname|domain_name".
func eosInput(users, domains int) (recs []*kgo.Record, want map[string]string) {
	change := func(table, op string, before, after string) []byte {
		b := "null"
		if before != "" {
			b = before
		}
		a := "null"
		if after != "" {
			a = after
		}
		return fmt.Appendf(nil, `{"op":%q,"before":%s,"after":%s,"source":{"table":%q}}`, op, b, a, table)
	}
	user := func(u int) string { return fmt.Sprintf(`{"id":%d,"firstname":"f%d","lastname":"l%d"}`, u, u, u) }
	dom := func(d, u int, name string) string {
		return fmt.Sprintf(`{"id":%d,"user_id":%d,"domain_name":%q}`, d, u, name)
	}
	// A row's changes go to one partition (its table and id), in order.
	add := func(table string, id int, v []byte) {
		recs = append(recs, &kgo.Record{Topic: "cdc", Key: fmt.Appendf(nil, "%s/%d", table, id), Value: v})
	}
	for u := 1; u <= users; u++ {
		add("users", u, change("users", "c", "", user(u)))
	}
	final := map[int][2]any{} // domain -> user, name
	for d := 1; d <= domains; d++ {
		u, name := d%users+1, fmt.Sprint("d", d)
		add("domains", d, change("domains", "c", "", dom(d, u, name)))
		final[d] = [2]any{u, name}
	}
	for d := 1; d <= domains; d++ {
		u, name := final[d][0].(int), final[d][1].(string)
		switch {
		case d%5 == 0:
			nu := (u % users) + 1
			add("domains", d, change("domains", "u", dom(d, u, name), dom(d, nu, name)))
			final[d] = [2]any{nu, name}
		case d%3 == 0:
			add("domains", d, change("domains", "u", dom(d, u, name), dom(d, u, name+"x")))
			final[d] = [2]any{u, name + "x"}
		}
	}
	want = map[string]string{}
	has := map[int]bool{}
	for d, f := range final {
		u := f[0].(int)
		has[u] = true
		want[fmt.Sprintf("%d,%d", u, d)] = fmt.Sprintf("f%d|l%d|%s", u, u, f[1])
	}
	for u := 1; u <= users; u++ {
		if !has[u] { // a left join pads a user without domains
			want[fmt.Sprintf("%d,<nil>", u)] = fmt.Sprintf("f%d|l%d|<nil>", u, u)
		}
	}
	return recs, want
}

// eosRead reads every record of topic out at the isolation level, to its
// end (the last stable offset for read_committed).
func eosRead(t *testing.T, brokers []string, committed bool) []*kgo.Record {
	t.Helper()
	return testutil.ReadKafka(t, brokers, "out", committed, 20*time.Second)
}

// eosCheck checks a read_committed reading of out: each output id once,
// and the changelog folded (each row's newest seq deciding) equals want.
func eosCheck(t *testing.T, recs []*kgo.Record, want map[string]string) {
	t.Helper()
	ids := map[string]int{}
	table := map[string]string{}
	seqs := map[string]uint64{}
	var dups []string
	for _, r := range recs {
		var id string
		for _, h := range r.Headers {
			if h.Key == kafka.IDHeader {
				id = string(h.Value)
			}
		}
		if ids[id]++; ids[id] == 2 {
			dups = append(dups, id)
		}
		o, err := changelog.DecodeChangelog(r.Value)
		if err != nil {
			t.Fatalf("%s: %v", r.Value, err)
		}
		// Each row's newest seq decides, as the table sink folds: two
		// readers' transactions commit one key's changes in no fixed order.
		if o.Seq <= seqs[o.PK] {
			continue
		}
		seqs[o.PK] = o.Seq
		key := fmt.Sprintf("%v,%v", o.Row["user_id"], o.Row["domain_id"])
		switch o.Kind {
		case record.Insert, record.UpdateAfter:
			table[key] = fmt.Sprintf("%v|%v|%v", o.Row["firstname"], o.Row["lastname"], o.Row["domain_name"])
		default:
			delete(table, key)
		}
	}
	if len(dups) > 0 {
		sort.Strings(dups)
		t.Errorf("a read_committed consumer saw %d output ids more than once: %v", len(dups), dups[:min(5, len(dups))])
	}
	if d := mapDiff(table, want); d != "" {
		t.Errorf("the committed changelog folded (%d rows) is not the true join (%d rows):\n%s", len(table), len(want), d)
	}
}

func mapDiff(got, want map[string]string) string {
	var b strings.Builder
	for k, v := range want {
		if got[k] != v {
			fmt.Fprintf(&b, "  %s: got %q, want %q\n", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "  %s: got %q, want none\n", k, v)
		}
	}
	return b.String()
}

// eosJob is the users ⋈ domains job reading cdc with an exactly-once
// Kafka sink out and the dead-letter topic dlq, its state in Redis at addr.
func eosJob(brokers []string, addr, cluster string) string {
	return "name: eos\n" + joinYAML + fmt.Sprintf(`sources: [{name: cdc, type: kafka, kafka: {brokers: [%[1]q], topic: cdc, group: g}, tables: {users: left, domains: right}}]
sinks: [{type: kafka, kafka: {brokers: [%[1]q], topic: out, exactly_once: true}}]
dead_letter: {type: kafka, kafka: {brokers: [%[1]q], topic: dlq}}
state: {store: redis, redis: {addr: %[2]q}}
cluster: {%[3]s}
`, brokers[0], addr, cluster)
}

func eosCluster(t *testing.T) ([]string, *kfake.Cluster, *kgo.Client) {
	t.Helper()
	kc, brokers := testutil.KafkaCluster(t, kfake.SeedTopics(2, "cdc"), kfake.SeedTopics(1, "out", "dlq"))
	return brokers, kc, testutil.KafkaClient(t, brokers)
}

// TestNodeKafkaExactlyOnceZombieFenced: a node writing users ⋈ domains to
// an exactly-once Kafka sink is cut off mid-transaction — its EndTxn
// commit held by the broker — and a new incarnation of its producer (the
// same transactional id, as a restarted node with the same node_name
// takes) starts meanwhile: the held transaction is aborted, and once
// released the old incarnation, now a zombie, is fenced (its commit
// refused for its older producer epoch) and its Run stops. A node started
// again over the same state store re-reads from the committed offsets; the
// keys re-send the outputs the aborted transaction carried, with the same
// ids. A read_committed consumer then reads each output id once and the
// folded changelog is the true join; a read_uncommitted one sees the
// aborted records too (ids twice). A record dead-lettered in the aborted
// transaction is, likewise, read_committed once.
func TestNodeKafkaExactlyOnceZombieFenced(t *testing.T) {
	brokers, kc, prod := eosCluster(t)
	rs := testutil.StartRedis(t)
	recs, want := eosInput(10, 60)
	half := len(recs) / 2
	// A record that is not JSON, dead-lettered in the transaction that is
	// cut off, and again in the one that commits.
	recs = append(recs, &kgo.Record{Topic: "cdc", Key: []byte("bad"), Value: []byte("not json")})
	if err := prod.ProduceSync(context.Background(), recs[:half]...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Hold the first EndTxn that commits after the first half is read;
	// note whether its transaction wrote a dead letter.
	var hold, dlqInTxn, heldDLQ atomic.Bool
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	dlq := topicID(t, prod, "dlq")
	kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		for _, tp := range req.(*kmsg.ProduceRequest).Topics {
			if tp.Topic == "dlq" || tp.TopicID == dlq {
				dlqInTxn.Store(true)
			}
		}
		return nil, nil, false
	})
	kc.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		if r := req.(*kmsg.EndTxnRequest); r.Commit && hold.Load() {
			once.Do(func() {
				heldDLQ.Store(dlqInTxn.Load())
				close(held)
				kc.SleepControl(func() { <-release })
			})
		}
		dlqInTxn.Store(false)
		return nil, nil, false
	})

	dir := t.TempDir()
	a := start(t, parse(t, dir, eosJob(brokers, rs.Addr, "node_name: n1")))
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctxA) }()
	testutil.WaitFor(t, 30*time.Second, testutil.KafkaCommitted(prod, "g", 2, "cdc"))
	hold.Store(true)
	if err := prod.ProduceSync(context.Background(), recs[half:]...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("no transaction commit of the second half reached the broker")
	}
	// A new incarnation of n1's producer: its InitProducerID aborts the
	// held transaction and bumps the epoch.
	zid := "joinery-eos-cdc-n1"
	z, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(zid))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := z.ProducerID(context.Background()); err != nil {
		t.Fatalf("init producer id %s: %v", zid, err)
	}
	z.Close()
	close(release)
	select {
	case err := <-doneA:
		if err == nil || !strings.Contains(err.Error(), "transaction") {
			t.Fatalf("the zombie's Run returned %v, want its transaction's end refused", err)
		}
		t.Logf("the zombie stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the zombie went on after its producer was fenced")
	}
	_ = a.Close(context.Background())

	b := start(t, parse(t, dir, eosJob(brokers, rs.Addr, "node_name: n1")))
	runAll(t, []*node.Node{b})
	testutil.WaitFor(t, 60*time.Second, testutil.KafkaCommitted(prod, "g", 2, "cdc"))

	eosCheck(t, eosRead(t, brokers, true), want)
	all := eosRead(t, brokers, false)
	twice := idsTwice(all)
	dead := testutil.ReadKafka(t, brokers, "dlq", true, 20*time.Second)
	deadAll := testutil.ReadKafka(t, brokers, "dlq", false, 20*time.Second)
	t.Logf("dead letters: read_committed %d, read_uncommitted %d (the aborted transaction wrote one: %v)", len(dead), len(deadAll), heldDLQ.Load())
	if len(dead) != 1 || !strings.Contains(string(dead[0].Value), "not json") || !dead[0].Attrs.IsTransactional() {
		t.Errorf("read_committed dead letters: %d, want the bad record once, written in a transaction", len(dead))
	}
	switch {
	case heldDLQ.Load() && len(deadAll) != 2:
		t.Errorf("read_uncommitted dead letters: %d, want 2 (the aborted transaction's and the committed one's)", len(deadAll))
	case !heldDLQ.Load() && len(deadAll) != 1:
		t.Errorf("read_uncommitted dead letters: %d, want 1 (the aborted transaction wrote none)", len(deadAll))
	}
	t.Logf("read_uncommitted: %d records, %d ids twice (the aborted transaction's)", len(all), twice)
	if twice == 0 {
		t.Errorf("read_uncommitted saw no id twice: the aborted transaction carried nothing the test could see")
	}
}

// TestNodeKafkaExactlyOnce: users ⋈ domains from a 2-partition topic to
// an exactly-once Kafka sink, no fault: a read_committed consumer reads
// each output id once and the folded changelog is the true join.
func TestNodeKafkaExactlyOnce(t *testing.T) {
	brokers, _, prod := eosCluster(t)
	rs := testutil.StartRedis(t)
	recs, want := eosInput(10, 60)
	if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	n := start(t, parse(t, t.TempDir(), eosJob(brokers, rs.Addr, "node_name: n1")))
	runAll(t, []*node.Node{n})
	testutil.WaitFor(t, 30*time.Second, testutil.KafkaCommitted(prod, "g", 2, "cdc"))
	eosCheck(t, eosRead(t, brokers, true), want)
}

// TestNodeKafkaExactlyOnceRebalance: node n1 reads both partitions of the
// input, its first transaction's outputs held by the broker; n2 joins the
// fleet and the consumer group, which moves a partition to it (the hold
// ends once n1 gave it up). The
// rebalance aborts n1's transaction (a read_uncommitted consumer sees its
// records); n1 reads its remaining partition again from the committed
// offsets and n2 reads the moved one, the keys (on both nodes) re-sending
// what they applied. A read_committed consumer reads each output id once
// and the folded changelog is the true join.
func TestNodeKafkaExactlyOnceRebalance(t *testing.T) {
	brokers, kc, prod := eosCluster(t)
	rs := testutil.StartRedis(t)
	recs, want := eosInput(10, 60)
	if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out := topicID(t, prod, "out")
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	unhold := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unhold)
	kc.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		for _, tp := range req.(*kmsg.ProduceRequest).Topics {
			if tp.Topic == "out" || tp.TopicID == out {
				once.Do(func() {
					close(held)
					kc.SleepControl(func() { <-release })
				})
				break
			}
		}
		return nil, nil, false
	})
	// Release it once n1 gave a partition up: the cooperative rebalance's
	// second round (generation 3) syncs after the first round's revoke,
	// and before n2 is assigned anything (so n2 writes nothing while n1's
	// write is held).
	kc.ControlKey(int16(kmsg.SyncGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		if req.(*kmsg.SyncGroupRequest).Generation >= 3 {
			unhold()
		}
		return nil, nil, false
	})
	dir := t.TempDir()
	n1 := start(t, parse(t, dir, eosJob(brokers, rs.Addr, "node_name: n1")))
	runAll(t, []*node.Node{n1})
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("n1 wrote no output")
	}
	n2 := start(t, parse(t, dir, eosJob(brokers, rs.Addr, fmt.Sprintf("node_name: n2, seeds: [%q]", n1.GossipAddr()))))
	for _, n := range []*node.Node{n1, n2} {
		testutil.WaitFor(t, 30*time.Second, seesAlive(n, 2))
	}
	runAll(t, []*node.Node{n2})
	testutil.WaitFor(t, 60*time.Second, testutil.KafkaCommitted(prod, "g", 2, "cdc"))
	eosCheck(t, eosRead(t, brokers, true), want)
	twice := idsTwice(eosRead(t, brokers, false))
	t.Logf("n1 read %d records, n2 %d; read_uncommitted: %d ids twice", n1.Stats().In.Load(), n2.Stats().In.Load(), twice)
	if n2.Stats().In.Load() == 0 {
		t.Errorf("n2 read nothing: the group moved no partition to it")
	}
	if twice == 0 {
		t.Errorf("read_uncommitted saw no id twice: the rebalance aborted no transaction that carried outputs")
	}
}

// idsTwice counts the output ids that rs holds more than once.
func idsTwice(rs []*kgo.Record) int {
	ids := map[string]int{}
	twice := 0
	for _, r := range rs {
		for _, h := range r.Headers {
			if h.Key == kafka.IDHeader {
				if ids[string(h.Value)]++; ids[string(h.Value)] == 2 {
					twice++
				}
			}
		}
	}
	return twice
}

// TestNodeKafkaExactlyOnceFencesAtStart: a node killed mid-transaction
// leaves its transaction open, and a read_committed consumer reads nothing
// past the transaction's first record (the last stable offset) until it
// ends. The node started again under the same node_name fences it at
// start (its producer's InitProducerID aborts it), before it reads or
// writes anything, so consumers are not held until the brokers' timeout
// of the dead incarnation's transaction — nor until the restarted node
// first writes, which a rebalance can delay for a group session.
func TestNodeKafkaExactlyOnceFencesAtStart(t *testing.T) {
	brokers, _, prod := eosCluster(t)
	rs := testutil.StartRedis(t)
	ctx := context.Background()

	// The dead incarnation: a transaction of n1's transactional id with a
	// record in out, never ended.
	dead, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("joinery-eos-cdc-n1"),
		kgo.TransactionTimeout(5*time.Minute), kgo.DefaultProduceTopic("out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dead.Close)
	if err := dead.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := dead.ProduceSync(ctx, &kgo.Record{Value: []byte("from the dead incarnation")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	stable := func() error { return testutil.KafkaStable(ctx, prod, "out") }
	if stable() == nil {
		t.Fatal("the dead incarnation's transaction is not open in out")
	}

	n := start(t, parse(t, t.TempDir(), eosJob(brokers, rs.Addr, "node_name: n1")))
	runAll(t, []*node.Node{n})
	testutil.WaitFor(t, 20*time.Second, stable)
	if got := eosRead(t, brokers, true); len(got) != 0 {
		t.Errorf("read_committed: %d records, want none (the dead incarnation's transaction aborted)", len(got))
	}
}
