package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks"
)

// outputs fans a batch out to every sink of the job, and keeps the
// materialized table when the job has a table sink.
type outputs struct {
	sinks  []sinks.Sink
	stdout io.Writer
	mu     sync.Mutex
	table  *joins.Table      // nil without a table sink
	seen   map[string]bool   // output ids the table applied: outputs are at least once
	seqs   map[string]uint64 // output PK -> Seq of the change the table holds (ordered outputs)
	errs   []error           // inconsistencies the table saw
	print  bool

	// wmu serializes writes to the sinks, so order's view of what each
	// sink holds is the order in which the sinks got it.
	wmu    sync.Mutex
	order  pkOrder // of the node-local sinks (file, stdout)
	sorder pkOrder // of the shared sinks (Kafka, Redis), which this node writes as the keys' owner
	latest []bool  // per sink: it keeps each row's last change (upsert formats), see pkOrder
	shared []bool  // per sink: its kind is Shared (connectors.Kind): the keys' owners write it
	txn    []bool  // per sink: it writes exactly once, in a source's transaction (exactlyonce.go)
}

// sinkSet picks which of a node's sinks a write goes to.
type sinkSet int

const (
	allSinks    sinkSet = iota // every sink and the table: outputs of keys this node owns, or that no owner wrote
	localSinks                 // the node-local sinks and the table: the owner wrote the shared ones
	sharedSinks                // the shared sinks alone: this node writes them as the keys' owner (BatchOptions.Write)
)

// pkOrder keeps, for the output primary keys written lately, the Seq of the
// newest change written, so that a change overtaken by a newer one of the
// same row is not written after it to a sink of an upsert format (a
// changelog sink gets every change: its consumer orders them by seq, and a
// dropped change would leave its retractions inconsistent). Two sources
// (or two readers) answer for one join key separately: key 1's reply to
// the users source (seq 4) can reach the sinks after its reply to the
// domains source (seq 5), and a consumer that applies an upsert topic in
// arrival order — a KTable, a JDBC sink, kcat — would end with seq 4's row.
// Dropping the overtaken change leaves every sink's last change per row the
// newest one; a re-sent change (same Seq) is written again, as outputs are
// at least once. A pkOrder sees one node's writes only: that is why a key's
// owner node writes its outputs to the shared sinks (owner_writes, see
// docs/concepts/architecture.md "Batched requests"), whichever node read its inputs.
//
// Memory is bounded: two generations of at most orderWindow rows each. A
// change can only be overtaken by one in flight at the same time, far fewer
// rows than that.
type pkOrder struct {
	cur, prev map[string]uint64
}

const orderWindow = 1 << 16

// fresh returns batch without the changes older than one already written
// and records the rest as written. batch itself is not modified.
func (p *pkOrder) fresh(batch []record.Output) []record.Output {
	var kept []record.Output // nil until the first drop
	for i, out := range batch {
		if out.Seq > 0 { // 0: unordered, always written
			last, ok := p.cur[out.PK]
			if !ok {
				last = p.prev[out.PK]
			}
			if out.Seq < last {
				if kept == nil {
					kept = append(make([]record.Output, 0, len(batch)), batch[:i]...)
				}
				continue
			}
			if p.cur == nil {
				p.cur = make(map[string]uint64)
			}
			p.cur[out.PK] = out.Seq
			if len(p.cur) >= orderWindow {
				p.prev, p.cur = p.cur, make(map[string]uint64)
			}
		}
		if kept != nil {
			kept = append(kept, out)
		}
	}
	if kept == nil {
		return batch
	}
	return kept
}

// openSinks opens the plan's sinks through the connector registry.
func openSinks(ctx context.Context, plan *job.Plan, stdout io.Writer, cenv connectors.Env) (*outputs, error) {
	o := &outputs{stdout: stdout}
	for i, sp := range plan.Sinks {
		format := sp.Format
		env := &connectors.SinkEnv{Env: cenv, Format: format, Stdout: stdout, Avro: sp.Avro}
		var sk sinks.Sink
		var err error
		if sp.Kind.Open != nil {
			sk, err = sp.Kind.Open(ctx, sp.Config, env)
		}
		if err == nil && sp.Kind.Table {
			o.table = joins.NewTable()
			o.seen, o.seqs = map[string]bool{}, map[string]uint64{}
			o.print = true
			continue
		}
		if err == nil && sk == nil {
			err = fmt.Errorf("sink type %q opens nothing", sp.Type)
		}
		if err != nil {
			o.close()
			return nil, fmt.Errorf("sinks[%d]: %w", i, err)
		}
		o.sinks = append(o.sinks, sk)
		o.shared = append(o.shared, sp.Kind.Shared)
		o.txn = append(o.txn, exactlyOnce(sp.Config))
		// Upsert and Debezium envelopes carry no retractions: a consumer
		// keeps each row's last change, so an overtaken change is dropped
		// (pkOrder). A changelog keeps every change for a consumer that
		// orders them by seq.
		o.latest = append(o.latest, format == changelog.Upsert || format == changelog.Debezium)
	}
	return o, nil
}

// write writes batch to every sink, each through retry (a failed write is
// tried again whole: outputs carry stable ids, so a sink that got part of
// the batch gets those outputs twice under the same ids), then applies it
// to the table.
func (o *outputs) write(ctx context.Context, batch []record.Output, retry func(context.Context, string, func(context.Context) error) error) error {
	return o.writeTo(ctx, allSinks, batch, retry)
}

func (o *outputs) isShared(i int) bool { return i < len(o.shared) && o.shared[i] }
func (o *outputs) isLatest(i int) bool { return i < len(o.latest) && o.latest[i] }

// hasShared says whether the job has a shared sink (connectors.Kind.Shared).
func (o *outputs) hasShared() bool { return slices.Contains(o.shared, true) }

// writeShared writes batch to the shared sinks alone, as the owner of its
// keys (the batch actor's BatchOptions.Write). written is false when the
// node has no shared sink: the sender then writes them.
func (o *outputs) writeShared(ctx context.Context, batch []record.Output, retry func(context.Context, string, func(context.Context) error) error) (bool, error) {
	if !o.hasShared() {
		return false, nil
	}
	return true, o.writeTo(ctx, sharedSinks, batch, retry)
}

// writeTo writes batch to the sinks of set (see sinkSet), each through
// retry, then, unless set is sharedSinks, applies it to the table.
func (o *outputs) writeTo(ctx context.Context, set sinkSet, batch []record.Output, retry func(context.Context, string, func(context.Context) error) error) error {
	return o.writeToTx(ctx, set, batch, retry, nil)
}

// writeToTx is writeTo with the exactly-once sinks written into tx
// (writeOne; exactlyonce.go).
func (o *outputs) writeToTx(ctx context.Context, set sinkSet, batch []record.Output, retry func(context.Context, string, func(context.Context) error) error, tx any) error {
	if len(batch) == 0 {
		return nil
	}
	if len(o.sinks) > 0 {
		o.wmu.Lock()
		// The upsert sinks of each kind get the batch less the overtaken
		// changes, computed once per kind (fresh records what it keeps).
		var fresh [2][]record.Output // [0] node-local sinks, [1] shared sinks
		var done [2]bool
		for i, s := range o.sinks {
			shared := o.isShared(i)
			if shared && set == localSinks || !shared && set == sharedSinks {
				continue
			}
			b := batch
			if o.isLatest(i) {
				k := 0
				if shared {
					k = 1
				}
				if !done[k] {
					order := &o.order
					if shared {
						order = &o.sorder
					}
					fresh[k], done[k] = order.fresh(batch), true
				}
				b = fresh[k]
			}
			if len(b) == 0 {
				continue
			}
			if err := o.writeOne(ctx, i, s, b, retry, tx); err != nil {
				o.wmu.Unlock()
				return err
			}
		}
		o.wmu.Unlock()
	}
	if o.table != nil && set != sharedSinks {
		o.mu.Lock()
		for _, out := range batch {
			if o.seen[out.ID] {
				continue // a re-sent output (replay, late firing): same id, same row
			}
			o.seen[out.ID] = true
			if out.Seq > 0 {
				// Ordered by the key's output sequence, as the Redis hash sink
				// does: outputs of one key may arrive out of order (two
				// sources), and the newest change of a row decides it.
				if out.Seq <= o.seqs[out.PK] {
					continue
				}
				o.seqs[out.PK] = out.Seq
				o.table.Put(out)
				continue
			}
			if err := o.table.Apply(out); err != nil {
				o.errs = append(o.errs, err)
			}
		}
		o.mu.Unlock()
	}
	return nil
}

func (o *outputs) tableRows() []joins.TableRow {
	if o.table == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.table.Rows()
}

// tableErrors are the changelog inconsistencies the table sink saw (a
// retraction of a row that was never emitted, …); there should be none.
func (o *outputs) tableErrors() []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]error(nil), o.errs...)
}

func (o *outputs) close() error {
	var errs []error
	for _, s := range o.sinks {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
