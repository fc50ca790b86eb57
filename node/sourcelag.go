package node

import (
	"context"
	"sync"
	"time"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// defaultSourceLagEvery is how often a source's lag is asked for when
// Options.SourceLagEvery is 0.
const defaultSourceLagEvery = 15 * time.Second

// watchLag exports the lag of a source that can tell it (sources.Lagger:
// Redis streams, Kafka) as joinery_source_lag_records{job,source,partition}:
// the records its input holds after the last one committed. It asks every
// Options.SourceLagEvery while ctx lasts; a partition the source no longer
// reads loses its series, and stop (call it before closing the source)
// removes them all. A failed ask leaves the series as they were (the Redis
// or Kafka error has its own signals) and is logged at debug level.
func (n *Node) watchLag(ctx context.Context, source string, src sources.Source) (stop func()) {
	lagger, ok := src.(sources.Lagger)
	if !ok {
		return func() {}
	}
	every := n.opts.SourceLagEvery
	if every <= 0 {
		every = defaultSourceLagEvery
	}
	g := n.metrics.SourceLag
	shown := map[string]bool{} // partition labels set
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				for p := range shown {
					g.DeleteLabelValues(n.spec.Name, source, p)
				}
				return
			case <-t.C:
			}
			lag, err := lagger.Lag(ctx)
			if err != nil {
				if ctx.Err() == nil {
					n.log.Debug("source lag unknown", "source", source, "err", err)
				}
				continue
			}
			now := make(map[string]bool, len(lag))
			for part, records := range lag {
				p := record.Position{Source: source, Partition: part}.PartitionID()
				now[p] = true
				g.WithLabelValues(n.spec.Name, source, p).Set(float64(records))
			}
			for p := range shown {
				if !now[p] {
					g.DeleteLabelValues(n.spec.Name, source, p)
				}
			}
			shown = now
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
