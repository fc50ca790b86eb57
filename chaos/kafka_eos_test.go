package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/joins"
)

// TestChaosKafkaExactlyOnceKill: two node processes read the CDC input
// from a 3-partition Kafka topic (kfake, in the test process) in one
// consumer group and write the changelog to a Kafka topic with
// kafka.exactly_once; n1 is killed -9 under load (its transaction open)
// and started again with the same node_name, which aborts the dead
// incarnation's transaction. Once the group has committed the whole input,
// a read_committed consumer of the output reads each output id once, and
// the changelog, each row's newest seq deciding, folds to the fault-free
// answer (two readers' transactions commit one key's changes in the order
// they commit, so a consumer orders a row's changes by seq). Neither node
// stops by itself: while the group waits for the dead member (its session
// timeout), a transaction that ends aborts and a join that fails is
// retried. The nodes' logs are printed when a trial fails.
func TestChaosKafkaExactlyOnceKill(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 1))
	n := trials(1)
	for trial := range n {
		t.Run(fmt.Sprint("trial", trial), func(t *testing.T) { kafkaEOSTrial(t, r, uint64(trial)+380, trial, n) })
	}
}

func kafkaEOSTrial(t *testing.T, r *rand.Rand, seed uint64, trial, trials int) {
	_, brokers := testutil.KafkaCluster(t, kfake.SeedTopics(3, "cdc"), kfake.SeedTopics(1, "out")) // stopped after the nodes
	cl := testutil.KafkaClient(t, brokers)
	h := cdcgen.Generate(cdcgen.Config{Seed: seed, Users: 300, Domains: 900, Changes: inputChanges})
	want := h.LeftJoin()
	// Each row's changes go to one partition (keyed by table and id), in order.
	recs := make([]*kgo.Record, 0, len(h.Lines))
	for _, l := range h.Lines {
		var c struct {
			Before, After map[string]any
			Source        struct{ Table string }
		}
		if err := json.Unmarshal(l, &c); err != nil {
			t.Fatal(err)
		}
		row := c.After
		if row == nil {
			row = c.Before
		}
		recs = append(recs, &kgo.Record{Topic: "cdc", Key: fmt.Appendf(nil, "%s/%v", c.Source.Table, row["id"]), Value: l})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	t.Cleanup(func() { keepFiles(t, dir) }) // after the nodes stopped
	rs := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	gossip := [2]int{testutil.FreePort(t), testutil.FreePort(t)}
	for i := range 2 {
		job := jobYAML + fmt.Sprintf(`sources: [{name: cdc, type: kafka, kafka: {brokers: [%[1]q], topic: cdc, group: g}, tables: {users: left, domains: right}}]
sinks: [{type: kafka, format: changelog, kafka: {brokers: [%[1]q], topic: out, exactly_once: true}}]
state: {store: redis, redis: {addr: %[2]q}}
cluster: {node_name: n%[3]d, gossip: "127.0.0.1:%[4]d", remote: "127.0.0.1:0", seeds: ["127.0.0.1:%[5]d"], profile: lan, request_timeout: 2s}
`, brokers[0], rs.Addr, i+1, gossip[i], gossip[0])
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%d.yaml", i+1)), []byte(job), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n1 := startProc(t, dir, "n1", "n1.yaml")
	n2 := startProc(t, dir, "n2", "n2.yaml")
	t.Cleanup(func() { logTails(t, dir, "n1", "n2") })

	// Kill n1 once some of the output is committed, then start it again.
	at := int64(1 + r.IntN(max(1, len(recs)/4)))
	if n := envInt("CHAOS_EOS_KILL_AT", 0); n > 0 {
		at = int64(n) // a fixed kill point: 1 kills n1 while the group forms
	}
	testutil.WaitFor(t, scaled(2*time.Minute), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if n, err := testutil.KafkaEnd(ctx, cl, "out", 0, false); err != nil || n < at {
			return fmt.Errorf("out holds %d records, waiting for %d", n, at)
		}
		return nil
	})
	killed := time.Now()
	n1.kill()
	n1.start(dir)
	t.Logf("killed n1 -9 at %d output records and started it again", at)

	done := testutil.KafkaCommitted(cl, "g", 3, "cdc")
	testutil.WaitFor(t, scaled(4*time.Minute), func() error {
		for _, p := range []*proc{n1, n2} {
			if !p.running() {
				t.Fatalf("%s stopped by itself: %v", p.name, p.exitErr)
			}
		}
		return done()
	})
	took := time.Since(killed)
	// Every transaction ends: a read_committed consumer reads to the last
	// stable offset, and one left open (the killed incarnation's, until
	// the restarted n1 fences it) would hide everything after it.
	testutil.WaitFor(t, scaled(30*time.Second), func() error { return outStable(cl) })
	stable := time.Since(killed)

	got, dups, lines := foldOut(t, brokers, true)
	_, dupsAll, linesAll := foldOut(t, brokers, false)
	t.Logf("%d changes in, %d committed output records, %d ids twice (read_uncommitted: %d records, %d ids twice), input committed %v and every transaction ended %v after the kill",
		len(recs), lines, dups, linesAll, dupsAll, took.Round(time.Millisecond), stable.Round(time.Millisecond))
	if dups > 0 {
		t.Errorf("a read_committed consumer read %d output ids twice", dups)
	}
	lost := compare(t, got, want)
	if lost > 0 {
		t.Errorf("%d rows differ from the fault-free answer", lost)
	}
	record1(summaryRow{Scenario: "KafkaExactlyOnceKill", Trial: trial + 1, Trials: trials, EventsIn: len(recs), Outputs: lines,
		Equal: lost == 0, Lost: lost, DupIDs: dups, RecoveryMS: -1, MaxStallMS: -1})
}

// outStable reports an error while a transaction is open in the output
// topic (its last stable offset below its end).
func outStable(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return testutil.KafkaStable(ctx, cl, "out")
}

// foldOut reads the output topic read_committed (committed) to its last
// stable offset, or read_uncommitted to its end, and folds it into the
// joined table (first record per id, each row's newest seq deciding, as
// the table sink does): the table, the output ids read more than once, and
// the records read.
func foldOut(t *testing.T, brokers []string, committed bool) (map[string]string, int, int) {
	t.Helper()
	recs := testutil.ReadKafka(t, brokers, "out", committed, scaled(time.Minute))
	tab := joins.NewTable()
	seen := map[string]bool{}
	seqs := map[string]uint64{}
	dups := 0
	for _, r := range recs {
		o, err := changelog.DecodeChangelog(r.Value)
		if err != nil {
			t.Fatalf("offset %d: %v", r.Offset, err)
		}
		if seen[o.ID] {
			dups++
			continue
		}
		seen[o.ID] = true
		// By seq, as the table sink folds: two readers' transactions
		// commit one key's changes in no fixed order.
		if o.Seq > seqs[o.PK] {
			seqs[o.PK] = o.Seq
			tab.Put(o)
		}
	}
	return rowsOf(tab), dups, len(recs)
}
