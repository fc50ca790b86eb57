package bench

import (
	"testing"

	"github.com/joinery/joinery/cmd/internal/bench/nexmark"
	"github.com/joinery/joinery/record"
)

// TestWinningBidsMatchOracle: q9's engine (interval join + reducer on
// timers) and its baseline agree with each other and with a brute-force
// answer (every auction against every bid, after the fact) on small seeded
// streams.
func TestWinningBidsMatchOracle(t *testing.T) {
	for _, seed := range []uint64{1, 7, 42} {
		c := nexmark.Config{Seed: seed, Events: 8_000, Pad: true}
		var lines [][]byte
		var auctions []*nexmark.Auction
		bids := map[int64][]*nexmark.Bid{}
		for _, e := range nexmark.All(c) {
			lines = append(lines, e.JSON())
			switch e.Kind {
			case nexmark.KindAuction:
				auctions = append(auctions, e.Auction)
			case nexmark.KindBid:
				bids[e.Bid.Auction] = append(bids[e.Bid.Auction], e.Bid)
			}
		}
		var want Checksum
		var h Hasher
		for _, a := range auctions {
			var best *nexmark.Bid
			for _, b := range bids[a.ID] {
				if b.DateTime < a.DateTime || b.DateTime > a.Expires {
					continue
				}
				if best == nil || b.Price > best.Price || b.Price == best.Price &&
					(b.DateTime < best.DateTime || b.DateTime == best.DateTime && b.ID < best.ID) {
					best = b
				}
			}
			if best == nil {
				continue
			}
			// The rows as the decoder gives them, to hash like the engine.
			w := winner{auction: rowOf(t, a), bid: rowOf(t, best)}
			want.Add(record.Insert, w.hash(&h, a.Expires))
		}
		noProbe := func(int) {}
		eng := RunStepper(q9Job.engine(), lines, noProbe)
		base := q9Job.baseline(lines, noProbe)
		if !eng.Check.Equal(want) || !base.Check.Equal(want) {
			t.Errorf("seed %d: engine %v, baseline %v, brute force %v", seed, eng.Check, base.Check, want)
		}
		if want.Rows < int64(len(auctions))/2 || eng.Late != 0 || base.Late != 0 {
			t.Errorf("seed %d: %d winners of %d auctions, late %d/%d", seed, want.Rows, len(auctions), eng.Late, base.Late)
		}
	}
}

// rowOf is v's row as the Debezium decoder gives it (json.Number values).
func rowOf(t *testing.T, v any) record.Row {
	t.Helper()
	var e nexmark.Event
	switch x := v.(type) {
	case *nexmark.Auction:
		e = nexmark.Event{Kind: nexmark.KindAuction, Auction: x}
	case *nexmark.Bid:
		e = nexmark.Event{Kind: nexmark.KindBid, Bid: x}
	}
	el, _, ok := q9Job.element(0, e.JSON())
	if !ok {
		t.Fatalf("cannot decode %s", e.JSON())
	}
	return el.Row
}
