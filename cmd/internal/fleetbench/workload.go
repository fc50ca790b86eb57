package fleetbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joinery/joinery/cmd/internal/bench"
	"github.com/joinery/joinery/cmd/internal/bench/nexmark"
	"github.com/joinery/joinery/internal/cdcgen"
)

// workload is a join, its input (Debezium changes of two tables, written
// to a topic or to shard streams per table) and its open-loop latency
// probes.
type workload struct {
	name        string
	join        string            // the job's name and join (YAML)
	left, right string            // the tables: one source each (a Kafka topic or a set of shard streams)
	joinCols    map[string]string // each table's join column
	lines       [][]byte          // the input, Debezium envelopes with source.table
	stampField  string            // the output column a latency probe stamps
	probes      func() (func(prefix string, i int) msg, error)
}

// Workloads the benchmark runs.
var workloadNames = []string{"cdc", "q20"}

// newWorkload makes a workload's input, sized by c.
func newWorkload(name string, c Config) (*workload, error) {
	switch name {
	case "cdc":
		return cdcWorkload(c), nil
	case "q20":
		return q20Workload(c), nil
	}
	return nil, fmt.Errorf("fleetbench: unknown workload %q (%v)", name, workloadNames)
}

// cdcWorkload is users ⋈ domains (LEFT) over internal/cdcgen's history;
// its probes are domain updates whose domain_name carries the produce time.
func cdcWorkload(c Config) *workload {
	h := cdcgen.Generate(cdcgen.Config{Seed: 7, Users: c.Users, Domains: c.Domains, Changes: c.Changes})
	w := &workload{name: "cdc", join: cdcJoin, left: "users", right: "domains", lines: h.Lines, stampField: "domain_name",
		joinCols: map[string]string{"users": "id", "domains": "user_id"}}
	w.probes = func() (func(string, int) msg, error) {
		// Domains that join (their user exists), in id order.
		var ids []int
		for id := 1; id <= c.Domains; id++ {
			if d, ok := h.Domains[id]; ok {
				if uid, _ := d["user_id"].(int); h.Users[uid] != nil {
					ids = append(ids, id)
				}
			}
		}
		if len(ids) == 0 {
			return nil, errors.New("no joining domain to update")
		}
		cur := map[int]map[string]any{}
		for _, id := range ids {
			cur[id] = h.Domains[id]
		}
		return func(prefix string, i int) msg {
			id := ids[i%len(ids)]
			before := cur[id]
			after := map[string]any{"id": id, "user_id": before["user_id"], "domain_name": prefix + strconv.FormatInt(time.Now().UnixNano(), 10)}
			cur[id] = after
			b, _ := json.Marshal(map[string]any{"op": "u", "before": before, "after": after, "source": map[string]any{"table": "domains"}, "ts_ms": time.Now().UnixMilli()})
			return msg{table: "domains", key: fmt.Appendf(nil, "domains:%d", id), pk: fmt.Appendf(nil, "[%d]", id), jk: fmt.Appendf(nil, "[%v]", before["user_id"]), value: b}
		}, nil
	}
	return w
}

// cdcJoin and q20Join are the joins `make bench` runs on a node, as the
// fleet's job (internal/bench's NodeJob without its tables: line).
var cdcJoin, q20Join = benchJoin("cdc"), benchJoin("q20")

// benchJoin is "name: fleet" and the join: section of the bench workload
// name's node job.
func benchJoin(name string) string {
	for _, w := range bench.Workloads {
		if w.Name == name {
			join, _, _ := strings.Cut(w.NodeJob, "tables:")
			return "name: fleet\n" + join
		}
	}
	panic("fleetbench: no bench workload " + name)
}

// q20Workload is Nexmark q20 (bid ⋈ auction, category 10, inner) as the
// bench package runs it on a node: the category filter pushed down to the
// input (every bid, the category-10 auctions), Debezium inserts from
// internal/bench/nexmark; its probes are new bids on category-10 auctions whose url
// carries the produce time.
func q20Workload(c Config) *workload {
	g := nexmark.New(nexmark.Config{Seed: 7, Events: c.Changes + c.Users + c.Domains, Pad: true})
	w := &workload{name: "q20", join: q20Join, left: "auction", right: "bid", stampField: "url",
		joinCols: map[string]string{"auction": "id", "bid": "auction"}}
	var auctions []int64
	var last nexmark.Bid
	var maxID int64
	for e, ok := g.Next(); ok; e, ok = g.Next() {
		switch e.Kind {
		case nexmark.KindAuction:
			if e.Auction.Category != 10 {
				continue
			}
			auctions = append(auctions, e.Auction.ID)
		case nexmark.KindBid:
			last = *e.Bid
			maxID = max(maxID, e.Bid.ID)
		default:
			continue
		}
		w.lines = append(w.lines, e.JSON())
	}
	w.probes = func() (func(string, int) msg, error) {
		if len(auctions) == 0 {
			return nil, errors.New("no category-10 auction to bid on")
		}
		as := slices.Clone(auctions)
		next := maxID
		return func(prefix string, i int) msg {
			next++
			b := last
			b.ID, b.Auction = next, as[i%len(as)]
			b.URL = prefix + strconv.FormatInt(time.Now().UnixNano(), 10)
			env, _ := json.Marshal(map[string]any{"op": "c", "after": b, "source": map[string]any{"table": "bid"}, "ts_ms": time.Now().UnixMilli()})
			return msg{table: "bid", key: fmt.Appendf(nil, "bid:%d", b.ID), pk: fmt.Appendf(nil, "[%d]", b.ID), jk: fmt.Appendf(nil, "[%d]", b.Auction), value: env}
		}, nil
	}
	return w
}
