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
	"slices"

	"github.com/joinery/joinery/internal/slab"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// ReaderID names one reader of a node (every source read loop, and the
// timer tick's) in Keys.
type ReaderID int

// sent is a reader's last unanswered request to a key: the offsets it and
// the reader's earlier unanswered requests to the key carry (per
// partition, the highest; a request has one or a few partitions, so a
// slice, not a map), and its batch.
type sent struct {
	offsets []partOffset
	seq     uint64
}

type partOffset struct {
	part string
	off  int64
}

// raise makes off the offset of part in s, unless it holds a higher one.
func (s *sent) raise(part string, off int64) {
	for i := range s.offsets {
		if s.offsets[i].part == part {
			s.offsets[i].off = max(s.offsets[i].off, off)
			return
		}
	}
	s.offsets = append(s.offsets, partOffset{part, off})
}

// put makes off the offset of part in s (a request's own events: the
// last of a partition's wins, as they come in order); the first offset's
// array comes from sl.
func (s *sent) put(part string, off int64, sl *slab.Slab[partOffset]) {
	for i := range s.offsets {
		if s.offsets[i].part == part {
			s.offsets[i].off = off
			return
		}
	}
	s.offsets = sl.Append(s.offsets, partOffset{part, off})
}

// offsetsMap is s's offsets as a map (nil when there are none).
func (s sent) offsetsMap() map[string]int64 {
	if len(s.offsets) == 0 {
		return nil
	}
	m := make(map[string]int64, len(s.offsets))
	for _, p := range s.offsets {
		m[p.part] = p.off
	}
	return m
}

// readerSent is one reader's entry in Keys.
type readerSent struct {
	r ReaderID
	s sent
}

// Keys holds, per key, the last unanswered request of each reader of the
// node. A request's Prev is the union of the offsets they carry, so the
// key refuses it (a gap) until the requests sent before it — by any
// reader — are applied: a request that is retried after a failover cannot
// be overtaken by a later one, such as a firing from another source that
// would make its elements late. The zero Keys is empty and ready.
type Keys struct {
	// Per key, each reader's entry (a key has one reader's request in
	// flight, or a few: a slice, not a map per key).
	keys map[record.Key][]readerSent
}

// sentBy is r's entry for k.
func (f *Keys) sentBy(k record.Key, r ReaderID) (sent, bool) {
	for _, rs := range f.keys[k] {
		if rs.r == r {
			return rs.s, true
		}
	}
	return sent{}, false
}

// Prev is the offsets a new request to k must name as applied before it:
// per partition, the highest offset of every reader's unanswered requests
// to k; nil when there are none.
func (f *Keys) Prev(k record.Key) map[string]int64 {
	var prev map[string]int64
	for _, rs := range f.keys[k] {
		for _, p := range rs.s.offsets {
			if prev == nil {
				prev = map[string]int64{}
			}
			prev[p.part] = max(prev[p.part], p.off)
		}
	}
	return prev
}

// add records r's new request to k. Its offsets merge with those of r's
// earlier unanswered requests to k: a request without events (a firing)
// must not hide an earlier one's events from the Prev of later requests.
// When the newest completes, every earlier one of r has (batches complete
// in order), so Done may then forget them all. A key's first entry's array
// comes from sl.
func (f *Keys) add(k record.Key, r ReaderID, s sent, sl *slab.Slab[readerSent]) {
	if f.keys == nil {
		f.keys = map[record.Key][]readerSent{}
	}
	byReader := f.keys[k]
	for i := range byReader {
		if byReader[i].r == r {
			for _, p := range byReader[i].s.offsets {
				s.raise(p.part, p.off)
			}
			byReader[i].s = s
			return
		}
	}
	f.keys[k] = sl.Append(byReader, readerSent{r, s})
}

// Done forgets r's request to k of batch seq once it is answered, unless a
// later one replaced it.
func (f *Keys) Done(k record.Key, r ReaderID, seq uint64) {
	byReader := f.keys[k]
	for i, rs := range byReader {
		if rs.r != r {
			continue
		}
		if rs.s.seq == seq {
			if len(byReader) == 1 {
				delete(f.keys, k)
				return
			}
			f.keys[k] = slices.Delete(byReader, i, i+1)
		}
		return
	}
}

// Len is the number of keys with an unanswered request.
func (f *Keys) Len() int { return len(f.keys) }

// Request is one key's request, as the node keeps it: the key core's
// request (keycore.Request; the protocol's fields, Prev, Committed,
// Sender, Resend, Fire, are the wire Apply's) to Key. A key actor in this
// process takes it as it is (actors.LocalApply); one in another process
// gets it encoded (actors.EncodeRequest). Once sent it is read-only: a
// resend is a copy (Resend).
type Request struct {
	Key record.Key
	keycore.Request
}

// Batch is the requests of one batch: one Request per key, in the order
// of the keys' first records. The zero Batch is empty and ready.
type Batch struct {
	index map[record.Key]int // a key's place in order and list
	order []record.Key
	list  []*Request         // the requests, in order
	slab  slab.Slab[Request] // the requests: they live as long as the batch
}

// Apply returns k's request in the batch, adding it (last) if k has none.
func (b *Batch) Apply(k record.Key) *Request {
	a, _ := b.ApplyAt(k)
	return a
}

// ApplyAt is Apply with the request's place in the batch's order (Keys,
// Requests), so a caller can keep what goes with each request in a slice
// instead of another map by key.
func (b *Batch) ApplyAt(k record.Key) (*Request, int) {
	if i, ok := b.index[k]; ok {
		return b.list[i], i
	}
	if b.index == nil {
		b.index = map[record.Key]int{}
	}
	a := b.slab.New()
	a.Key = k
	i := len(b.order)
	b.index[k] = i
	b.order = append(b.order, k)
	b.list = append(b.list, a)
	return a, i
}

// Hint makes room for n keys' requests (a batch of n records), so that
// the batch does not grow its index as they come.
func (b *Batch) Hint(n int) {
	if b.index == nil && n > 0 {
		b.index = make(map[record.Key]int, n)
		b.order = make([]record.Key, 0, n)
		b.list = make([]*Request, 0, n)
	}
}

// Has reports whether the batch holds a request to k.
func (b *Batch) Has(k record.Key) bool {
	_, ok := b.index[k]
	return ok
}

// Keys is the batch's keys in order.
func (b *Batch) Keys() []record.Key { return b.order }

// Requests is the batch's requests, in the order of Keys.
func (b *Batch) Requests() []*Request { return b.list }

// Get is k's request, or nil.
func (b *Batch) Get(k record.Key) *Request {
	if i, ok := b.index[k]; ok {
		return b.list[i]
	}
	return nil
}

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
// its Prev from keys, the reader's committed offsets and sender (the
// node run's ID, keycore.Request.Sender), and is
// recorded in keys as unanswered. It returns them in order. The caller
// sends them before another Send to keys (under the same lock).
func (r *Reader) Send(keys *Keys, seq uint64, b *Batch, sender string) []*Request {
	out := make([]*Request, 0, len(b.order))
	var committed map[string]int64 // one copy for the batch: the requests only read it
	if len(r.committed) > 0 {
		committed = maps.Clone(r.committed)
	}
	var lastSrc, lastID string
	var lastPart int32
	// The requests' offsets and the keys' entries in Keys, from chunks:
	// they are forgotten together, as the batch is answered.
	var offs slab.Slab[partOffset]
	var entries slab.Slab[readerSent]
	offs.Hint(len(b.order))
	entries.Hint(len(b.order))
	for i, k := range b.order {
		a := b.list[i]
		a.Prev = keys.Prev(k)
		if committed != nil {
			a.Committed = committed
		}
		a.Sender = sender
		var s sent
		for i := range a.Events {
			p := &a.Events[i].Pos
			if p.Source != lastSrc || p.Partition != lastPart || lastID == "" {
				// One partition id per run of events of one partition,
				// not one string per event.
				lastSrc, lastPart = p.Source, p.Partition
				lastID = record.Position{Source: p.Source, Partition: p.Partition}.PartitionID()
			}
			s.put(lastID, p.Offset, &offs)
		}
		s.seq = seq
		keys.add(k, r.id, s, &entries)
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
// refuses it until what was sent before it is applied. The copy shares the
// first's events, rows and maps, which neither the key nor the sender
// changes once sent.
func Resend(a *Request) *Request {
	again := *a
	again.Resend = true
	return &again
}
