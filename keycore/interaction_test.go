package keycore

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/joinery/joinery/internal/stateparts"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/internal/transcript"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected blocks of keycore/testdata/*.txt")

// TestCoreInteraction runs the protocol transcripts of testdata/*.txt
// (etcd-io/raft interaction-test style): each block is a command, a line
// "----", and what the core answered; blocks are separated by blank lines
// and lines starting with # are comments. With -rewrite the answers are
// regenerated; inspect the diff before committing.
//
// The harness is the driver a key actor is, with a store in memory:
//
//	new cdc|interval|window      a new core: users ⋈ domains on user id, an interval join [-1, 1],
//	                             or a tumbling 10 ms window join
//	step [now=ms] <request JSON>  Step; a Reload is answered as the actor does: reset, reload, step again
//	durable                      the oldest pending write becomes the stored state
//	fail                         the oldest pending write failed: the activation is dropped (reset)
//	reactivate                   a new activation: a new core, epoch+1, restored from the stored state
//	state                        the core's offsets, outbox, timers and watermark
//
// A request's events are {"side":"l"|"r","op":"c|u|d","before":{…},"after":{…},
// "pos":"src/part@offset","ts":…,"wm":…,"srcpos":"…"}.
func TestCoreInteraction(t *testing.T) {
	transcript.Run(t, filepath.Join("testdata", "*.txt"), *rewrite, func() func(*testing.T, string) string {
		return (&harness{}).run
	})
}

// TestCoreInteractionParts runs every transcript again with incremental
// writes (Config.Parts): the store model applies the deltas, and the
// answers must be the same as the transcript's.
func TestCoreInteractionParts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := transcript.Parse(string(b))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			env := &harness{parts: true}
			for _, bl := range blocks {
				if got := env.run(t, bl.Cmd); got != bl.Want {
					t.Errorf("%s:%d (incremental writes): %s\n--- want\n%s--- got\n%s", path, bl.Line, bl.Cmd, bl.Want, got)
				}
			}
		})
	}
}

type stored struct {
	offsets record.Offsets
	state   []byte
	parts   map[string][]byte // Config.Parts: the state's parts; state is then the base
}

// apply makes w the stored state (on top of s for a delta) and returns it.
func (s *stored) apply(w *Write) *stored {
	n := &stored{offsets: slices.Clone(w.Offsets), state: w.State, parts: map[string][]byte{}}
	if len(w.State) == 0 {
		return n
	}
	if w.Delta && s != nil {
		maps.Copy(n.parts, s.parts)
	}
	stateparts.Apply(n.parts, w.Parts)
	return n
}

// loaded is the state as a store's Load returns it.
func (s *stored) loaded() []byte {
	if len(s.parts) == 0 {
		return s.state
	}
	var ps []stateparts.Part
	for name, v := range s.parts {
		ps = append(ps, stateparts.Part{Name: name, Value: v})
	}
	return stateparts.Pack(s.state, ps)
}

type harness struct {
	cfg     *Config
	core    *Core
	epoch   int64
	store   *stored
	pending []*Write
	parts   bool // Config.Parts
}

var usersDomains = &joins.CDCSpec{Type: joins.Inner,
	Left:  joins.SideSpec{Name: "users", PK: "id", JoinOn: "id"},
	Right: joins.SideSpec{Name: "domains", PK: "id", JoinOn: "user_id"}}

func (h *harness) activate() error {
	h.epoch++
	h.core = New(h.cfg, "k")
	h.core.SetEpoch(h.epoch)
	return h.load()
}

func (h *harness) load() error {
	if h.store == nil {
		h.core.Init()
		return nil
	}
	return h.core.Restore(h.store.offsets, h.store.loaded())
}

func (h *harness) run(t *testing.T, cmd string) string {
	t.Helper()
	verb, arg, _ := strings.Cut(cmd, " ")
	switch verb {
	case "new":
		switch arg {
		case "cdc":
			h.cfg = &Config{Machine: MachineSpec{CDC: usersDomains}}
		case "cdc coalesce":
			h.cfg = &Config{Machine: MachineSpec{CDC: usersDomains}, Coalesce: true}
		case "interval":
			spec := &joins.IntervalSpec{Left: "l", Right: "r", Lower: -1, Upper: 1}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			h.cfg = &Config{Machine: MachineSpec{NewTimed: func() joins.Timed { return joins.NewInterval(spec) }}}
		case "window":
			spec := &joins.WindowJoinSpec{Type: joins.TimedInner, Left: "l", Right: "r", Assigner: joins.Tumbling(10, 0)}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			h.cfg = &Config{Machine: MachineSpec{NewTimed: func() joins.Timed { return joins.NewWindowJoin(spec) }}}
		default:
			t.Fatalf("new %q", arg)
		}
		h.cfg.Parts = h.parts
		h.store, h.pending, h.epoch = nil, nil, 0
		if err := h.activate(); err != nil {
			t.Fatal(err)
		}
		return "ok\n"
	case "step":
		now := int64(0)
		if strings.HasPrefix(arg, "now=") {
			n, rest, _ := strings.Cut(arg, " ")
			v, err := strconv.ParseInt(strings.TrimPrefix(n, "now="), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			now, arg = v, rest
		}
		req := parseRequest(t, arg)
		var b strings.Builder
		r := h.core.Step(req, now)
		if r.Reload {
			b.WriteString("reload: reset, load the stored state, step again\n")
			h.core.Reset()
			h.epoch++
			h.core.SetEpoch(h.epoch)
			if err := h.load(); err != nil {
				t.Fatal(err)
			}
			r = h.core.Step(req, now)
		}
		if r.Write != nil {
			h.pending = append(h.pending, r.Write)
		}
		b.WriteString(renderReady(r))
		return b.String()
	case "durable", "fail":
		if len(h.pending) == 0 {
			return "nothing pending\n"
		}
		w := h.pending[0]
		h.pending = h.pending[1:]
		h.core.Durable()
		if verb == "fail" {
			h.core.Reset()
			return "write failed: activation reset\n"
		}
		h.store = h.store.apply(w)
		out := "stored " + testutil.RenderOffsets(w.Offsets.Map()) + "\n"
		if h.core.Pending() == 0 && h.core.Dirty() {
			// A coalescing driver writes what waited once nothing is pending.
			fw, err := h.core.Flush()
			if err != nil {
				t.Fatal(err)
			}
			h.pending = append(h.pending, fw)
			out += fmt.Sprintf("flush: write offsets=%s state=%v; answers the waiting steps once durable\n", testutil.RenderOffsets(fw.Offsets.Map()), fw.State != nil)
		}
		return out
	case "reactivate":
		h.pending = nil
		if err := h.activate(); err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmt.Sprintf("epoch %d\n", h.epoch)
	case "state":
		return h.renderState()
	}
	t.Fatalf("unknown command %q", cmd)
	return ""
}

type jsonEvent struct {
	Side   string     `json:"side"`
	Op     string     `json:"op"`
	Before record.Row `json:"before"`
	After  record.Row `json:"after"`
	Pos    string     `json:"pos"`
	Ts     int64      `json:"ts"`
	Wm     *int64     `json:"wm"`
	SrcPos string     `json:"srcpos"`
}

type jsonRequest struct {
	Events    []jsonEvent      `json:"events"`
	Prev      map[string]int64 `json:"prev"`
	Committed map[string]int64 `json:"committed"`
	Fire      *int64           `json:"fire"`
	Sender    string           `json:"sender"`
	Resend    bool             `json:"resend"`
}

func parseRequest(t *testing.T, s string) *Request {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	d.DisallowUnknownFields()
	var jr jsonRequest
	if err := d.Decode(&jr); err != nil {
		t.Fatalf("request %s: %v", s, err)
	}
	req := &Request{Prev: jr.Prev, Committed: jr.Committed, Sender: jr.Sender, Resend: jr.Resend}
	if jr.Fire != nil {
		req.Fire, req.Watermark = true, *jr.Fire
	}
	for _, je := range jr.Events {
		e := Event{Before: je.Before, After: je.After, Ts: je.Ts, SrcPos: je.SrcPos, Watermark: -1 << 63}
		if je.Wm != nil {
			e.Watermark = *je.Wm
		}
		if je.Side == "r" {
			e.Side = record.Right
		}
		if je.Op != "" {
			op, ok := record.ParseOp(je.Op)
			if !ok {
				t.Fatalf("op %q", je.Op)
			}
			e.Op = op
		}
		src, rest, _ := strings.Cut(je.Pos, "/")
		part, off, _ := strings.Cut(rest, "@")
		p, err1 := strconv.ParseInt(part, 10, 32)
		o, err2 := strconv.ParseInt(off, 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("pos %q: want source/partition@offset", je.Pos)
		}
		e.Pos = record.Position{Source: src, Partition: int32(p), Offset: o}
		req.Events = append(req.Events, e)
	}
	return req
}

func renderRow(r record.Row) string {
	if r == nil {
		return "null"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(r)
	return strings.TrimSpace(buf.String())
}

func renderReady(r Ready) string {
	var b strings.Builder
	switch {
	case r.Gap:
		b.WriteString("refused: gap\n")
		return b.String()
	case r.Err != nil:
		fmt.Fprintf(&b, "refused: %v\n", r.Err)
		return b.String()
	}
	if r.Skipped > 0 || r.Duplicates > 0 {
		fmt.Fprintf(&b, "skipped=%d duplicates=%d\n", r.Skipped, r.Duplicates)
	}
	for _, o := range r.Outputs {
		fmt.Fprintf(&b, "out %s id=%s pk=%s seq=%d ts=%d row=%s\n", o.Kind, o.ID, o.PK, o.Seq, o.Ts, renderRow(o.Row))
	}
	for _, l := range r.Late {
		fmt.Fprintf(&b, "late %s ts=%d at %s: %s\n", l.Element.Side, l.Element.Ts, l.Element.Pos, l.Reason)
	}
	if r.Wait {
		b.WriteString("wait: answer with the next flush\n")
		return b.String()
	}
	if r.Write == nil {
		b.WriteString("answer now (nothing to write)\n")
		return b.String()
	}
	fmt.Fprintf(&b, "write offsets=%s state=%v", testutil.RenderOffsets(r.Write.Offsets.Map()), r.Write.State != nil)
	if r.Write.HasTimer {
		fmt.Fprintf(&b, " next-timer=%d", r.Write.NextTimer)
	}
	b.WriteString("; answer once durable\n")
	return b.String()
}

func (h *harness) renderState() string {
	c := h.core
	var b strings.Builder
	fmt.Fprintf(&b, "epoch=%d loaded=%v pending=%d offsets=%s outbox=%d", c.Epoch(), c.Loaded(), c.Pending(), testutil.RenderOffsets(c.Offsets().Map()), c.OutboxLen())
	if m := c.Machine(); m.EventTime() {
		fmt.Fprintf(&b, " timers=%v", m.Timers())
	} else if l := m.CDC().Left(); l != nil {
		fmt.Fprintf(&b, " left=%s rights=%d", renderRow(l), len(m.CDC().Rights()))
	} else {
		fmt.Fprintf(&b, " rights=%d", len(m.CDC().Rights()))
	}
	b.WriteString("\n")
	return b.String()
}
