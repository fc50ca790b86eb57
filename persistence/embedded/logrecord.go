package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// Record kinds. A kind added later does not change the header's version: a
// log without it reads as before, and an older reader stops at it as
// corrupt rather than skipping it.
const (
	kindSave   byte = 1
	kindCommit byte = 2
	kindEpoch  byte = 3 // owner epochs (Acquire); added after kinds 1 and 2
	// kindSaveTimers is a save record whose snapshots carry a timer field;
	// added after kind 3. It exists only on disk: it decodes to a kindSave
	// logRecord, and a kindSave logRecord is written as kind 1 unless one
	// of its snapshots has a timer, so logs of a store that never uses
	// timers stay readable by binaries that predate the kind.
	kindSaveTimers byte = 4
	// kindLineage sets a job's lineage (incarnation id, floor, commit
	// sequence) and commits offsets with it; added after kind 4. Every
	// CommitOffsets of a store that has a lineage writes one (a log
	// without any reads as before; an older binary stops at it).
	kindLineage byte = 5
	// kindSaveParts is a save record whose snapshots carry a timer field
	// and their parts (persistence.Snapshot.Parts and Delta); added after
	// kind 5. Like kind 4 it exists only on disk: a kindSave logRecord is
	// written as kind 6 only when one of its snapshots has parts or is a
	// delta, so a store whose writers send whole states only writes logs
	// older binaries read, and those refuse a log with kind 6 rather than
	// drop parts of states.
	kindSaveParts byte = 6
)

// logRecord is one log record: a Save batch, a CommitOffsets call or owner
// epochs (one for an Acquire, many in a compacted log).
type logRecord struct {
	kind    byte
	snaps   []persistence.Snapshot // kindSave; an empty State deletes; Epoch is not logged, timers are
	job     string                 // kindCommit
	offsets map[string]int64       // kindCommit
	epochs  []epochEntry           // kindEpoch
	lin     persistence.Lineage    // kindLineage (with job and offsets)
}

// epochEntry sets one key's owner epoch (always >= 1).
type epochEntry struct {
	job   string
	key   record.Key
	epoch int64
}

func (r logRecord) empty() bool {
	switch r.kind {
	case kindSave:
		return len(r.snaps) == 0
	case kindEpoch:
		return len(r.epochs) == 0
	case kindLineage:
		return false
	}
	return len(r.offsets) == 0
}

// encodeRecord appends the framed record r to dst.
func encodeRecord(dst []byte, r logRecord) ([]byte, error) {
	start := len(dst)
	dst = append(dst, make([]byte, frameHeader)...)
	dst = append(dst, r.kind)
	switch r.kind {
	case kindSave:
		timers := slices.ContainsFunc(r.snaps, func(sn persistence.Snapshot) bool { return sn.HasTimer })
		parts := slices.ContainsFunc(r.snaps, func(sn persistence.Snapshot) bool { return sn.Delta || len(sn.Parts) > 0 })
		switch {
		case parts:
			dst[len(dst)-1], timers = kindSaveParts, true
		case timers:
			dst[len(dst)-1] = kindSaveTimers
		}
		dst = binary.AppendUvarint(dst, uint64(len(r.snaps)))
		for _, sn := range r.snaps {
			dst = appendString(dst, sn.Job)
			dst = appendString(dst, string(sn.Key))
			dst = binary.AppendUvarint(dst, uint64(len(sn.State)))
			dst = append(dst, sn.State...)
			dst = appendSnapOffsets(dst, sn.Offsets)
			if !timers {
				continue
			}
			if !sn.HasTimer {
				dst = append(dst, 0)
			} else {
				if sn.NextTimer < persistence.MinTimer || sn.NextTimer > persistence.MaxTimer {
					return dst[:start], fmt.Errorf("timer %d of key %q is out of range", sn.NextTimer, sn.Key)
				}
				dst = append(dst, 1)
				dst = binary.AppendVarint(dst, sn.NextTimer)
			}
			if parts {
				dst = appendParts(dst, sn)
			}
		}
	case kindCommit:
		dst = appendString(dst, r.job)
		dst = appendOffsets(dst, r.offsets)
	case kindLineage:
		if r.lin.Incarnation == "" || r.lin.Floor < 0 || r.lin.Seq < 0 {
			return dst[:start], fmt.Errorf("bad lineage %v of job %q", r.lin, r.job)
		}
		dst = appendString(dst, r.job)
		dst = appendString(dst, r.lin.Incarnation)
		dst = binary.AppendUvarint(dst, uint64(r.lin.Floor))
		dst = binary.AppendUvarint(dst, uint64(r.lin.Seq))
		dst = appendOffsets(dst, r.offsets)
	case kindEpoch:
		dst = binary.AppendUvarint(dst, uint64(len(r.epochs)))
		for _, e := range r.epochs {
			if e.epoch < 1 {
				return dst[:start], fmt.Errorf("owner epoch %d of key %q is not positive", e.epoch, e.key)
			}
			dst = appendString(dst, e.job)
			dst = appendString(dst, string(e.key))
			dst = binary.AppendUvarint(dst, uint64(e.epoch))
		}
	default:
		return dst[:start], fmt.Errorf("unknown record kind %d", r.kind)
	}
	payload := dst[start+frameHeader:]
	if len(payload) > maxRecord {
		return dst[:start], fmt.Errorf("record of %d bytes exceeds the limit of %d", len(payload), maxRecord)
	}
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, crcTable))
	return dst, nil
}

// appendParts appends a kind 6 snapshot's parts field: 0x00 (whole) or
// 0x01 (delta), uvarint n, n × (str name, str value).
func appendParts(dst []byte, sn persistence.Snapshot) []byte {
	flag := byte(0)
	if sn.Delta {
		flag = 1
	}
	dst = append(dst, flag)
	dst = binary.AppendUvarint(dst, uint64(len(sn.Parts)))
	for _, p := range sn.Parts {
		dst = appendString(dst, p.Name)
		dst = binary.AppendUvarint(dst, uint64(len(p.Value)))
		dst = append(dst, p.Value...)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendSnapOffsets appends a snapshot's offsets as appendOffsets does a
// map (in their order; a log written before they were record.Offsets has
// them in a map's).
func appendSnapOffsets(dst []byte, offsets record.Offsets) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(offsets)))
	for _, po := range offsets {
		dst = appendString(dst, po.Partition)
		dst = binary.AppendVarint(dst, po.Offset)
	}
	return dst
}

func appendOffsets(dst []byte, offsets map[string]int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(offsets)))
	for p, o := range offsets {
		dst = appendString(dst, p)
		dst = binary.AppendVarint(dst, o)
	}
	return dst
}

// decodePayload decodes one record payload (without its frame). The result
// does not alias b.
func decodePayload(b []byte) (logRecord, error) {
	d := decoder{b: b}
	r := logRecord{kind: d.byte()}
	switch r.kind {
	case kindSave, kindSaveTimers, kindSaveParts:
		parts := r.kind == kindSaveParts
		timers := r.kind == kindSaveTimers || parts
		r.kind = kindSave
		n := d.count(3)
		r.snaps = make([]persistence.Snapshot, 0, n)
		for range n {
			var sn persistence.Snapshot
			sn.Job = d.string()
			sn.Key = record.Key(d.string())
			if st := d.bytes(); len(st) > 0 {
				sn.State = []byte(string(st))
			}
			sn.Offsets = d.snapOffsets()
			if timers {
				sn.HasTimer, sn.NextTimer = d.timer()
			}
			if parts {
				sn.Delta, sn.Parts = d.parts()
			}
			if d.err != nil {
				break
			}
			r.snaps = append(r.snaps, sn)
		}
	case kindCommit:
		r.job = d.string()
		r.offsets = d.offsets()
	case kindLineage:
		r.job = d.string()
		r.lin.Incarnation = d.string()
		floor, seq := d.uvarint(), d.uvarint()
		r.offsets = d.offsets()
		if d.err == nil && (r.lin.Incarnation == "" || floor > math.MaxInt64 || seq > math.MaxInt64) {
			d.err = fmt.Errorf("bad lineage of job %q", r.job)
		}
		r.lin.Floor, r.lin.Seq = int64(floor), int64(seq)
	case kindEpoch:
		n := d.count(3)
		r.epochs = make([]epochEntry, 0, n)
		for range n {
			e := epochEntry{job: d.string(), key: record.Key(d.string())}
			v := d.uvarint()
			if d.err != nil {
				break
			}
			if v < 1 || v > math.MaxInt64 {
				d.err = fmt.Errorf("owner epoch %d out of range", v)
				break
			}
			e.epoch = int64(v)
			r.epochs = append(r.epochs, e)
		}
	default:
		if d.err == nil {
			d.err = fmt.Errorf("unknown record kind %d", r.kind)
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return logRecord{}, d.err
	}
	return r, nil
}

// decoder reads the log's primitives; the first error sticks and makes every
// later read return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated %s", what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("kind")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads an element count; each element takes at least min bytes, so a
// count the remaining bytes cannot hold is an error rather than a huge
// allocation.
func (d *decoder) count(min int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.fail("count")
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail("string")
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) offsets() map[string]int64 {
	m := map[string]int64{}
	d.eachOffset(func(p string, off int64) { m[p] = off })
	if d.err != nil {
		return nil
	}
	return m
}

// eachOffset reads an offsets field (a count, then partition id and
// varint offset pairs), handing each pair to fn until the first error.
func (d *decoder) eachOffset(fn func(part string, off int64)) {
	n := d.count(2)
	for range n {
		p := d.string()
		off, k := binary.Varint(d.b)
		if k <= 0 {
			d.fail("offset")
		}
		if d.err != nil {
			return
		}
		d.b = d.b[k:]
		fn(p, off)
	}
}

// snapOffsets reads a snapshot's offsets field, put in order.
func (d *decoder) snapOffsets() record.Offsets {
	var o record.Offsets
	d.eachOffset(func(p string, off int64) {
		o = append(o, record.PartitionOffset{Partition: p, Offset: off})
	})
	if len(o) == 0 || d.err != nil {
		return nil
	}
	if err := record.SortOffsets(o); err != nil {
		d.err = err
		return nil
	}
	return o
}

// parts reads a kind 6 snapshot's parts field (values copied).
func (d *decoder) parts() (bool, []persistence.Part) {
	var delta bool
	switch d.byte() {
	case 0:
	case 1:
		delta = true
	default:
		if d.err == nil {
			d.err = errors.New("bad parts flag")
		}
		return false, nil
	}
	n := d.count(2)
	var out []persistence.Part
	for range n {
		name := d.string()
		var v []byte
		if b := d.bytes(); len(b) > 0 {
			v = []byte(string(b))
		}
		if d.err != nil {
			return false, nil
		}
		if name == "" {
			d.err = errors.New("part without a name")
			return false, nil
		}
		out = append(out, persistence.Part{Name: name, Value: v})
	}
	return delta, out
}

// timer reads a snapshot's timer field: 0, or 1 and a varint within
// [persistence.MinTimer, persistence.MaxTimer].
func (d *decoder) timer() (bool, int64) {
	switch d.byte() {
	case 0:
		return false, 0
	case 1:
	default:
		if d.err == nil {
			d.err = errors.New("bad timer flag")
		}
		return false, 0
	}
	at, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail("timer")
		return false, 0
	}
	d.b = d.b[k:]
	if at < persistence.MinTimer || at > persistence.MaxTimer {
		if d.err == nil {
			d.err = fmt.Errorf("timer %d out of range", at)
		}
		return false, 0
	}
	return true, at
}
