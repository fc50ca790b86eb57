package nexmark

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestDeterministic(t *testing.T) {
	c := Config{Seed: 42, Events: 2000, Pad: true}
	a, b := All(c), All(c)
	for i := range a {
		if !bytes.Equal(a[i].JSON(), b[i].JSON()) {
			t.Fatalf("event %d differs between two runs with the same seed:\n%s\n%s", i, a[i].JSON(), b[i].JSON())
		}
	}
	other := All(Config{Seed: 43, Events: 2000, Pad: true})
	same := 0
	for i := range a {
		if bytes.Equal(a[i].JSON(), other[i].JSON()) {
			same++
		}
	}
	if same == len(a) {
		t.Error("seeds 42 and 43 give the same stream")
	}
}

func TestProportionsAndIDs(t *testing.T) {
	const n = 50 * 40
	evs := All(Config{Seed: 1, Events: n})
	var count [3]int
	var nextPerson, nextAuction int64 = FirstPersonID, FirstAuctionID
	persons := map[int64]bool{}
	for i, e := range evs {
		count[e.Kind]++
		switch e.Kind {
		case KindPerson:
			if e.Person.ID != nextPerson {
				t.Fatalf("event %d: person id %d, want %d", i, e.Person.ID, nextPerson)
			}
			persons[e.Person.ID] = true
			nextPerson++
		case KindAuction:
			if e.Auction.ID != nextAuction {
				t.Fatalf("event %d: auction id %d, want %d", i, e.Auction.ID, nextAuction)
			}
			nextAuction++
			if e.Auction.Category < FirstCategory || e.Auction.Category >= FirstCategory+NumCategories {
				t.Errorf("event %d: category %d", i, e.Auction.Category)
			}
			if e.Auction.Expires <= e.Auction.DateTime {
				t.Errorf("event %d: auction expires %d before it opens %d", i, e.Auction.Expires, e.Auction.DateTime)
			}
		case KindBid:
			if e.Bid.Auction < FirstAuctionID || e.Bid.Auction >= nextAuction+auctionIDLead {
				t.Errorf("event %d: bid on auction %d, outside [%d, %d)", i, e.Bid.Auction, FirstAuctionID, nextAuction+auctionIDLead)
			}
		}
	}
	if want := [3]int{n / 50, 3 * n / 50, 46 * n / 50}; count != want {
		t.Errorf("person:auction:bid = %v, want %v (1:3:46)", count, want)
	}
}

func TestOutOfOrdernessBounded(t *testing.T) {
	c := Config{Seed: 3, Events: 5000}.Defaults()
	evs := All(c)
	var maxTs int64
	disorder := 0
	for i, e := range evs {
		if e.Ts < maxTs-c.MaxOutOfOrderMs {
			t.Fatalf("event %d at %d is more than %d ms behind %d", i, e.Ts, c.MaxOutOfOrderMs, maxTs)
		}
		if e.Ts < maxTs {
			disorder++
		}
		maxTs = max(maxTs, e.Ts)
	}
	if disorder == 0 {
		t.Error("the stream is in order; want bounded disorder")
	}
}

func TestJSONIsDebeziumInsert(t *testing.T) {
	for _, e := range All(Config{Seed: 5, Events: 50}) {
		var env struct {
			Op     string         `json:"op"`
			After  map[string]any `json:"after"`
			Source struct{ Table string }
		}
		if err := json.Unmarshal(e.JSON(), &env); err != nil {
			t.Fatal(err)
		}
		if env.Op != "c" || env.Source.Table != e.Kind.String() || env.After["dateTime"] != float64(e.Ts) {
			t.Fatalf("bad envelope %s", e.JSON())
		}
	}
}
