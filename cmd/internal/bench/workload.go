package bench

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/joinery/joinery/cmd/internal/bench/nexmark"
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// Scale sizes every workload: Tiny for tests, Small for `make bench` (a few
// minutes on 2 cores), Full for a real measurement.
type Scale struct {
	Name          string
	NexmarkEvents int
	Users         int
	Domains       int
	Changes       int
}

var Scales = map[string]Scale{
	"tiny":  {Name: "tiny", NexmarkEvents: 5_000, Users: 60, Domains: 200, Changes: 1_500},
	"small": {Name: "small", NexmarkEvents: 150_000, Users: 4_000, Domains: 16_000, Changes: 40_000},
	"full":  {Name: "full", NexmarkEvents: 2_000_000, Users: 50_000, Domains: 200_000, Changes: 600_000},
}

// RunResult is what one run of an engine or a baseline produced.
type RunResult struct {
	Check    Checksum
	LiveKeys int // keys holding state at the end of input
	Late     int // elements dropped as late (expected 0)
	Rejected int // changes that could not be routed
	// Wall, when set, replaces the measured wall time (the node's Run
	// without its shutdown); CPU, when set, the measured CPU time (the
	// stream systems: the nodes' Run and Close, without starting them or
	// reading their sinks back).
	Wall, CPU time.Duration
	// Excluded, when CPU is not set, is CPU time (and ExcludedMallocs and
	// ExcludedBytes the heap allocations and their bytes) of harness work
	// inside the run that is not the engine's: starting the node and
	// reading its sink back (node.go), left out as the stream systems
	// leave it out of CPU.
	Excluded                       time.Duration
	ExcludedMallocs, ExcludedBytes uint64
	// Redis (node+redis): what the run sent to the server and the RDB
	// snapshots it took meanwhile.
	RedisInBytes float64
	RDBSaves     float64
	// RedisCommands is INFO commandstats over the run (node+redis).
	RedisCommands map[string]RedisCommand
	// Node levels: the memory budget's figures at the end of node.Run
	// (before Close): accounted bytes of the live keys, and passivations
	// the budget asked for.
	Accounted          int64
	BudgetPassivations int64
	// Node levels: the key requests the nodes' readers sent key actors on
	// their own node and on another (joinery_key_requests_total), and on
	// the stream systems each node's outputs (its sink's lines).
	LocalRequests, RemoteRequests int64
	OutputsPerNode                []int64
}

// Input is a workload's generated stream.
type Input struct {
	// Lines is the whole stream as Debezium JSON lines.
	Lines [][]byte
	// NodeLines is what the node reads: Lines with the workload's filters
	// pushed down to the source (the node has no filter operator), nil when
	// the workload has no filter.
	NodeLines [][]byte
	// HotKeyShare is the share of Lines on the hottest join key (skewed
	// workloads only).
	HotKeyShare float64
	// Sides, for a workload with Workload.NodeSources, is each source's
	// file of plain JSON events (by source name); NodeLines is then their
	// union in stream order, which the node levels' baseline reads.
	Sides map[string][][]byte
}

// SideSource is one file source of an event-time join on the node: plain
// JSON events of one side, with a bounded-out-of-orderness watermark.
type SideSource struct {
	Name string // source name, also the file's suffix (sideFile)
	Side string // left or right
	// BoundMs is the watermark's max_out_of_orderness (ms).
	BoundMs int64
}

// Workload is one benchmark: a generator, the engine's core loop, a plain Go
// baseline computing the same result, and the node's join (when the node can
// run it).
type Workload struct {
	Name     string
	Doc      string
	Generate func(s Scale, seed uint64) Input
	// Engine makes the engine's core loop (Core runs it as fast as it
	// goes; the latency run paces it).
	Engine   func() Stepper
	Core     func(lines [][]byte, probe func(live int)) RunResult
	Baseline func(lines [][]byte, probe func(live int)) RunResult
	// NodeJob is the job file's join and source tables (YAML), "" when the
	// node cannot run the workload.
	NodeJob string
	// NodeSkip says why the node does not run it.
	NodeSkip string
	// NodeSources, when set, replace the one Debezium file source of the
	// node levels (NodeJob then has no tables:): an event-time join reads
	// plain JSON events, one file source per side (Input.Sides), and
	// NodeBaseline, the baseline over that input (Input.NodeLines), replaces
	// Baseline there.
	NodeSources  []SideSource
	NodeBaseline func(lines [][]byte, probe func(live int)) RunResult
	// LatencyFrom says what an output's latency is counted from (see
	// Latency); NodeLatency asks for the open-loop run on the node levels
	// too.
	LatencyFrom string
	NodeLatency bool
	// SkewOf names the unskewed workload this one is a skewed variant of.
	SkewOf string
}

const eventToOutput = "the event's release"

// Workloads in report order.
var Workloads = []*Workload{q3, q8, q9, q20, q20Skew, cdcW, cdcSkew}

// Find returns the named workload.
func Find(name string) (*Workload, error) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, nil
		}
	}
	return nil, fmt.Errorf("bench: unknown workload %q", name)
}

func nexmarkInput(s Scale, seed uint64, keep func(e *nexmark.Event) bool) Input {
	return nexmarkInputOf(nexmark.Config{Seed: seed, Events: s.NexmarkEvents, Pad: true}, keep)
}

func nexmarkInputOf(c nexmark.Config, keep func(e *nexmark.Event) bool) Input {
	g := nexmark.New(c)
	var in Input
	for e, ok := g.Next(); ok; e, ok = g.Next() {
		line := e.JSON()
		in.Lines = append(in.Lines, line)
		if keep != nil && keep(&e) {
			in.NodeLines = append(in.NodeLines, line)
		}
	}
	return in
}

func isCat10(r record.Row) bool { n, _ := r["category"].(json.Number); return n == "10" }

func inQ3State(r record.Row) bool {
	switch str(r, "state") {
	case "OR", "ID", "CA":
		return true
	}
	return false
}

// q3: Nexmark query 3, "local item suggestion": persons in OR, ID or CA who
// sell in category 10. Nexmark's SQL is a regular (unbounded, non-windowed)
// inner join of two insert-only streams, which is exactly the changelog
// join: person keeps its row per id (value state), auctions are kept per
// seller by id, every match is +I, nothing expires (as Flink's regular join
// without state TTL).
var q3Job = &cdcJob{
	spec: &joins.CDCSpec{Type: joins.Inner,
		Left:  joins.SideSpec{Name: "person", PK: "id", JoinOn: "id"},
		Right: joins.SideSpec{Name: "auction", PK: "id", JoinOn: "seller"},
		Project: []joins.Column{{Name: "name", Side: record.Left, Field: "name"}, {Name: "city", Side: record.Left, Field: "city"},
			{Name: "state", Side: record.Left, Field: "state"}, {Name: "id", Side: record.Right, Field: "id"}}},
	tables: map[string]record.Side{"person": record.Left, "auction": record.Right},
	filter: func(table string, r record.Row) bool {
		if table == "person" {
			return inQ3State(r)
		}
		return isCat10(r)
	},
}

var q3 = &Workload{
	Name: "q3",
	Doc:  "Nexmark q3: person ⋈ auction on seller, category 10, state in OR/ID/CA (changelog inner join)",
	Generate: func(s Scale, seed uint64) Input {
		return nexmarkInput(s, seed, func(e *nexmark.Event) bool {
			switch e.Kind {
			case nexmark.KindPerson:
				return e.Person.State == "OR" || e.Person.State == "ID" || e.Person.State == "CA"
			case nexmark.KindAuction:
				return e.Auction.Category == 10
			}
			return false
		})
	},
	Engine:      q3Job.engine,
	Core:        coreOf(q3Job.engine),
	Baseline:    q3Job.baseline,
	LatencyFrom: eventToOutput,
	NodeJob: `join:
  type: cdc
  mode: inner
  left:  {name: person, pk: id, join_on: id}
  right: {name: auction, pk: id, join_on: seller}
  project:
    - {name: name, from: person.name}
    - {name: city, from: person.city}
    - {name: state, from: person.state}
    - {name: id, from: auction.id}
tables: {person: left, auction: right}
`,
}

// q20: Nexmark query 20, "expand bid with auction": bids joined with their
// auction, category 10. A regular inner join again, hence the changelog
// join (bids keyed by their synthetic id).
var q20Job = &cdcJob{
	spec: &joins.CDCSpec{Type: joins.Inner,
		Left:  joins.SideSpec{Name: "auction", PK: "id", JoinOn: "id"},
		Right: joins.SideSpec{Name: "bid", PK: "id", JoinOn: "auction"},
		Project: []joins.Column{
			{Name: "auction", Side: record.Right, Field: "auction"}, {Name: "bidder", Side: record.Right, Field: "bidder"},
			{Name: "price", Side: record.Right, Field: "price"}, {Name: "channel", Side: record.Right, Field: "channel"},
			{Name: "url", Side: record.Right, Field: "url"}, {Name: "b_dateTime", Side: record.Right, Field: "dateTime"},
			{Name: "itemName", Side: record.Left, Field: "itemName"}, {Name: "description", Side: record.Left, Field: "description"},
			{Name: "initialBid", Side: record.Left, Field: "initialBid"}, {Name: "reserve", Side: record.Left, Field: "reserve"},
			{Name: "a_dateTime", Side: record.Left, Field: "dateTime"}, {Name: "expires", Side: record.Left, Field: "expires"},
			{Name: "seller", Side: record.Left, Field: "seller"}, {Name: "category", Side: record.Left, Field: "category"}}},
	tables: map[string]record.Side{"auction": record.Left, "bid": record.Right},
	filter: func(table string, r record.Row) bool { return table == "bid" || isCat10(r) },
}

var q20 = &Workload{
	Name: "q20",
	Doc:  "Nexmark q20: bid ⋈ auction on auction id, category 10 (changelog inner join)",
	Generate: func(s Scale, seed uint64) Input {
		return nexmarkInput(s, seed, func(e *nexmark.Event) bool {
			return e.Kind == nexmark.KindBid || e.Kind == nexmark.KindAuction && e.Auction.Category == 10
		})
	},
	Engine:      q20Job.engine,
	Core:        coreOf(q20Job.engine),
	Baseline:    q20Job.baseline,
	LatencyFrom: eventToOutput,
	NodeJob:     q20NodeJob,
}

// q20NodeJob is q20's (and q20-skew's) job on the node.
const q20NodeJob = `join:
  type: cdc
  mode: inner
  left:  {name: auction, pk: id, join_on: id}
  right: {name: bid, pk: id, join_on: auction}
  project:
    - {name: auction, from: bid.auction}
    - {name: bidder, from: bid.bidder}
    - {name: price, from: bid.price}
    - {name: channel, from: bid.channel}
    - {name: url, from: bid.url}
    - {name: b_dateTime, from: bid.dateTime}
    - {name: itemName, from: auction.itemName}
    - {name: description, from: auction.description}
    - {name: initialBid, from: auction.initialBid}
    - {name: reserve, from: auction.reserve}
    - {name: a_dateTime, from: auction.dateTime}
    - {name: expires, from: auction.expires}
    - {name: seller, from: auction.seller}
    - {name: category, from: auction.category}
tables: {auction: left, bid: right}
`

// q20Skew is q20 with one auction pinned to take pinnedShare of all bids,
// about half of the stream's events.
const pinnedShare = 0.55

var q20Skew = &Workload{
	Name: "q20-skew",
	Doc:  "q20 with auction 1000 (category 10) taking 55% of all bids, ~half of all events, for the whole run",
	Generate: func(s Scale, seed uint64) Input {
		hot := 0
		in := nexmarkInputOf(nexmark.Config{Seed: seed, Events: s.NexmarkEvents, Pad: true, PinnedAuctionShare: pinnedShare},
			func(e *nexmark.Event) bool {
				if e.Kind == nexmark.KindBid && e.Bid.Auction == nexmark.FirstAuctionID ||
					e.Kind == nexmark.KindAuction && e.Auction.ID == nexmark.FirstAuctionID {
					hot++
				}
				return e.Kind == nexmark.KindBid || e.Kind == nexmark.KindAuction && e.Auction.Category == 10
			})
		in.HotKeyShare = float64(hot) / float64(len(in.Lines))
		return in
	},
	Engine:      q20Job.engine,
	Core:        coreOf(q20Job.engine),
	Baseline:    q20Job.baseline,
	LatencyFrom: eventToOutput,
	SkewOf:      "q20",
	// q20's job. The hot key's state is written in parts (keycore's
	// Config.Parts), so a write carries the bids that changed, not half of
	// all bids.
	NodeJob: q20NodeJob,
}

var q8Job = &windowJob{size: 10_000, bound: nexmark.Config{}.Defaults().MaxOutOfOrderMs}

var q8 = &Workload{
	Name: "q8",
	Doc: "Nexmark q8: person ⋈ auction on seller in 10 s tumbling windows (joins.NewWindowJoin, Tumbling); " +
		"on the node levels from two files of plain JSON persons and auctions",
	Generate:    q8Job.generate,
	Engine:      q8Job.engine,
	Core:        coreOf(q8Job.engine),
	Baseline:    q8Job.baseline,
	NodeJob:     q8NodeJob,
	NodeSources: []SideSource{{Name: "persons", Side: "left", BoundMs: q8Job.bound}, {Name: "auctions", Side: "right", BoundMs: q8Job.bound}},
	// The node's baseline reads the node's input: the same events as
	// plain JSON, decoded as the node decodes them (encoding/json).
	NodeBaseline: q8Job.nodeBaseline,
	LatencyFrom:  "the watermark passing the window end (the arrival of the event that moved it)",
}

// q8NodeJob is q8Spec as a job: its output columns and their names are
// the core's, its ids are not (see nodeRun's checksum).
const q8NodeJob = `join:
  type: window
  mode: inner
  left:  {name: person, key: id, ts: dateTime}
  right: {name: auction, key: seller, ts: dateTime}
  window: {type: tumbling, size: 10s}
  project:
    - {name: id, from: person.id}
    - {name: name, from: person.name}
    - {name: reserve, from: auction.reserve}
`

var q9Job = func() *bidJob {
	c := nexmark.Config{}.Defaults()
	return &bidJob{bound: c.MaxOutOfOrderMs, maxLife: 2*int64(c.AuctionEvents)*c.InterEventUs/1000 + 1}
}()

var q9 = &Workload{
	Name: "q9",
	Doc:  "Nexmark q9: winning bid per auction within its lifetime (joins.NewInterval per auction id + a max reducer on timers)",
	Generate: func(s Scale, seed uint64) Input {
		return nexmarkInput(s, seed, nil)
	},
	Engine:      q9Job.engine,
	Core:        coreOf(q9Job.engine),
	Baseline:    q9Job.baseline,
	NodeSkip:    "the node has no reducer after a join (q9 reduces the interval join's pairs to a max per auction)",
	LatencyFrom: "the watermark passing the auction's expiry (the arrival of the event that moved it)",
}

const usersDomainsJob = `join:
  type: cdc
  mode: left
  left:  {name: users,   pk: id, join_on: id}
  right: {name: domains, pk: id, join_on: user_id}
  project:
    - {name: user_id,     from: users.id}
    - {name: firstname,   from: users.firstname}
    - {name: lastname,    from: users.lastname}
    - {name: domain_id,   from: domains.id}
    - {name: domain_name, from: domains.domain_name}
tables: {users: left, domains: right}
`

var usersDomains = &cdcJob{
	spec: &joins.CDCSpec{Type: joins.LeftOuter,
		Left:  joins.SideSpec{Name: "users", PK: "id", JoinOn: "id"},
		Right: joins.SideSpec{Name: "domains", PK: "id", JoinOn: "user_id"},
		Project: []joins.Column{{Name: "user_id", Side: record.Left, Field: "id"}, {Name: "firstname", Side: record.Left, Field: "firstname"},
			{Name: "lastname", Side: record.Left, Field: "lastname"}, {Name: "domain_id", Side: record.Right, Field: "id"},
			{Name: "domain_name", Side: record.Right, Field: "domain_name"}}},
	tables: map[string]record.Side{"users": record.Left, "domains": record.Right},
}

var cdcW = &Workload{
	Name: "cdc",
	Doc:  "users 1:N domains LEFT JOIN from internal/cdcgen: snapshot, then inserts/updates/moves/deletes",
	Generate: func(s Scale, seed uint64) Input {
		h := cdcgen.Generate(cdcgen.Config{Seed: seed, Users: s.Users, Domains: s.Domains, Changes: s.Changes})
		return Input{Lines: h.Lines}
	},
	Engine:      usersDomains.engine,
	Core:        coreOf(usersDomains.engine),
	Baseline:    usersDomains.baseline,
	NodeJob:     usersDomainsJob,
	LatencyFrom: eventToOutput,
	NodeLatency: true,
}

var cdcSkew = &Workload{
	Name: "cdc-skew",
	Doc:  "users 1:N domains LEFT JOIN, Zipf(1.2) owners and user 1 owning half of the domains (about half of all changes)",
	Generate: func(s Scale, seed uint64) Input {
		lines, hot := GenerateSkew(SkewConfig{Seed: seed, Users: s.Users, Domains: s.Domains, Changes: s.Changes, HotShare: 0.5})
		return Input{Lines: lines, HotKeyShare: hot}
	},
	Engine:      usersDomains.engine,
	Core:        coreOf(usersDomains.engine),
	Baseline:    usersDomains.baseline,
	NodeJob:     usersDomainsJob,
	LatencyFrom: eventToOutput,
	SkewOf:      "cdc",
}
