package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"runtime"

	"github.com/joinery/joinery/cmd/internal/bench/nexmark"
	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// windowJob is Nexmark q8 as a window join: persons (by id) and auctions
// (by seller) in the same tumbling window are joined pairwise when the
// watermark, max event time - bound - 1, passes the window.
type windowJob struct {
	size  int64 // ms
	bound int64 // out-of-orderness, ms
}

var q8Spec = &joins.WindowJoinSpec{Type: joins.TimedInner, Left: "person", Right: "auction",
	Assigner: joins.Tumbling(10_000, 0),
	Project: []joins.Column{{Name: "id", Side: record.Left, Field: "id"}, {Name: "name", Side: record.Left, Field: "name"},
		{Name: "reserve", Side: record.Right, Field: "reserve"}}}

// element decodes line i into a side, key, time and row; ok false for bids.
func (w *windowJob) element(i int, line []byte) (joins.Element, string, bool) {
	pos := record.Position{Source: "in", Offset: int64(i)}
	ch, err := debezium.Decode(line, pos)
	if err != nil || ch.After == nil {
		return joins.Element{}, "", false
	}
	var side record.Side
	var key string
	var ok bool
	switch tableOf(line) {
	case "person":
		side = record.Left
		key, ok = rowKey(ch.After, "id")
	case "auction":
		side = record.Right
		key, ok = rowKey(ch.After, "seller")
	}
	if !ok {
		return joins.Element{}, "", false
	}
	return joins.Element{Side: side, Ts: num(ch.After, "dateTime"), Row: ch.After, Pos: pos}, key, true
}

// q8Person and q8Auction are the node's input events: the fields q8
// reads, as plain JSON.
type q8Person struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	DateTime int64  `json:"dateTime"`
}

type q8Auction struct {
	Seller   int64 `json:"seller"`
	Reserve  int64 `json:"reserve"`
	DateTime int64 `json:"dateTime"`
}

// generate is the Nexmark stream as Debezium lines (the core level's
// input) and, for the node levels, its persons and auctions as plain JSON
// events in two files (Input.Sides "persons" and "auctions", in stream
// order, so each file is out of order by no more than the stream: bound).
func (w *windowJob) generate(s Scale, seed uint64) Input {
	g := nexmark.New(nexmark.Config{Seed: seed, Events: s.NexmarkEvents, Pad: true})
	in := Input{Sides: map[string][][]byte{}}
	for e, ok := g.Next(); ok; e, ok = g.Next() {
		in.Lines = append(in.Lines, e.JSON())
		var v any
		var src string
		switch e.Kind {
		case nexmark.KindPerson:
			v, src = q8Person{ID: e.Person.ID, Name: e.Person.Name, DateTime: e.Person.DateTime}, "persons"
		case nexmark.KindAuction:
			v, src = q8Auction{Seller: e.Auction.Seller, Reserve: e.Auction.Reserve, DateTime: e.Auction.DateTime}, "auctions"
		default:
			continue
		}
		line, err := json.Marshal(v)
		if err != nil {
			panic(err) // plain structs always encode
		}
		in.NodeLines = append(in.NodeLines, line)
		in.Sides[src] = append(in.Sides[src], line)
	}
	return in
}

// plainElement decodes line i of the node's input (a q8Person or
// q8Auction) as the node's event-time reader does (encoding/json,
// json.Number numbers). The union of the two files has no side: an auction
// is the event with a seller.
func plainElement(i int, line []byte) (joins.Element, string, bool) {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var row record.Row
	if err := d.Decode(&row); err != nil || row == nil {
		return joins.Element{}, "", false
	}
	side, col := record.Left, "id"
	if _, ok := row["seller"]; ok {
		side, col = record.Right, "seller"
	}
	key, ok := rowKey(row, col)
	if !ok {
		return joins.Element{}, "", false
	}
	return joins.Element{Side: side, Ts: num(row, "dateTime"), Row: row, Pos: record.Position{Source: "in", Offset: int64(i)}}, key, true
}

func (w *windowJob) engine() Stepper {
	if err := q8Spec.Validate(); err != nil {
		panic(err)
	}
	return newMachineCore(keycore.MachineSpec{NewTimed: func() joins.Timed { return joins.NewWindowJoin(q8Spec) }}, w.bound, w.element)
}

// machineCore runs an event-time join on the engine's pieces: a
// keycore.Machines (one machine per key with its timers, as a key actor's
// core holds it), and the watermark max(ts) - bound - 1 advanced as events
// arrive, firing due timers in (time, key) order. q8 and q9 run on it.
type machineCore struct {
	ms      *keycore.Machines
	bound   int64
	element func(i int, line []byte) (joins.Element, string, bool)
	outs    []record.Output
	late    []joins.Late
	h       Hasher
	res     RunResult
	wm      int64
	maxTs   int64
	n       int // outputs of the current step
}

func newMachineCore(spec keycore.MachineSpec, bound int64, element func(int, []byte) (joins.Element, string, bool)) *machineCore {
	return &machineCore{ms: keycore.NewMachines(spec), bound: bound, element: element, wm: math.MinInt64, maxTs: math.MinInt64}
}

// take counts a step's outputs and late elements.
func (c *machineCore) take(outs []record.Output, late []joins.Late) {
	for _, o := range outs {
		c.res.Check.Add(o.Kind, c.h.HashOutput(o, false))
	}
	c.n += len(outs)
	c.res.Late += len(late)
	c.outs, c.late = outs[:0], late[:0]
}

func (c *machineCore) advance(to int64) {
	c.wm = to
	for {
		_, outs, late, _, ok := c.ms.FireNext(to, c.outs, c.late)
		if !ok {
			return
		}
		c.take(outs, late)
	}
}

func (c *machineCore) Step(i int, line []byte) int {
	e, key, ok := c.element(i, line)
	if !ok {
		return 0
	}
	c.n = 0
	k := record.Key(key)
	m := c.ms.Get(k)
	c.take(m.OnElement(e, c.wm, c.outs, c.late))
	c.ms.Stepped(k, m)
	if e.Ts > c.maxTs {
		c.maxTs = e.Ts
		if next := c.maxTs - c.bound - 1; next > c.wm {
			c.advance(next)
		}
	}
	return c.n
}

func (c *machineCore) Live() int { return c.ms.Len() }

func (c *machineCore) Finish() RunResult {
	c.advance(math.MaxInt64)
	return c.res
}

type baseWin struct {
	persons  map[string][]record.Row
	auctions map[string][]record.Row
}

// baseline: per window start, per key, the rows of each side in plain maps;
// a window is joined and dropped when the watermark passes its end.
func (w *windowJob) baseline(lines [][]byte, probe func(live int)) RunResult {
	return w.baselineOf(lines, probe, w.element)
}

// nodeBaseline is baseline over the node's input (plain JSON events).
func (w *windowJob) nodeBaseline(lines [][]byte, probe func(live int)) RunResult {
	return w.baselineOf(lines, probe, plainElement)
}

func (w *windowJob) baselineOf(lines [][]byte, probe func(live int), element func(int, []byte) (joins.Element, string, bool)) RunResult {
	size := q8Spec.Assigner.Size
	wins := map[int64]*baseWin{}
	var h Hasher
	var res RunResult
	wm, maxTs, next := int64(math.MinInt64), int64(math.MinInt64), int64(math.MaxInt64)
	fire := func() {
		next = math.MaxInt64
		for start, win := range wins {
			end := start + size
			if end-1 > wm {
				next = min(next, end-1)
				continue
			}
			for k, ps := range win.persons {
				for _, a := range win.auctions[k] {
					for _, p := range ps {
						h.Begin("", end-1)
						h.Col("id", p["id"])
						h.Col("name", p["name"])
						h.Col("reserve", a["reserve"])
						res.Check.Add(record.Insert, h.Sum64())
					}
				}
			}
			delete(wins, start)
		}
	}
	for i, line := range lines {
		e, key, ok := element(i, line)
		if !ok {
			continue
		}
		start := joins.WindowStart(e.Ts, 0, size)
		if start+size-1 <= wm {
			res.Late++
			continue
		}
		win := wins[start]
		if win == nil {
			win = &baseWin{persons: map[string][]record.Row{}, auctions: map[string][]record.Row{}}
			wins[start] = win
			next = min(next, start+size-1)
		}
		if e.Side == record.Left {
			win.persons[key] = append(win.persons[key], e.Row)
		} else {
			win.auctions[key] = append(win.auctions[key], e.Row)
		}
		if e.Ts > maxTs {
			maxTs = e.Ts
			wm = max(wm, maxTs-w.bound-1)
			if wm >= next {
				fire()
			}
		}
	}
	for _, win := range wins {
		res.LiveKeys += len(win.persons) + len(win.auctions)
	}
	probe(res.LiveKeys)
	runtime.KeepAlive(wins)
	wm = math.MaxInt64
	fire()
	return res
}
