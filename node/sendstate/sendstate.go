// Package sendstate owns the sender half of the per-key protocol between a
// node's readers and its keys' actors (the key half is keycore): the
// requests of one batch, one per key in the order of the keys' first
// records; the sequence number of each batch; the requests sent and not
// answered yet, per key and reader; the offsets a new request names as its
// Prev (the chaining that lets a key refuse a gap); the offsets a reader
// committed, which every request carries; and the copy a resend is.
//
// It is pure state: no goroutines, no clock, no I/O, no locks. The node
// (node/read.go, node/collect.go) drives it and holds the locks: a Reader's
// committed offsets are shared by its read loop and its collector, and one
// Keys is shared by every reader of the node; Prev is computed and the
// request sent under the same lock so that no other reader sends between.
// The transcripts of testdata/*.txt are its tests.
package sendstate

import (
	"maps"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/joinery/joinery/actors/keypb"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// ReaderID names one reader of a node (every source read loop, and the
// timer tick's) in Keys.
type ReaderID int

// sent is a reader's last unanswered request to a key: the offsets it and
// the reader's earlier unanswered requests to the key carry, and its batch.
type sent struct {
	offsets map[string]int64
	seq     uint64
}

// Keys holds, per key, the last unanswered request of each reader of the
// node. A request's Prev is the union of the offsets they carry, so the
// key refuses it (a gap) until the requests sent before it — by any
// reader — are applied: a request that is retried after a failover cannot
// be overtaken by a later one, such as a firing from another source that
// would make its elements late. The zero Keys is empty and ready.
type Keys struct {
	keys map[record.Key]map[ReaderID]sent
}

// Prev is the offsets a new request to k must name as applied before it:
// per partition, the highest offset of every reader's unanswered requests
// to k; nil when there are none.
func (f *Keys) Prev(k record.Key) map[string]int64 {
	var prev map[string]int64
	for _, s := range f.keys[k] {
		for part, off := range s.offsets {
			if prev == nil {
				prev = map[string]int64{}
			}
			prev[part] = max(prev[part], off)
		}
	}
	return prev
}

// add records r's new request to k. Its offsets merge with those of r's
// earlier unanswered requests to k: a request without events (a firing)
// must not hide an earlier one's events from the Prev of later requests.
// When the newest completes, every earlier one of r has (batches complete
// in order), so Done may then forget them all.
func (f *Keys) add(k record.Key, r ReaderID, s sent) {
	if f.keys == nil {
		f.keys = map[record.Key]map[ReaderID]sent{}
	}
	byReader := f.keys[k]
	if byReader == nil {
		byReader = map[ReaderID]sent{}
		f.keys[k] = byReader
	}
	for part, off := range byReader[r].offsets {
		if s.offsets[part] < off {
			s.offsets[part] = off
		}
	}
	byReader[r] = s
}

// Done forgets r's request to k of batch seq once it is answered, unless a
// later one replaced it.
func (f *Keys) Done(k record.Key, r ReaderID, seq uint64) {
	if s, ok := f.keys[k][r]; ok && s.seq == seq {
		delete(f.keys[k], r)
		if len(f.keys[k]) == 0 {
			delete(f.keys, k)
		}
	}
}

// Len is the number of keys with an unanswered request.
func (f *Keys) Len() int { return len(f.keys) }

// Batch is the requests of one batch: one Apply per key, in the order of
// the keys' first records. The zero Batch is empty and ready.
type Batch struct {
	applies map[record.Key]*keypb.Apply
	order   []record.Key
}

// Apply returns k's request in the batch, adding it (last) if k has none.
func (b *Batch) Apply(k record.Key) *keypb.Apply {
	if a, ok := b.applies[k]; ok {
		return a
	}
	if b.applies == nil {
		b.applies = map[record.Key]*keypb.Apply{}
	}
	a := &keypb.Apply{Key: string(k)}
	b.applies[k] = a
	b.order = append(b.order, k)
	return a
}

// Has reports whether the batch holds a request to k.
func (b *Batch) Has(k record.Key) bool {
	_, ok := b.applies[k]
	return ok
}

// Keys is the batch's keys in order.
func (b *Batch) Keys() []record.Key { return b.order }

// Get is k's request, or nil.
func (b *Batch) Get(k record.Key) *keypb.Apply { return b.applies[k] }

// Reader is one reader's sender state: its batches' sequence numbers and
// the offsets it committed.
type Reader struct {
	id        ReaderID
	next      uint64
	committed map[string]int64 // partition id -> committed offset; keycore.FirePart -> watermark
}

// NewReader returns the state of reader id, which has sent nothing.
func NewReader(id ReaderID) *Reader {
	return &Reader{id: id, committed: map[string]int64{}}
}

// ID is the reader's name in Keys.
func (r *Reader) ID() ReaderID { return r.id }

// NextSeq numbers a new batch: 0, 1, 2, … Batches complete in this order.
func (r *Reader) NextSeq() uint64 {
	s := r.next
	r.next++
	return s
}

// Send stamps the requests of batch seq, in order, for sending: each gets
// its Prev from keys, the reader's committed offsets and session, and is
// recorded in keys as unanswered. It returns them in order. The caller
// sends them before another Send to keys (under the same lock).
func (r *Reader) Send(keys *Keys, seq uint64, b *Batch, session string) []*keypb.Apply {
	out := make([]*keypb.Apply, 0, len(b.order))
	var committed map[string]int64 // one copy for the batch: the requests only read it
	if len(r.committed) > 0 {
		committed = maps.Clone(r.committed)
	}
	for _, k := range b.order {
		a := b.applies[k]
		a.Prev = keys.Prev(k)
		if committed != nil {
			a.Committed = committed
		}
		a.Session = session
		offs := map[string]int64{}
		for _, e := range a.Events {
			offs[record.Position{Source: e.Source, Partition: e.Partition}.PartitionID()] = e.Offset
		}
		keys.add(k, r.id, sent{offsets: offs, seq: seq})
		out = append(out, a)
	}
	return out
}

// Answered forgets the requests of batch seq to ks, all answered.
func (r *Reader) Answered(keys *Keys, seq uint64, ks []record.Key) {
	for _, k := range ks {
		keys.Done(k, r.id, seq)
	}
}

// Commit records a completed batch's committed offsets (partition id ->
// offset) and, for an event-time batch (fireWm > math.MinInt64), the
// watermark its keys fired to. Offsets never go back.
func (r *Reader) Commit(offsets map[string]int64, fireWm int64) {
	for part, off := range offsets {
		if off > r.committed[part] {
			r.committed[part] = off
		}
	}
	if fireWm > math.MinInt64 {
		if c, ok := r.committed[keycore.FirePart]; !ok || fireWm > c {
			r.committed[keycore.FirePart] = fireWm
		}
	}
}

// Committed is a copy of the reader's committed offsets.
func (r *Reader) Committed() map[string]int64 { return maps.Clone(r.committed) }

// Resend is a request to send again after its answer failed: a copy (the
// first may still be in a local actor's mailbox) marked Resend, so the key
// re-sends every kept output it covers. Prev is unchanged: the key still
// refuses it until what was sent before it is applied.
func Resend(a *keypb.Apply) *keypb.Apply {
	again := proto.Clone(a).(*keypb.Apply)
	again.Resend = true
	return again
}
