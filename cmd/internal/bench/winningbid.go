package bench

import (
	"cmp"
	"errors"
	"math"
	"runtime"
	"slices"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/keycore"
	"github.com/joinery/joinery/record"
)

// bidJob is Nexmark q9, "winning bids" (Flink's nexmark q9.sql): per
// auction, the highest bid among the bids on it whose time lies in the
// auction's lifetime, dateTime <= bid.dateTime <= expires, ties going to
// the earlier bid (ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price
// DESC, B.dateTime ASC) = 1), and then to the lower bid id (the synthetic
// event number: Flink leaves a full tie undefined). Auctions without a bid
// in their lifetime have no row. Flink's SQL keeps a changelog of the
// current winner; Beam's WinningBids (and this engine) emit the winner once,
// when the watermark passes the auction's expiry: the final tables agree.
//
// On the engine's pieces: per auction id a bidMachine — a joins.Interval
// (auction left, bid right, Lower 0, Upper the longest lifetime the
// generator makes) pairing every bid with its auction, its FlatJoin
// dropping the pairs past the auction's own expiry (the interval join's
// bounds are fixed per job, the lifetime is per auction), and a reducer
// keeping the best pair, emitted by a timer at expires+1 — driven by a
// keycore.Machines as every event-time join is. The interval join's timers
// and the reducer's share the key's timers: a firing goes to both.
type bidJob struct {
	bound   int64 // out-of-orderness, ms
	maxLife int64 // longest auction lifetime, ms
}

// q9Cols are the output columns (Flink's q9 sink table): the auction's
// columns, then the winning bid's.
var q9Cols = func() []baseCol {
	cs := []baseCol{
		{"id", "id", record.Left}, {"itemName", "itemName", record.Left}, {"description", "description", record.Left},
		{"initialBid", "initialBid", record.Left}, {"reserve", "reserve", record.Left}, {"dateTime", "dateTime", record.Left},
		{"expires", "expires", record.Left}, {"seller", "seller", record.Left}, {"category", "category", record.Left},
		{"extra", "extra", record.Left}, {"auction", "auction", record.Right}, {"bidder", "bidder", record.Right},
		{"price", "price", record.Right}, {"bid_dateTime", "dateTime", record.Right}, {"bid_extra", "extra", record.Right},
	}
	slices.SortFunc(cs, func(a, b baseCol) int { return cmp.Compare(a.name, b.name) })
	return cs
}()

// q9Pair is the interval join's FlatJoin: the pair as {a: auction, b: bid}
// when the bid is within the auction's own lifetime, nothing otherwise.
func q9Pair(a, b record.Row) []record.Row {
	if num(b, "dateTime") > num(a, "expires") {
		return nil
	}
	return []record.Row{{"a": a, "b": b}}
}

// q9Better reports whether bid (price, ts, id) beats the best so far.
func q9Better(price, ts, id, bPrice, bTs, bID int64) bool {
	if price != bPrice {
		return price > bPrice
	}
	if ts != bTs {
		return ts < bTs
	}
	return id < bID
}

// element decodes line i: an auction (left, keyed by id) or a bid (right,
// keyed by auction); ok false for persons.
func (j *bidJob) element(i int, line []byte) (joins.Element, string, bool) {
	var side record.Side
	var col string
	switch tableOf(line) {
	case "auction":
		side, col = record.Left, "id"
	case "bid":
		side, col = record.Right, "auction"
	default:
		return joins.Element{}, "", false
	}
	pos := record.Position{Source: "in", Offset: int64(i)}
	ch, err := debezium.Decode(line, pos)
	if err != nil || ch.After == nil {
		return joins.Element{}, "", false
	}
	key, ok := rowKey(ch.After, col)
	if !ok {
		return joins.Element{}, "", false
	}
	return joins.Element{Side: side, Ts: num(ch.After, "dateTime"), Row: ch.After, Pos: pos}, key, true
}

// winner is the best (auction, bid) pair seen.
type winner struct {
	auction, bid  record.Row
	price, ts, id int64
}

func (w *winner) offer(a, b record.Row) {
	price, ts, id := num(b, "price"), num(b, "dateTime"), num(b, "id")
	if w.bid == nil || q9Better(price, ts, id, w.price, w.ts, w.id) {
		*w = winner{auction: a, bid: b, price: price, ts: ts, id: id}
	}
}

// hash folds the winner's output row, as the engine's HashOutput would.
func (w *winner) hash(h *Hasher, expires int64) uint64 {
	h.Begin("", expires)
	for _, c := range q9Cols {
		src := w.auction
		if c.side == record.Right {
			src = w.bid
		}
		h.Col(c.name, src[c.field])
	}
	return h.Sum64()
}

// bidMachine is one auction id's join on the engine side, a joins.Timed
// that a keycore.Machine drives as it drives every event-time join: the
// interval join's buffers, the auction's expiry once seen (0 before),
// whether its winner went out, and the best pair so far. The interval
// join's pairs go to the reducer instead of out; the winner goes out when
// the timer at expires+1 fires.
type bidMachine struct {
	iv      *joins.Interval
	expires int64
	done    bool
	best    winner
}

// reduce offers the interval join's pairs from fx.Out[from:] to the
// reducer and removes them from the outputs.
func (k *bidMachine) reduce(fx *joins.Effects, from int) {
	for _, o := range fx.Out[from:] {
		k.best.offer(o.Row["a"].(record.Row), o.Row["b"].(record.Row))
	}
	fx.Out = fx.Out[:from]
}

func (k *bidMachine) OnElement(e joins.Element, wm int64, fx *joins.Effects) {
	late := len(fx.Late)
	k.iv.OnElement(e, wm, fx)
	k.reduce(fx, 0)
	if e.Side == record.Left && len(fx.Late) == late {
		k.expires = num(e.Row, "expires")
		fx.SetTimers = append(fx.SetTimers, k.expires+1)
	}
}

func (k *bidMachine) OnTimer(ts, wm int64, fx *joins.Effects) {
	k.iv.OnTimer(ts, wm, fx)
	k.reduce(fx, 0)
	if k.expires == 0 || k.done || ts <= k.expires {
		return
	}
	k.done = true
	if k.best.bid != nil {
		o := record.Output{Kind: record.Insert, Ts: k.expires, Row: make(record.Row, len(q9Cols))}
		for _, col := range q9Cols {
			src := k.best.auction
			if col.side == record.Right {
				src = k.best.bid
			}
			o.Row[col.name] = src[col.field]
		}
		fx.Out = append(fx.Out, o)
	}
	k.best = winner{}
}

func (k *bidMachine) Empty() bool { return k.iv.Empty() && (k.expires == 0 || k.done) }

// Snapshot and Restore: the benchmark never persists a key.
func (k *bidMachine) Snapshot() []byte { return nil }
func (k *bidMachine) Restore([]byte) error {
	return errors.New("bench: the q9 machine is not persisted")
}

// engine is q9 on the engine's pieces: a machineCore of bidMachines.
func (j *bidJob) engine() Stepper {
	spec := &joins.IntervalSpec{Left: "auction", Right: "bid", Lower: 0, Upper: j.maxLife, FlatJoin: q9Pair}
	if err := spec.Validate(); err != nil {
		panic(err)
	}
	return newMachineCore(keycore.MachineSpec{NewTimed: func() joins.Timed {
		return &bidMachine{iv: joins.NewInterval(spec)}
	}}, j.bound, j.element)
}

// baseAuction is an open auction in the baseline.
type baseAuction struct {
	row         record.Row
	ts, expires int64
	best        winner
}

// baseBid is a bid whose auction has not arrived (yet).
type baseBid struct {
	row record.Row
	ts  int64
}

// baseline: open auctions by id and the bids that came before their auction
// in plain maps; a bid updates its auction's best on arrival; an auction is
// emitted and dropped when the watermark passes its expiry, a waiting bid
// dropped when it passes the bid's time (no auction arriving later can
// start at or before it).
func (j *bidJob) baseline(lines [][]byte, probe func(live int)) RunResult {
	open := map[int64]*baseAuction{}
	waiting := map[int64][]baseBid{}
	var h Hasher
	var res RunResult
	wm, maxTs, next := int64(math.MinInt64), int64(math.MinInt64), int64(math.MaxInt64)
	sweep := func() {
		next = math.MaxInt64
		for id, a := range open {
			if a.expires >= wm {
				next = min(next, a.expires+1)
				continue
			}
			if a.best.bid != nil {
				res.Check.Add(record.Insert, a.best.hash(&h, a.expires))
			}
			delete(open, id)
		}
		for id, bs := range waiting {
			keep := bs[:0]
			for _, b := range bs {
				if b.ts >= wm {
					keep = append(keep, b)
					next = min(next, b.ts+1)
				}
			}
			if len(keep) == 0 {
				delete(waiting, id)
			} else {
				waiting[id] = keep
			}
		}
	}
	for i, line := range lines {
		e, _, ok := j.element(i, line)
		if !ok {
			continue
		}
		if e.Side == record.Left {
			id := num(e.Row, "id")
			a := &baseAuction{row: e.Row, ts: e.Ts, expires: num(e.Row, "expires")}
			for _, b := range waiting[id] {
				if b.ts >= a.ts && b.ts <= a.expires {
					a.best.offer(a.row, b.row)
				}
			}
			delete(waiting, id)
			open[id] = a
			next = min(next, a.expires+1)
		} else {
			id := num(e.Row, "auction")
			if a := open[id]; a != nil {
				if e.Ts >= a.ts && e.Ts <= a.expires {
					a.best.offer(a.row, e.Row)
				}
			} else {
				waiting[id] = append(waiting[id], baseBid{row: e.Row, ts: e.Ts})
				next = min(next, e.Ts+1)
			}
		}
		if e.Ts > maxTs {
			maxTs = e.Ts
			wm = max(wm, maxTs-j.bound-1)
			if wm >= next {
				sweep()
			}
		}
	}
	res.LiveKeys = len(open) + len(waiting)
	probe(res.LiveKeys)
	runtime.KeepAlive(open)
	wm = math.MaxInt64
	sweep()
	return res
}
