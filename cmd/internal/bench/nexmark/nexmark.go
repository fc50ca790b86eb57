// Package nexmark generates the Nexmark auction benchmark's event stream,
// deterministically from a seed, following the Beam/Flink generator
// (org.apache.beam.sdk.nexmark.sources.generator): in every run of 50 events
// one person, three auctions and 46 bids; person and auction ids from 1000
// in event order; hot sellers, hot auctions and hot bidders picked from the
// most recent ids as the spec rotates them; auctions open for a bounded
// number of events; and event times that are out of order by a bounded
// amount.
//
// Differences from Beam, all deliberate and documented here: event time
// advances by Config.InterEventUs per event (Beam's default is 100 µs, a
// 10 000 ev/s first-event rate; a slower clock makes a small run span more
// 10 s windows); the out-of-orderness is a bounded random delay of each
// event's time, not Beam's shuffled groups; and every bid carries a
// synthetic primary key "id" (its event number), because the changelog join
// keeps right rows by primary key while Nexmark bids have none.
package nexmark

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Beam's constants (GeneratorConfig, NexmarkConfiguration defaults).
const (
	FirstPersonID  = 1000
	FirstAuctionID = 1000
	FirstCategory  = 10
	NumCategories  = 5

	PersonProportion  = 1
	AuctionProportion = 3
	BidProportion     = 46
	ProportionDenom   = PersonProportion + AuctionProportion + BidProportion // 50

	HotAuctionRatio = 100 // hot auctions are multiples of 100 (base 0)
	HotSellerRatio  = 100 // Beam's HOT_SELLER_RATIO
	HotBidderRatio  = 100

	numActivePeople     = 1000
	numInFlightAuctions = 100
	personIDLead        = 10
	auctionIDLead       = 10
)

var (
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	channels   = []string{"Google", "Facebook", "Baidu", "Apple"}
)

// Config sizes and shapes a stream. The zero value of a field means Beam's
// default, see Defaults.
type Config struct {
	Seed   uint64
	Events int // number of events
	// InterEventUs is the event-time step between consecutive events (µs).
	InterEventUs int64
	// MaxOutOfOrderMs bounds how far an event's time lies before the
	// nominal time of its position: the stream is ordered up to this bound,
	// so a watermark of max(ts) - MaxOutOfOrderMs is never passed by an event.
	MaxOutOfOrderMs int64
	// HotSellersRatio, HotAuctionRatio, HotBiddersRatio: 1 in N picks is not
	// hot (Beam's hotSellersRatio 4, hotAuctionRatio 2, hotBiddersRatio 4).
	HotSellersRatio, HotAuctionsRatio, HotBiddersRatio int
	// AuctionEvents is the mean number of events an auction stays open
	// (its expiry is its time plus up to twice that many event steps).
	AuctionEvents int
	// BaseTime is the event time of event 0 (ms since the epoch).
	BaseTime int64
	// PinnedAuctionShare, when > 0, sends that share of all bids to the
	// first auction (FirstAuctionID, made category FirstCategory), on top
	// of Beam's hot auctions: one key taking a fixed part of the traffic
	// for the whole run (not Beam; the skewed variant the benchmarks ask
	// for).
	PinnedAuctionShare float64
	// Pad adds Beam's "extra" filler so that rows reach its average sizes
	// (person 200 B, auction 500 B, bid 100 B).
	Pad bool
}

// Defaults fills the zero fields.
func (c Config) Defaults() Config {
	if c.InterEventUs == 0 {
		c.InterEventUs = 1000
	}
	if c.MaxOutOfOrderMs == 0 {
		c.MaxOutOfOrderMs = 200
	}
	if c.HotSellersRatio == 0 {
		c.HotSellersRatio = 4
	}
	if c.HotAuctionsRatio == 0 {
		c.HotAuctionsRatio = 2
	}
	if c.HotBiddersRatio == 0 {
		c.HotBiddersRatio = 4
	}
	if c.AuctionEvents == 0 {
		c.AuctionEvents = 500
	}
	if c.BaseTime == 0 {
		c.BaseTime = 1_700_000_000_000
	}
	return c
}

// Kind is the type of an event.
type Kind uint8

const (
	KindPerson Kind = iota
	KindAuction
	KindBid
)

// Tables are the Debezium source.table names of the kinds.
var Tables = [...]string{"person", "auction", "bid"}

func (k Kind) String() string { return Tables[k] }

// Person is a new user of the auction site.
type Person struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	EmailAddress string `json:"emailAddress"`
	CreditCard   string `json:"creditCard"`
	City         string `json:"city"`
	State        string `json:"state"`
	DateTime     int64  `json:"dateTime"`
	Extra        string `json:"extra"`
}

// Auction is a new item for sale.
type Auction struct {
	ID          int64  `json:"id"`
	ItemName    string `json:"itemName"`
	Description string `json:"description"`
	InitialBid  int64  `json:"initialBid"`
	Reserve     int64  `json:"reserve"`
	DateTime    int64  `json:"dateTime"`
	Expires     int64  `json:"expires"`
	Seller      int64  `json:"seller"`
	Category    int64  `json:"category"`
	Extra       string `json:"extra"`
}

// Bid is a bid on an auction. ID is synthetic (the event number).
type Bid struct {
	ID       int64  `json:"id"`
	Auction  int64  `json:"auction"`
	Bidder   int64  `json:"bidder"`
	Price    int64  `json:"price"`
	Channel  string `json:"channel"`
	URL      string `json:"url"`
	DateTime int64  `json:"dateTime"`
	Extra    string `json:"extra"`
}

// Event is one generated event: exactly one of Person, Auction, Bid is set.
type Event struct {
	Num     int64 // event number, 0-based
	Kind    Kind
	Ts      int64 // event time, ms
	Person  *Person
	Auction *Auction
	Bid     *Bid
}

// Generator yields a stream's events one at a time.
type Generator struct {
	c   Config
	r   *rand.Rand
	num int64
}

// New returns a generator for c (zero fields take their defaults).
func New(c Config) *Generator {
	c = c.Defaults()
	return &Generator{c: c, r: rand.New(rand.NewPCG(c.Seed, c.Seed^0x6a09e667f3bcc908))}
}

// Config is the generator's configuration with defaults filled.
func (g *Generator) Config() Config { return g.c }

// Next returns the next event; false once Events have been generated.
func (g *Generator) Next() (Event, bool) {
	if g.num >= int64(g.c.Events) {
		return Event{}, false
	}
	id := g.num
	g.num++
	nominal := g.c.BaseTime + id*g.c.InterEventUs/1000
	ts := nominal
	if g.c.MaxOutOfOrderMs > 0 {
		ts -= g.r.Int64N(g.c.MaxOutOfOrderMs + 1)
	}
	e := Event{Num: id, Ts: ts}
	switch rem := id % ProportionDenom; {
	case rem < PersonProportion:
		e.Kind, e.Person = KindPerson, g.person(id, ts)
	case rem < PersonProportion+AuctionProportion:
		e.Kind, e.Auction = KindAuction, g.auction(id, ts)
	default:
		e.Kind, e.Bid = KindBid, g.bid(id, ts)
	}
	return e, true
}

// All generates the whole stream.
func All(c Config) []Event {
	g := New(c)
	out := make([]Event, 0, g.c.Events)
	for e, ok := g.Next(); ok; e, ok = g.Next() {
		out = append(out, e)
	}
	return out
}

// lastBase0PersonID is the base-0 id of the last person generated at or
// before event id (Beam's lastBase0PersonId).
func lastBase0PersonID(id int64) int64 {
	epoch, off := id/ProportionDenom, id%ProportionDenom
	if off >= PersonProportion {
		off = PersonProportion - 1
	}
	return epoch*PersonProportion + off
}

func lastBase0AuctionID(id int64) int64 {
	epoch, off := id/ProportionDenom, id%ProportionDenom
	switch {
	case off < PersonProportion:
		epoch--
		off = AuctionProportion - 1
	case off >= PersonProportion+AuctionProportion:
		off = AuctionProportion - 1
	default:
		off -= PersonProportion
	}
	return max(epoch*AuctionProportion+off, 0)
}

func (g *Generator) nextBase0PersonID(id int64) int64 {
	numPeople := lastBase0PersonID(id) + 1
	active := min(numPeople, numActivePeople)
	return numPeople - active + g.r.Int64N(active+personIDLead)
}

func (g *Generator) nextBase0AuctionID(id int64) int64 {
	maxA := lastBase0AuctionID(id)
	minA := max(maxA-numInFlightAuctions, 0)
	return minA + g.r.Int64N(maxA-minA+1+auctionIDLead)
}

func (g *Generator) pad(n int, cur int) string {
	if !g.c.Pad || cur >= n {
		return ""
	}
	var b strings.Builder
	for b.Len() < n-cur {
		b.WriteByte(byte('a' + g.r.IntN(26)))
	}
	return b.String()
}

func (g *Generator) person(id, ts int64) *Person {
	p := &Person{ID: lastBase0PersonID(id) + FirstPersonID, DateTime: ts}
	p.Name = firstNames[g.r.IntN(len(firstNames))] + " " + lastNames[g.r.IntN(len(lastNames))]
	p.EmailAddress = "p" + strconv.FormatInt(p.ID, 10) + "@example.com"
	p.CreditCard = strconv.Itoa(1000+g.r.IntN(9000)) + " " + strconv.Itoa(1000+g.r.IntN(9000)) + " " +
		strconv.Itoa(1000+g.r.IntN(9000)) + " " + strconv.Itoa(1000+g.r.IntN(9000))
	p.City = usCities[g.r.IntN(len(usCities))]
	p.State = usStates[g.r.IntN(len(usStates))]
	p.Extra = g.pad(200, 100)
	return p
}

func (g *Generator) auction(id, ts int64) *Auction {
	a := &Auction{ID: lastBase0AuctionID(id) + FirstAuctionID, DateTime: ts}
	var seller int64
	if g.r.IntN(g.c.HotSellersRatio) > 0 {
		seller = lastBase0PersonID(id) / HotSellerRatio * HotSellerRatio
	} else {
		seller = g.nextBase0PersonID(id)
	}
	a.Seller = seller + FirstPersonID
	a.Category = FirstCategory + g.r.Int64N(NumCategories)
	if g.c.PinnedAuctionShare > 0 && a.ID == FirstAuctionID {
		a.Category = FirstCategory
	}
	a.InitialBid = 100 + g.r.Int64N(1000)
	a.Reserve = a.InitialBid + g.r.Int64N(1000)
	a.ItemName = "item-" + strconv.FormatInt(a.ID, 10)
	a.Description = "description of " + a.ItemName
	life := 1 + g.r.Int64N(int64(2*g.c.AuctionEvents))
	a.Expires = ts + life*g.c.InterEventUs/1000 + 1
	a.Extra = g.pad(500, 150)
	return a
}

func (g *Generator) bid(id, ts int64) *Bid {
	b := &Bid{ID: id, DateTime: ts}
	var auction int64
	if g.c.PinnedAuctionShare > 0 && g.r.Float64() < g.c.PinnedAuctionShare {
		auction = 0
	} else if g.r.IntN(g.c.HotAuctionsRatio) > 0 {
		auction = lastBase0AuctionID(id) / HotAuctionRatio * HotAuctionRatio
	} else {
		auction = g.nextBase0AuctionID(id)
	}
	b.Auction = auction + FirstAuctionID
	var bidder int64
	if g.r.IntN(g.c.HotBiddersRatio) > 0 {
		bidder = lastBase0PersonID(id)/HotBidderRatio*HotBidderRatio + 1
	} else {
		bidder = g.nextBase0PersonID(id)
	}
	b.Bidder = bidder + FirstPersonID
	b.Price = 100 + g.r.Int64N(10_000)
	b.Channel = channels[g.r.IntN(len(channels))]
	b.URL = "https://www.nexmark.com/" + b.Channel + "/item.htm?query=1&id=" + strconv.FormatInt(b.Auction, 10)
	b.Extra = g.pad(100, 90)
	return b
}

// Row returns the event's row (the person, auction or bid).
func (e Event) Row() any {
	switch e.Kind {
	case KindPerson:
		return e.Person
	case KindAuction:
		return e.Auction
	}
	return e.Bid
}

type envelope struct {
	Op     string `json:"op"`
	After  any    `json:"after"`
	Source struct {
		Table string `json:"table"`
	} `json:"source"`
	TsMs int64 `json:"ts_ms"`
}

// JSON encodes the event as a bare Debezium insert (op c) of its table, the
// form the engine's file source reads: {"op":"c","after":{…},
// "source":{"table":"bid"},"ts_ms":…}.
func (e Event) JSON() []byte {
	env := envelope{Op: "c", After: e.Row(), TsMs: e.Ts}
	env.Source.Table = Tables[e.Kind]
	b, err := json.Marshal(env)
	if err != nil {
		panic(err) // plain structs always encode
	}
	return b
}
