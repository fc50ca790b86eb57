package fleetbench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/internal/testutil"
)

// latency runs the open-loop phase: w's probes (changes whose
// w.stampField carries the produce time) at rate per second for
// c.LatencyFor, and the latencies (ms) of the joined rows that carry them,
// as read from the output topic, and of the same rows to the sink's
// produce call (their record timestamps, in whole ms). It returns the rate
// it ran at. probing, when not nil, is called with true as the first probe
// goes out and with false once the outputs are in (or the wait for them
// gave up): the probing window.
func (c Config) latency(ctx context.Context, run int, f feeder, addr string, w *workload, rate float64, probing func(start bool)) (lat, toSink []float64, _ float64, _ error) {
	if rate < 1 {
		return nil, nil, rate, nil
	}
	probe, err := w.probes()
	if err != nil {
		return nil, nil, rate, err
	}
	prefix := fmt.Sprintf("lat-%d-", run)
	out, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic("out", run)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		return nil, nil, rate, err
	}
	defer out.Close()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := out.PollFetches(cctx)
			if cctx.Err() != nil {
				return
			}
			now := time.Now().UnixNano()
			fs.EachRecord(func(r *kgo.Record) {
				var o struct {
					Op  string         `json:"op"`
					Row map[string]any `json:"row"`
				}
				if json.Unmarshal(r.Value, &o) != nil || (o.Op != "+I" && o.Op != "+U") {
					return
				}
				name, _ := o.Row[w.stampField].(string)
				ts, ok := strings.CutPrefix(name, prefix)
				if !ok {
					return
				}
				ns, err := strconv.ParseInt(ts, 10, 64)
				if err != nil {
					return
				}
				mu.Lock()
				lat = append(lat, float64(now-ns)/1e6)
				// The record's timestamp is the sink's produce call (the
				// node's clock is this one), in whole milliseconds.
				toSink = append(toSink, float64(r.Timestamp.UnixMilli()-ns/1e6))
				mu.Unlock()
			})
		}
	}()
	time.Sleep(2 * time.Second) // the consumer has its end offsets
	if probing != nil {
		probing(true)
	}
	sent, lag, err := produceAt(ctx, f, rate, c.LatencyFor, func(i int) msg { return probe(prefix, i) })
	if err != nil {
		return nil, nil, rate, err
	}
	if lag > c.LatencyFor/10 {
		c.logf("latency run: the feeder ended %v behind its schedule", lag)
	}
	// Wait for the last outputs (at most 20 s after the last update).
	_ = testutil.Poll(ctx, 20*time.Second, pollEvery, "latency outputs", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(lat) < sent {
			return fmt.Errorf("%d of %d", len(lat), sent)
		}
		return nil
	})
	if probing != nil {
		probing(false)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(lat) < sent {
		c.logf("latency run: %d of %d updates seen in the output within 20 s; the missing are left out of the percentiles", len(lat), sent)
	}
	return lat, toSink, rate, nil
}
