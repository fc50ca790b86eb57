package bench

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"

	"github.com/joinery/joinery/record"
)

// Checksum is an order-independent digest of a changelog: the sum of a hash
// per output, added for +I and +U and subtracted for -U and -D, and the net
// row count. It is therefore the digest of the final result table, whatever
// order or batching produced it, so an engine and a baseline that emit
// different (but equivalent) changelogs still agree.
type Checksum struct {
	Sum  uint64 `json:"sum"`
	Rows int64  `json:"rows"`
	Outs int64  `json:"outputs"` // changelog records seen (not compared)
}

// Equal compares the digests (not the output counts).
func (c Checksum) Equal(o Checksum) bool { return c.Sum == o.Sum && c.Rows == o.Rows }

func (c Checksum) String() string { return fmt.Sprintf("%016x/%d", c.Sum, c.Rows) }

// Add folds one output of kind k with hash h.
func (c *Checksum) Add(k record.Kind, h uint64) {
	c.Outs++
	if k == record.Insert || k == record.UpdateAfter {
		c.Sum += h
		c.Rows++
		return
	}
	c.Sum -= h
	c.Rows--
}

// Merge folds in o, the digest of another part of the changelog (another
// node's sink): the sum is order-independent, so the parts' union needs
// no order across them.
func (c *Checksum) Merge(o Checksum) {
	c.Sum += o.Sum
	c.Rows += o.Rows
	c.Outs += o.Outs
}

// seed is fixed for the process: checksums are compared within one run.
var seed = maphash.MakeSeed()

// Hasher hashes an output as its primary key, its event time and its
// columns in name order, each value in its text form.
type Hasher struct {
	h maphash.Hash
}

// Begin starts an output with its primary key and event time.
func (x *Hasher) Begin(pk string, ts int64) {
	x.h.SetSeed(seed)
	x.h.WriteString(pk)
	x.h.WriteByte(0)
	var b [20]byte
	x.h.Write(strconv.AppendInt(b[:0], ts, 10))
	x.h.WriteByte(0)
}

// Col adds one column; columns must come in name order.
func (x *Hasher) Col(name string, v any) {
	x.h.WriteString(name)
	x.h.WriteByte(1)
	switch v := v.(type) {
	case nil:
		x.h.WriteString("\x02null")
	case string:
		x.h.WriteString(v)
	case json.Number:
		x.h.WriteString(string(v))
	case int64:
		var b [20]byte
		x.h.Write(strconv.AppendInt(b[:0], v, 10))
	default:
		x.h.WriteString(fmt.Sprint(v))
	}
	x.h.WriteByte(2)
}

// Sum64 ends the output.
func (x *Hasher) Sum64() uint64 { return x.h.Sum64() }

// HashOutput hashes an engine output (its columns sorted by name). Outputs
// of the changelog join have Ts 0; the event-time joins' PK (built from
// input positions) is left out so that a baseline need not rebuild it.
func (x *Hasher) HashOutput(o record.Output, withPK bool) uint64 {
	pk := ""
	if withPK {
		pk = o.PK
	}
	x.Begin(pk, o.Ts)
	names := make([]string, 0, len(o.Row))
	for k := range o.Row {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		x.Col(k, o.Row[k])
	}
	return x.Sum64()
}
