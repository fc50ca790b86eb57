package sendstate

import (
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/internal/transcript"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected blocks of node/sendstate/testdata/*.txt")

// TestSenderInteraction runs the transcripts of testdata/*.txt, as
// keycore's TestCoreInteraction does (internal/transcript): each block is a
// command, a line "----", and what the sender state answered; blocks are
// separated by blank lines and lines starting with # are comments. With
// -rewrite the answers are regenerated; inspect the diff before committing.
//
// The harness is the node's readers, sharing one Keys:
//
//	reader <name>                         a new reader
//	batch <reader> <key>[=<pos>,…] …      a batch: each key's events at the positions src/partition@offset
//	                                      (none: a firing); Send stamps them, printed in order
//	answered <reader> <seq> <key> …       the batch's requests to the keys were answered
//	commit <reader> [<part>=<off> …] [fire=<wm>]   the reader committed a completed batch
//	resend <reader> <seq> <key>           the resend of the key's request of that batch (and the original, unchanged)
//	state                                 the unanswered requests per key, and each reader's committed offsets
func TestSenderInteraction(t *testing.T) {
	transcript.Run(t, filepath.Join("testdata", "*.txt"), *rewrite, func() func(*testing.T, string) string {
		h := &harness{readers: map[string]*Reader{}, sent: map[string]map[uint64]map[record.Key]*Request{}}
		return h.run
	})
}

type harness struct {
	keys    Keys
	readers map[string]*Reader
	names   []string
	// sent: reader -> seq -> key -> the request as sent.
	sent map[string]map[uint64]map[record.Key]*Request
}

func (h *harness) reader(t *testing.T, name string) *Reader {
	t.Helper()
	r, ok := h.readers[name]
	if !ok {
		t.Fatalf("no reader %q", name)
	}
	return r
}

func (h *harness) run(t *testing.T, cmd string) string {
	t.Helper()
	f := strings.Fields(cmd)
	if len(f) == 0 {
		t.Fatal("empty command")
	}
	switch f[0] {
	case "reader":
		h.readers[f[1]] = NewReader(ReaderID(len(h.names)))
		h.names = append(h.names, f[1])
		h.sent[f[1]] = map[uint64]map[record.Key]*Request{}
		return "ok\n"
	case "batch":
		r := h.reader(t, f[1])
		var b Batch
		for _, arg := range f[2:] {
			k, poss, _ := strings.Cut(arg, "=")
			a := b.Apply(record.Key(k))
			if poss == "" {
				a.Fire = true
				continue
			}
			for _, p := range strings.Split(poss, ",") {
				a.Events = append(a.Events, parsePos(t, p))
			}
		}
		seq := r.NextSeq()
		var out strings.Builder
		fmt.Fprintf(&out, "seq=%d\n", seq)
		sent := map[record.Key]*Request{}
		for _, a := range r.Send(&h.keys, seq, &b, "s1") {
			sent[record.Key(a.Key)] = a
			out.WriteString(renderApply(a))
		}
		h.sent[f[1]][seq] = sent
		return out.String()
	case "answered":
		r := h.reader(t, f[1])
		seq := parseInt(t, f[2])
		var ks []record.Key
		for _, k := range f[3:] {
			ks = append(ks, record.Key(k))
		}
		r.Answered(&h.keys, uint64(seq), ks)
		return h.renderKeys()
	case "commit":
		r := h.reader(t, f[1])
		offs := map[string]int64{}
		fire := int64(math.MinInt64)
		for _, arg := range f[2:] {
			p, v, _ := strings.Cut(arg, "=")
			if p == "fire" {
				fire = parseInt(t, v)
				continue
			}
			offs[p] = parseInt(t, v)
		}
		r.Commit(offs, fire)
		return "committed " + testutil.RenderOffsets(r.Committed()) + "\n"
	case "resend":
		seq := parseInt(t, f[2])
		a := h.sent[f[1]][uint64(seq)][record.Key(f[3])]
		if a == nil {
			t.Fatalf("%s: no such request", cmd)
		}
		again := Resend(a)
		return renderApply(again) + "original: " + renderApply(a)
	case "state":
		var out strings.Builder
		out.WriteString(h.renderKeys())
		for _, n := range h.names {
			fmt.Fprintf(&out, "reader %s committed %s\n", n, testutil.RenderOffsets(h.readers[n].Committed()))
		}
		return out.String()
	}
	t.Fatalf("unknown command %q", cmd)
	return ""
}

func parseInt(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// parsePos reads src/partition@offset as an event at that position.
func parsePos(t *testing.T, s string) keycore.Event {
	t.Helper()
	part, off, ok := strings.Cut(s, "@")
	src, p, ok2 := strings.Cut(part, "/")
	if !ok || !ok2 {
		t.Fatalf("position %q: want src/partition@offset", s)
	}
	return keycore.Event{Pos: record.Position{Source: src, Partition: int32(parseInt(t, p)), Offset: parseInt(t, off)}}
}

func renderApply(a *Request) string {
	var evs []string
	for _, e := range a.Events {
		evs = append(evs, e.Pos.String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s events=[%s]", a.Key, strings.Join(evs, " "))
	if a.Fire {
		b.WriteString(" fire")
	}
	if a.Resend {
		b.WriteString(" resend")
	}
	fmt.Fprintf(&b, " prev=%s", testutil.RenderOffsets(a.Prev))
	if a.Committed != nil {
		fmt.Fprintf(&b, " committed=%s", testutil.RenderOffsets(a.Committed))
	}
	b.WriteString("\n")
	return b.String()
}

func (h *harness) renderKeys() string {
	if h.keys.Len() == 0 {
		return "in flight: none\n"
	}
	var b strings.Builder
	keys := make([]string, 0, h.keys.Len())
	for k := range h.keys.keys {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "in flight %s:", k)
		for id, n := range h.names {
			if s, ok := h.keys.sentBy(record.Key(k), ReaderID(id)); ok {
				fmt.Fprintf(&b, " %s seq=%d %s", n, s.seq, testutil.RenderOffsets(s.offsetsMap()))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
