package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node"
)

// The Kafka systems: the node reading a Kafka topic into a Kafka sink, on
// kfake in the same process (its CPU counted, the same on both), the
// embedded store. SysNodeKafkaEOS writes the sink exactly once
// (kafka.exactly_once: the outputs and the source offsets in one Kafka
// transaction per completed group of batches, docs/guides/exactly-once.md),
// SysNodeKafka at least once (the idempotent producer, offsets committed
// after the writes); EOSCost compares the two. Changelog joins read from
// one file only (not the event-time joins: exactly once is for changelog
// joins).
const (
	SysNodeKafka    = "node+kafka"
	SysNodeKafkaEOS = "node+kafka+eos"
)

// kafkaPoll is how often a Kafka run looks at the group's committed offset.
const kafkaPoll = 5 * time.Millisecond

// kafkaRounds runs a Kafka system's throughput rounds and returns the lines
// the node and its baseline read.
func (h *harness) kafkaRounds(r *Result, w *Workload, in Input, gen time.Duration) ([][]byte, error) {
	lines := in.Lines
	switch {
	case w.NodeJob == "":
		r.Skipped = w.NodeSkip
	case len(w.NodeSources) > 0:
		r.Skipped = "an event-time join: exactly-once output is for changelog joins, so the Kafka systems do not run it"
	}
	if r.Skipped != "" {
		return lines, nil
	}
	lines = pushedDown(r, in) // rounds.go
	eos := r.System == SysNodeKafkaEOS
	err := runRounds(r, h.o.Rounds, gen, h.logf, nil,
		func(func(int)) (RunResult, error) {
			h.runID++
			return kafkaRun(h.ctx, w, lines, eos, h.runID)
		},
		func(p func(int)) (RunResult, error) { return w.Baseline(lines, p), nil })
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", w.Name, r.System, err)
	}
	return lines, nil
}

// kafkaNode is a node of w's job reading the one-partition topic "in" of a
// fresh kfake in group "g" into the topic "out", exactly once when eos,
// with kfake's brokers; Close stops the node and kfake.
type kafkaNode struct {
	n       *node.Node
	kc      *kfake.Cluster
	cl      *kgo.Client
	brokers []string
}

func startKafkaNode(ctx context.Context, w *Workload, name string, eos bool) (*kafkaNode, error) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		return nil, err
	}
	k := &kafkaNode{kc: kc, brokers: kc.ListenAddrs()}
	if k.cl, err = kgo.NewClient(kgo.SeedBrokers(k.brokers...), kgo.DefaultProduceTopic("in"), kgo.ProducerLinger(0)); err != nil {
		kc.Close()
		return nil, err
	}
	spec, err := kafkaSpec(w, name, k.brokers[0], eos)
	if err == nil {
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
		k.n, err = node.Start(ctx, spec, node.Options{Logger: log, Stdout: io.Discard, Stdin: strings.NewReader("")})
	}
	if err != nil {
		k.Close()
		return nil, fmt.Errorf("node start: %w", err)
	}
	return k, nil
}

// kafkaSpec is w's job reading "in" into "out" on broker.
func kafkaSpec(w *Workload, name, broker string, eos bool) (*job.Spec, error) {
	_, tables, _ := strings.Cut(w.NodeJob, "tables:")
	sources := fmt.Sprintf("sources: [{name: in, type: kafka, kafka: {brokers: [%q], topic: in, group: g}, tables: %s}]\n", broker, strings.TrimSpace(tables))
	sink := fmt.Sprintf("{type: kafka, format: changelog, kafka: {brokers: [%q], topic: out, exactly_once: %v}}", broker, eos)
	return jobSpec(w, name, sources, sink, "", "", "", "")
}

func (k *kafkaNode) Close() {
	if k.n != nil {
		k.n.Close(context.Background())
	}
	k.cl.Close()
	k.kc.Close()
}

// produce writes lines to "in" (record i at offset i).
func (k *kafkaNode) produce(ctx context.Context, lines [][]byte) error {
	recs := make([]*kgo.Record, len(lines))
	for i, l := range lines {
		recs[i] = &kgo.Record{Value: l}
	}
	return k.cl.ProduceSync(ctx, recs...).FirstErr()
}

// run runs the node until the group has committed every record of "in"
// (their outputs are written, and with exactly once committed),
// then stops it (its Close) and returns Run's wall time to that point.
func (k *kafkaNode) run(ctx context.Context) (time.Duration, error) {
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- k.n.Run(rctx) }()
	committed := testutil.KafkaCommitted(k.cl, "g", 1, "in")
	var wall time.Duration
	for {
		if err := committed(); err == nil {
			wall = time.Since(t0)
			break
		}
		select {
		case err := <-done:
			return 0, fmt.Errorf("node run ended before its input was committed: %v", err)
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(kafkaPoll):
		}
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return wall, fmt.Errorf("node run: %w", err)
	}
	err := k.n.Close(ctx)
	k.n = nil
	return wall, err
}

// checksum reads "out" read_committed and checksums it.
func (k *kafkaNode) checksum(ctx context.Context) (RunResult, error) {
	var res RunResult
	recs, err := testutil.KafkaRecords(ctx, k.brokers, "out", true)
	if err != nil {
		return res, err
	}
	var h Hasher
	for _, r := range recs {
		o, err := changelog.DecodeChangelog(r.Value)
		if err != nil {
			return res, fmt.Errorf("sink output: %w", err)
		}
		res.Check.Add(o.Kind, h.HashOutput(o, true))
	}
	return res, nil
}

// kafkaRun is one measured Kafka run over lines: kfake started and the
// lines produced to "in" before the node starts, the output read back
// after it stopped — harness work, left out of the CPU time as the node
// levels leave the node's start and the sink's read-back out. The
// measured part is the node's Run until the group committed every input
// record, and its Close.
func kafkaRun(ctx context.Context, w *Workload, lines [][]byte, eos bool, run int) (RunResult, error) {
	var excl harnessWork
	excl.start()
	k, err := startKafkaNode(ctx, w, fmt.Sprintf("bench-%s-kafka-%d", strings.ReplaceAll(w.Name, "-", ""), run), eos)
	if err != nil {
		return RunResult{}, err
	}
	defer k.Close()
	if err := k.produce(ctx, lines); err != nil {
		return RunResult{}, fmt.Errorf("produce the input: %w", err)
	}
	excl.stop()
	wall, err := k.run(ctx)
	if err != nil {
		return RunResult{}, err
	}
	excl.start()
	res, err := k.checksum(ctx)
	excl.stop()
	res.Excluded, res.ExcludedMallocs, res.ExcludedBytes = excl.cpu, excl.mallocs, excl.bytes
	res.Wall = wall
	return res, err
}

// kafkaLatency is a Kafka system's open-loop latency run: a feeder
// produces event i (offset i of "in") at start + i/rate, in one produce
// per wake-up of whatever is due, and a read_committed consumer of "out"
// stamps each output when it is fetched; an output's latency is that time
// minus its event's due time, the event found by the source offset in its
// id. With exactly once an output is visible once its transaction
// commits. The outputs are checksummed too.
func kafkaLatency(ctx context.Context, w *Workload, lines [][]byte, eos bool, run int, rate float64) (Latency, Checksum, error) {
	k, err := startKafkaNode(ctx, w, fmt.Sprintf("bench-%s-kafkalat-%d", strings.ReplaceAll(w.Name, "-", ""), run), eos)
	if err != nil {
		return Latency{}, Checksum{}, err
	}
	defer k.Close()
	rd, err := kgo.NewClient(kgo.SeedBrokers(k.brokers...), kgo.ConsumeTopics("out"), kgo.KeepControlRecords(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return Latency{}, Checksum{}, err
	}
	defer rd.Close()
	gap := float64(time.Second) / rate
	t0 := time.Now()
	due := func(i int64) time.Time { return t0.Add(time.Duration(float64(i) * gap)) }
	fctx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	fed := make(chan error, 1)
	go func() {
		sent := 0
		for sent < len(lines) {
			sleepUntil(due(int64(sent)))
			upTo := min(len(lines), int(time.Since(t0).Seconds()*rate)+1)
			if err := k.produce(fctx, lines[sent:upTo]); err != nil {
				fed <- err
				return
			}
			sent = upTo
		}
		fed <- nil
	}()
	var l latencies
	var check Checksum
	var h Hasher
	var decErr error
	var next int64 // the offset after the last record read, markers included
	read := func(pctx context.Context) {
		fs := rd.PollFetches(pctx)
		at := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			o, err := changelog.DecodeChangelog(r.Value)
			if err != nil {
				decErr = err
				return
			}
			check.Add(o.Kind, h.HashOutput(o, true))
			if off := outputOffset(r.Value); off >= 0 && off < int64(len(lines)) {
				l.add(at.Sub(due(off)), 1)
			}
		})
	}
	// Read while the node runs, until the group committed every event
	// and the consumer read "out" to its last stable offset then.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- k.n.Run(rctx) }()
	committed := testutil.KafkaCommitted(k.cl, "g", 1, "in")
	var wall time.Duration
	var end int64 = -1
	var feedErr error
	allFed := false
	for end < 0 || next < end {
		if !allFed {
			select {
			case feedErr = <-fed:
				if feedErr != nil {
					return Latency{}, check, fmt.Errorf("feed: %w", feedErr)
				}
				allFed = true
			default:
			}
		}
		if allFed && end < 0 && committed() == nil {
			wall = time.Since(t0)
			if end, err = testutil.KafkaEnd(ctx, k.cl, "out", 0, true); err != nil {
				return Latency{}, check, err
			}
		}
		select {
		case err := <-done:
			return Latency{}, check, fmt.Errorf("node run ended before its input was committed: %v", err)
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		read(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return Latency{}, check, err
		}
	}
	if decErr != nil {
		return Latency{}, check, fmt.Errorf("sink output: %w", decErr)
	}
	lat := Latency{Rate: rate, Achieved: float64(len(lines)) / wall.Seconds()}
	l.summary(&lat)
	return lat, check, nil
}
