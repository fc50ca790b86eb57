package actors

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/joinery/joinery/internal/backoff"
	"github.com/joinery/joinery/internal/failpoint"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// WriterOptions configures a Writer. A zero field means the default.
type WriterOptions struct {
	// MaxBatch is the most snapshots written in one Store.Save. Default 512.
	MaxBatch int
	// QueueSize bounds the snapshots waiting to be written; Submit blocks when
	// it is full (backpressure). Default 4096.
	QueueSize int
	// MaxBackoff caps the wait between retries of a failed Save. Default 1s.
	MaxBackoff time.Duration
	// Logger receives write errors. Default slog.Default().
	Logger *slog.Logger
}

type writeReq struct {
	snap persistence.Snapshot
	done Durable
}

// Durable is told, on the Writer's goroutine, once a submitted snapshot is
// durable (nil) or failed (SubmitTo).
type Durable interface{ WriteDone(err error) }

// doneFunc is a func(error) as a Durable (a func value converts to an
// interface without an allocation).
type doneFunc func(error)

func (f doneFunc) WriteDone(err error) { f(err) }

// Writer batches snapshots from many key actors into pipelined Store.Save
// calls (write-behind). A failed Save is retried with backoff until it
// succeeds or the Writer is closed, so a Redis outage stalls the sources instead
// of losing writes; except a Save refused because the store went back in
// time (an error matching persistence.ErrRollback), which no retry can
// pass: its callbacks get the error at once. Submit is safe for concurrent use; callbacks run on the
// Writer's goroutine, in submission order, after their snapshot is durable.
type Writer struct {
	store persistence.Store
	opts  WriterOptions
	in    chan writeReq
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	once  sync.Once
	subs  atomic.Int64 // snapshots submitted
	// rolledBack is set at the first Save refused for a store gone back in
	// time (logged once).
	rolledBack atomic.Bool
	// sc is the Saves' context (saveContext), run's goroutine's alone.
	sc struct {
		ctx      context.Context
		cancel   context.CancelFunc
		deadline time.Time
	}

	// mu guards closed and the send on in: Submit sends under the read lock,
	// Close takes the write lock before it closes in.
	mu struct {
		sync.RWMutex
		closed bool
	}
}

// NewWriter starts a Writer over store. Close it to stop its goroutine.
func NewWriter(store persistence.Store, opts WriterOptions) *Writer {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 512
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 4096
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{store: store, opts: opts, in: make(chan writeReq, opts.QueueSize), ctx: ctx, stop: cancel}
	w.wg.Add(1)
	go w.run()
	return w
}

// Submit queues snap for writing and calls done with nil once it is durable,
// or with an error if the Writer closed first. It blocks while the queue is
// full. After Close, done is called at once with persistence.ErrClosed.
//
// snap's State and its Parts' values are the Writer's from then on, and
// the store's (the Writer saves snap as persistence.Snapshot.Owned, so an
// in-memory store keeps them without a copy): the caller never changes
// those bytes again. A key actor's are encoded for its write (keycore), and
// nothing changes them after.
func (w *Writer) Submit(snap persistence.Snapshot, done func(error)) {
	w.SubmitTo(snap, doneFunc(done))
}

// SubmitTo is Submit telling d (d.WriteDone) instead of calling a func,
// so a caller that keeps its callback's state in a struct it allocates
// anyway needs no closure.
func (w *Writer) SubmitTo(snap persistence.Snapshot, done Durable) {
	w.subs.Add(1)
	snap.Owned = true
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.mu.closed {
		done.WriteDone(persistence.ErrClosed)
		return
	}
	req := writeReq{snap: snap, done: done}
	// The queue has room (the usual case): a send that locks the queue
	// alone. A select with ctx.Done locks that channel too, which every
	// key actor's submit shares (measured: its lock was the largest part
	// of a submit, docs/performance/2026-12-05-node-profile.md, "The dispatch path outside the key
	// core").
	select {
	case w.in <- req:
		return
	default:
	}
	select {
	case w.in <- req:
	case <-w.ctx.Done():
		done.WriteDone(persistence.ErrClosed)
	}
}

// Submitted is the number of snapshots handed to Submit so far: each one
// key's state, encoded.
func (w *Writer) Submitted() int64 { return w.subs.Load() }

// Close writes what is queued (giving up on a Save that keeps failing once
// ctx ends), stops the Writer and waits for it. It is idempotent.
func (w *Writer) Close(ctx context.Context) {
	w.once.Do(func() {
		go func() {
			select {
			case <-ctx.Done():
				w.stop()
			case <-w.ctx.Done():
			}
		}()
		w.mu.Lock()
		w.mu.closed = true
		close(w.in)
		w.mu.Unlock()
		w.wg.Wait()
		w.stop()
	})
}

func (w *Writer) run() {
	defer w.wg.Done()
	defer func() {
		if w.sc.cancel != nil {
			w.sc.cancel()
		}
	}()
	batch := make([]writeReq, 0, w.opts.MaxBatch)
	snaps := make([]persistence.Snapshot, 0, w.opts.MaxBatch)
	index := make(map[activation]int, w.opts.MaxBatch)
	for {
		req, ok := <-w.in
		if !ok {
			return
		}
		batch = append(batch[:0], req)
	fill:
		for len(batch) < w.opts.MaxBatch {
			select {
			case r, ok := <-w.in:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		// Coalesce: the last snapshot of a key's activation wins, with
		// the changes of the deltas before it (persistence.MergeSnapshots:
		// a delta builds on the snapshot before it). Two
		// activations of one key (a stale one still draining while a new
		// one owns the key) are written separately, so the store's epoch
		// check refuses the stale one's: had its snapshot been dropped in
		// favour of the other's, its callback would report success for
		// changes that were never written.
		snaps = snaps[:0]
		clear(index)
		for _, r := range batch {
			id := activationOf(r.snap.Job, r.snap.Key, r.snap.Epoch)
			if i, ok := index[id]; ok {
				snaps[i] = persistence.MergeSnapshots(snaps[i], r.snap)
				continue
			}
			index[id] = len(snaps)
			snaps = append(snaps, r.snap)
		}
		failpoint.BeforeStateWrite() // chaos tests only: may wait here (internal/failpoint)
		err := w.save(snaps)
		if err == nil {
			failpoint.StateWritten() // chaos tests only: may exit here (internal/failpoint)
		}
		var fenced map[activation]error // made only when a snapshot was fenced
		for _, fe := range persistence.Fenced(err) {
			if fenced == nil {
				fenced = map[activation]error{}
			}
			fenced[activationOf(fe.Job, fe.Key, fe.Epoch)] = fe
		}
		for _, r := range batch {
			if len(fenced) > 0 {
				// The batch was written except the fenced snapshots.
				r.done.WriteDone(fenced[activationOf(r.snap.Job, r.snap.Key, r.snap.Epoch)])
				continue
			}
			r.done.WriteDone(err)
		}
	}
}

// activation names one activation's snapshots of a key: job, key, epoch
// (a map key built without an allocation, unlike a joined string).
type activation struct {
	job   string
	key   record.Key
	epoch int64
}

func activationOf(job string, key record.Key, epoch int64) activation {
	return activation{job: job, key: key, epoch: epoch}
}

// saveTimeout bounds one Store.Save: each gets at least saveTimeout minus
// saveTimeoutReuse, at most saveTimeout.
const (
	saveTimeout      = 5 * time.Second
	saveTimeoutReuse = time.Second
)

// saveContext is the context of a Save starting now: w.ctx with a deadline
// saveTimeout from when it was made, reused by the Saves of the next
// saveTimeoutReuse (a context and its timer per Save cost three allocations
// and a timer-heap insert and delete, and at a high rate a Save holds a few
// snapshots). Only run's goroutine calls it.
func (w *Writer) saveContext() context.Context {
	now := time.Now()
	if w.sc.ctx == nil || w.sc.ctx.Err() != nil || w.sc.deadline.Sub(now) < saveTimeout-saveTimeoutReuse {
		if w.sc.cancel != nil {
			w.sc.cancel()
		}
		w.sc.deadline = now.Add(saveTimeout)
		w.sc.ctx, w.sc.cancel = context.WithDeadline(w.ctx, w.sc.deadline)
	}
	return w.sc.ctx
}

// save retries Store.Save with exponential backoff until it succeeds or the
// Writer is stopped.
func (w *Writer) save(snaps []persistence.Snapshot) error {
	bo := backoff.Backoff{Initial: 5 * time.Millisecond, Max: w.opts.MaxBackoff}
	for {
		err := w.store.Save(w.saveContext(), snaps)
		if err == nil || len(persistence.Fenced(err)) > 0 {
			// Fenced snapshots are refused for good (a newer activation owns
			// the key); retrying cannot help, and the rest of the batch is in.
			return err
		}
		if errors.Is(err, persistence.ErrRollback) {
			// The store went back in time under this writer
			// (persistence.StaleStoreError): it refuses every write of the
			// shard from now on, and the node stops (its guard saw it).
			if !w.rolledBack.Swap(true) {
				w.opts.Logger.Error("state write refused: the state store went back in time; not retried", "snapshots", len(snaps), "err", err)
			}
			return err
		}
		if w.ctx.Err() != nil {
			return err
		}
		w.opts.Logger.Warn("state write failed; retrying", "snapshots", len(snaps), "backoff", bo.Delay(), "err", err)
		if bo.Wait(w.ctx) != nil {
			return err
		}
	}
}
