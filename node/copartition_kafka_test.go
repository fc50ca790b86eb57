package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/sources/kafka"
)

// userKey is the record key Debezium writes with message.key.columns set to
// the join column (renamed user_id in both topics) and key schemas off.
const userKey = `{"user_id":{key}}`

// joinKeySources is the sources entry of a job joining the Kafka topics
// users and domains partitioned by the join key, on broker, each read by
// group joinery-<topic>; extra (", rate: 100") is added to both.
func joinKeySources(broker, extra string) string {
	src := func(table, side string) string {
		return fmt.Sprintf(`{name: %[1]s, type: kafka, kafka: {brokers: [%[2]q], topic: %[1]s, group: joinery-%[1]s, partition_key: '%[3]s'}, partitioned_by: join_key, tables: {%[1]s: %[4]s}%[5]s}`,
			table, broker, userKey, side, extra)
	}
	return fmt.Sprintf("sources: [%s, %s]\n", src("users", "left"), src("domains", "right"))
}

// startJoinKeyKafka starts a Kafka (kfake, stopped when the test ends) with
// the topics users and domains of partitions partitions each, and a client
// of it with opts.
func startJoinKeyKafka(t *testing.T, partitions int32, opts ...kgo.Opt) ([]string, *kgo.Client) {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "users", "domains"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close) // after the nodes stop (their cleanups run first)
	brokers := kc.ListenAddrs()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return brokers, cl
}

// produceByJoinKey writes Debezium lines to the topics users and domains as
// Debezium with message.key.columns on the join column does: keyed
// {"user_id":v} (cdcgen.ByJoinKey: users by id, domains by user_id), placed
// by Kafka's default partitioner (murmur2). It returns how many records
// it wrote (a join key change is two).
func produceByJoinKey(t *testing.T, brokers []string, lines [][]byte) int {
	t.Helper()
	keyed, err := cdcgen.ByJoinKey(lines, map[string]string{"users": "id", "domains": "user_id"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, k := range keyed {
		var v []json.RawMessage
		if err := json.Unmarshal(k.Key, &v); err != nil || len(v) != 1 {
			t.Fatalf("key %s: %v", k.Key, err)
		}
		var env struct {
			Source struct{ Table string } `json:"source"`
		}
		if err := json.Unmarshal(k.Line, &env); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, &kgo.Record{Topic: env.Source.Table, Key: []byte(`{"user_id":` + string(v[0]) + `}`), Value: k.Line})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return len(rs)
}

// groupOwners asks the brokers which member name (the balancer's UserData)
// reads each partition of topic in group.
func groupOwners(ctx context.Context, cl *kgo.Client, group, topic string, partitions int) ([]string, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := make([]string, partitions)
	for _, g := range resp.Groups {
		if g.State != "Stable" {
			return nil, fmt.Errorf("group %s is %s", group, g.State)
		}
		for _, m := range g.Members {
			var meta kmsg.ConsumerMemberMetadata
			var as kmsg.ConsumerMemberAssignment
			if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
				return nil, err
			}
			if err := as.ReadFrom(m.MemberAssignment); err != nil {
				return nil, err
			}
			for _, tp := range as.Topics {
				for _, p := range tp.Partitions {
					if tp.Topic == topic && int(p) < partitions {
						out[p] = string(meta.UserData)
					}
				}
			}
		}
	}
	return out, nil
}

// kafkaViewJob is the job name joining the topics of startJoinKeyKafka
// (joinKeySources with extra) into the hash view of a Redis it starts,
// also the state store; rc is a client of that Redis.
func kafkaViewJob(t *testing.T, name, broker, extra string) (yml string, rc *redis.Client) {
	t.Helper()
	rs := testutil.StartRedis(t)
	rc = redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { rc.Close() })
	return "name: " + name + "\n" + joinYAML + joinKeySources(broker, extra) + fmt.Sprintf(`
state: {store: redis, redis: {addr: %[1]q}}
sinks: [{type: redis-hash, redis: {addr: %[1]q}, key: view}]
`, rs.Addr), rc
}

// waitKafkaView waits until both groups of kafkaViewJob committed every
// record and its view is the brute-force join of h, then diffs them.
func waitKafkaView(t *testing.T, cl *kgo.Client, rc *redis.Client, h *cdcgen.History, what string) {
	t.Helper()
	testutil.WaitFor(t, 120*time.Second, func() error {
		if err := errors.Join(testutil.KafkaCommitted(cl, "joinery-users", 6, "users")(), testutil.KafkaCommitted(cl, "joinery-domains", 6, "domains")()); err != nil {
			return err
		}
		if got, want := hashView(t, rc, "view"), h.LeftJoin(); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("view has %d rows, want %d", len(got), len(want))
		}
		return nil
	})
	diff(t, what, hashView(t, rc, "view"), h.LeftJoin())
}

// waitReadBy waits until partition p of the topics users and domains is
// read by the member named want[p] in their groups joinery-<topic>.
func waitReadBy(t *testing.T, cl *kgo.Client, partitions int, want []string) {
	t.Helper()
	for _, topic := range []string{"users", "domains"} {
		testutil.WaitFor(t, 60*time.Second, func() error {
			got, err := groupOwners(context.Background(), cl, "joinery-"+topic, topic, partitions)
			if err == nil && !slices.Equal(got, want) {
				err = fmt.Errorf("%s read by %v, want %v", topic, got, want)
			}
			return err
		})
	}
}

// TestClusterCoPartitionedKafka runs three nodes on two Kafka topics of 6
// partitions keyed by the join column (partitioned_by: join_key,
// kafka.partition_key), each read through its own consumer group: the
// groups' balancer gives partition p of both topics to the owner of key
// group p (streamshard.Assign over the member names), so once the groups
// are stable no event goes to another node (joinery_key_requests_total{
// where="remote"} stays put), the admin's key location is the reader of the
// key's partition, and the Redis hash view equals the brute-force join.
// When n3 leaves, its partitions and key groups move to n1 and n2 together,
// which read the rest locally again.
func TestClusterCoPartitionedKafka(t *testing.T) {
	const partitions = 6
	brokers, cl := startJoinKeyKafka(t, partitions)
	yml, rc := kafkaViewJob(t, "kcopart", brokers[0], "")
	yml += "admin: {addr: \"127.0.0.1:0\"}\n"
	ctx := context.Background()
	h := cdcgen.Generate(cdcgen.Config{Seed: 47, Users: 40, Domains: 120, Changes: 2000})
	nodes := startThree(t, t.TempDir(), yml)
	third := len(h.Lines) / 3
	produceByJoinKey(t, brokers, h.Lines[:third])
	stop := runAll(t, nodes)
	acked := func() error {
		return errors.Join(testutil.KafkaCommitted(cl, "joinery-users", 6, "users")(), testutil.KafkaCommitted(cl, "joinery-domains", 6, "domains")())
	}
	settled := func(want []string) {
		waitReadBy(t, cl, partitions, want)
		testutil.WaitFor(t, 90*time.Second, acked)
	}
	want := streamshard.Assign(partitions, []string{"n1", "n2", "n3"})
	settled(want)
	// Steady state: the next third is read and applied where its keys live.
	allLocal(t, nodes, func() { produceByJoinKey(t, brokers, h.Lines[third:2*third]) }, acked)
	groupOf := func(key string) int {
		return kafka.Partition([]byte(strings.ReplaceAll(userKey, "{key}", key)), partitions)
	}
	// The admin's key location is the reader of the key's partition.
	locatedAtGroupOwner(t, nodes, "kcopart", 40, want, groupOf)

	// n3 leaves: its partitions move to n1 and n2 (the groups rebalance, the
	// new owners resume from the committed offsets), its key groups with
	// them, and the two read the rest locally again.
	stop(2)
	if err := nodes[2].Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[:2] {
		testutil.WaitFor(t, 30*time.Second, seesAlive(n, 2))
	}
	want = streamshard.Assign(partitions, []string{"n1", "n2"})
	settled(want)
	allLocal(t, nodes[:2], func() { produceByJoinKey(t, brokers, h.Lines[2*third:]) }, acked)
	testutil.WaitFor(t, 30*time.Second, func() error {
		if got, want := hashView(t, rc, "view"), h.LeftJoin(); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("view has %d rows, want %d", len(got), len(want))
		}
		return nil
	})
	diff(t, "co-partitioned Kafka view vs brute-force join", hashView(t, rc, "view"), h.LeftJoin())
	locatedAtGroupOwner(t, nodes, "kcopart", 40, want, groupOf)
}

// locatedAtGroupOwner checks that the admin (of the second node) locates
// each of keys 1…keys on the node owner names for its key group
// (groupOf), nodes being n1, n2, n3.
func locatedAtGroupOwner(t *testing.T, nodes []*node.Node, job string, keys int, owner []string, groupOf func(string) int) {
	t.Helper()
	addrOf := map[string]string{"n1": nodes[0].Address(), "n2": nodes[1].Address(), "n3": nodes[2].Address()}
	ac, err := admin.NewClient("http://"+nodes[1].AdminAddr(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= keys; id++ {
		key := strconv.Itoa(id)
		loc, err := ac.Locate(context.Background(), job, key)
		if err != nil {
			t.Fatal(err)
		}
		if g := groupOf(key); loc.Node != addrOf[owner[g]] {
			t.Errorf("key %s (group %d, read by %s at %s) located on %s", key, g, owner[g], addrOf[owner[g]], loc.Node)
		}
	}
}

// TestNodeKafkaCoPartitionCounts checks that a node refuses to start a job
// whose join_key topics have different partition counts, naming both.
func TestNodeKafkaCoPartitionCounts(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, "users"), kfake.SeedTopics(4, "domains"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	brokers := kc.ListenAddrs()
	src := func(table, side string) string {
		return fmt.Sprintf(`{name: %[1]s, type: kafka, kafka: {brokers: [%[2]q], topic: %[1]s, group: g, partition_key: '%[3]s'}, partitioned_by: join_key, tables: {%[1]s: %[4]s}}`,
			table, brokers[0], userKey, side)
	}
	spec := parse(t, t.TempDir(), "name: kcounts\n"+joinYAML+fmt.Sprintf("sources: [%s, %s]\nsinks: [{type: table}]\n", src("users", "left"), src("domains", "right")))
	n, err := node.Start(context.Background(), spec, node.Options{Logger: testLogger(t), Stdout: io.Discard})
	if err == nil {
		_ = n.Close(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "topic users (source users) has 6 partitions, topic domains (source domains) has 4") {
		t.Errorf("start with 6 and 4 partitions: %v", err)
	}
}

// TestNodeKafkaMisplacedDeadLettered runs a node on two co-partitioned
// topics (partitioned_by: join_key) where one record, a new user, was
// produced to another partition than its key's: the record is
// dead-lettered with reason misplaced and the rule (it is not joined: its
// key's other records are in another partition, read in no order with it),
// counted in the rejected metrics, and the source reads on — the records
// after it in its partition, and those produced later, are joined, the
// group commits past it, and the node keeps running.
func TestNodeKafkaMisplacedDeadLettered(t *testing.T) {
	const partitions = 6
	brokers, cl := startJoinKeyKafka(t, partitions, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	h := cdcgen.Generate(cdcgen.Config{Seed: 53, Users: 20, Domains: 60, Changes: 600})
	half := len(h.Lines) / 2
	produceByJoinKey(t, brokers, h.Lines[:half])
	key := []byte(`{"user_id":999}`)
	wrong := int32(kafka.Partition(key, partitions)+1) % partitions
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	line := `{"op":"c","before":null,"after":{"id":999,"firstname":"Mis","lastname":"Placed"},"source":{"table":"users"},"ts_ms":1700000009999}`
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "users", Partition: wrong, Key: key, Value: []byte(line)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produceByJoinKey(t, brokers, h.Lines[half:]) // after it, in its partition too
	dir := t.TempDir()
	n := start(t, parse(t, dir, "name: kmisplaced\n"+joinYAML+joinKeySources(brokers[0], "")+"sinks: [{type: table}]\ndead_letter: dead.jsonl\n"))
	rctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- n.Run(rctx) }()
	want := h.LeftJoin()
	testutil.WaitFor(t, 90*time.Second, func() error {
		if err := testutil.KafkaCommitted(cl, "joinery-users", 6, "users")(); err != nil {
			return err
		}
		if got := tableMap(n.Table()); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("table has %d rows, the join %d", len(got), len(want))
		}
		return nil
	})
	diff(t, "co-partitioned Kafka with a misplaced record vs brute-force join", tableMap(n.Table()), want)
	dead := readDeadFile(t, filepath.Join(dir, "dead.jsonl"))
	if len(dead) != 1 {
		t.Fatalf("dead letters = %+v, want the misplaced record", dead)
	}
	if d := dead[0]; d.Reason != "misplaced" || d.Source != "users" || d.Position.Partition != wrong ||
		!strings.Contains(d.Error, "default partitioner") || !strings.Contains(d.Raw, `"Placed"`) {
		t.Errorf("dead letter = %+v, want users/%d, misplaced, the rule", d, wrong)
	}
	st := n.Stats()
	if st.Bad()["misplaced"] != 1 || st.BadTotal() != 1 || st.DeadLettered.Load() != 1 {
		t.Errorf("rejected %v, dead-lettered %d; want 1 misplaced", st.Bad(), st.DeadLettered.Load())
	}
	select {
	case err := <-done:
		t.Fatalf("the node stopped: %v", err)
	default:
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
}

// TestClusterKafkaExpect: with cluster.expect: 3 a node's Kafka sources do
// not join their consumer groups while fewer than three members are live —
// n1 running alone reads nothing and the groups stay empty — and once n2
// and n3 are up the groups form with the three, partition p of both topics
// read by the owner of key group p, and the view is the brute-force join.
func TestClusterKafkaExpect(t *testing.T) {
	const partitions = 6
	brokers, cl := startJoinKeyKafka(t, partitions)
	yml, rc := kafkaViewJob(t, "kexpect", brokers[0], "")
	ctx := context.Background()
	h := cdcgen.Generate(cdcgen.Config{Seed: 59, Users: 30, Domains: 90, Changes: 900})
	produceByJoinKey(t, brokers, h.Lines)
	dir := t.TempDir()
	n1 := start(t, parse(t, dir, yml+"cluster: {node_name: n1, expect: 3, expect_wait: 30s}\n"))
	runAll(t, []*node.Node{n1})
	time.Sleep(time.Second) // n1 alone, for twenty rounds of its wait
	for _, topic := range []string{"users", "domains"} {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"joinery-" + topic}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range resp.Groups {
			if len(g.Members) > 0 {
				t.Errorf("n1 alone of the 3 expected: group %s has %d members (%s)", g.Group, len(g.Members), g.State)
			}
		}
	}
	if got := n1.Stats().In.Load(); got != 0 {
		t.Errorf("n1 alone of the 3 expected read %d records", got)
	}
	seeds := fmt.Sprintf("cluster: {node_name: %%s, seeds: [%q], expect: 3, expect_wait: 30s}\n", n1.GossipAddr())
	nodes := []*node.Node{n1, start(t, parse(t, dir, yml+fmt.Sprintf(seeds, "n2"))), start(t, parse(t, dir, yml+fmt.Sprintf(seeds, "n3")))}
	runAll(t, nodes[1:])
	waitReadBy(t, cl, partitions, streamshard.Assign(partitions, []string{"n1", "n2", "n3"}))
	waitKafkaView(t, cl, rc, h, "Kafka fleet started with cluster.expect vs brute-force join")
}

// TestClusterKafkaRevokeCommitsInFlight: n2 joins while n1 reads a
// backlog of two co-partitioned topics (paced, so that the rebalance comes
// before the end of it), so the groups' (eager) rebalance revokes n1's
// partitions with batches in flight; each
// revoke waits for them to be answered and committed before it lets the
// partitions go, so neither n2 nor n1 itself (resuming from the committed
// offsets) reads any record twice: the two nodes read exactly the records
// produced, and the view is the brute-force join.
func TestClusterKafkaRevokeCommitsInFlight(t *testing.T) {
	const partitions = 6
	brokers, cl := startJoinKeyKafka(t, partitions)
	yml, rc := kafkaViewJob(t, "krevoke", brokers[0], ", rate: 2000")
	h := cdcgen.Generate(cdcgen.Config{Seed: 61, Users: 200, Domains: 600, Changes: 20000})
	produced := int64(produceByJoinKey(t, brokers, h.Lines))
	dir := t.TempDir()
	// Both nodes are up (key placement is over the two from the start);
	// n2 runs its sources, joining the groups, once n1 reads.
	n1 := start(t, parse(t, dir, yml+"cluster: {node_name: n1}\n"))
	n2 := start(t, parse(t, dir, yml+fmt.Sprintf("cluster: {node_name: n2, seeds: [%q]}\n", n1.GossipAddr())))
	for _, n := range []*node.Node{n1, n2} {
		testutil.WaitFor(t, 30*time.Second, seesAlive(n, 2))
	}
	runAll(t, []*node.Node{n1})
	testutil.WaitFor(t, 30*time.Second, func() error {
		if in := n1.Stats().In.Load(); in < 1000 {
			return fmt.Errorf("n1 read %d records", in)
		}
		return nil
	})
	runAll(t, []*node.Node{n2})
	joined := n1.Stats().In.Load()
	waitReadBy(t, cl, partitions, streamshard.Assign(partitions, []string{"n1", "n2"}))
	atRebalance := n1.Stats().In.Load()
	waitKafkaView(t, cl, rc, h, "view after a rebalance with batches in flight vs brute-force join")
	in1, in2 := n1.Stats().In.Load(), n2.Stats().In.Load()
	t.Logf("%d records; n1 had read %d when n2 ran, %d when the groups settled; n1 read %d, n2 %d", produced, joined, atRebalance, in1, in2)
	if atRebalance >= produced || in2 == 0 {
		t.Fatalf("n1 read %d of the %d records before the rebalance, n2 %d: nothing was in flight to test", atRebalance, produced, in2)
	}
	if in1+in2 != produced {
		t.Errorf("n1 read %d records and n2 %d: %d in all, %d produced (records read twice after the rebalance)", in1, in2, in1+in2, produced)
	}
}
