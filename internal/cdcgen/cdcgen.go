// Package cdcgen generates deterministic users ⋈ domains CDC histories as
// Debezium JSON lines, for tests, demos and benchmarks: a snapshot (op r),
// then random inserts, updates (including domains moving to another user),
// deletes and re-inserts, with some domains arriving before their user. The
// generator keeps the true final tables so callers can check a join result.
package cdcgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Config sizes a history.
type Config struct {
	Seed    uint64
	Users   int // id space of users (ids 1..Users)
	Domains int // id space of domains
	Changes int // changes after the snapshot
}

// History is a generated input and the tables it leaves.
type History struct {
	Lines   [][]byte               // Debezium envelopes (bare), with source.table set
	Users   map[int]map[string]any // final users rows by id
	Domains map[int]map[string]any // final domains rows by id
}

// Generate makes a history. The same Config always gives the same history.
func Generate(c Config) *History {
	r := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))
	h := &History{Users: map[int]map[string]any{}, Domains: map[int]map[string]any{}}
	emit := func(table, op string, before, after map[string]any) {
		env := map[string]any{"op": op, "before": before, "after": after,
			"source": map[string]any{"table": table}, "ts_ms": 1_700_000_000_000 + len(h.Lines)}
		b, err := json.Marshal(env)
		if err != nil {
			panic(err)
		}
		h.Lines = append(h.Lines, b)
	}
	user := func(id int) map[string]any {
		return map[string]any{"id": id, "firstname": fmt.Sprintf("F%d-%d", id, r.IntN(100)), "lastname": fmt.Sprintf("L%d", r.IntN(1000))}
	}
	domain := func(id int) map[string]any {
		return map[string]any{"id": id, "user_id": 1 + r.IntN(c.Users), "domain_name": fmt.Sprintf("d%d-%d", id, r.IntN(100))}
	}
	// Snapshot: half the users, half the domains (some pointing at absent users).
	for id := 1; id <= c.Users; id += 2 {
		u := user(id)
		h.Users[id] = u
		emit("users", "r", nil, u)
	}
	for id := 1; id <= c.Domains; id += 2 {
		d := domain(id)
		h.Domains[id] = d
		emit("domains", "r", nil, d)
	}
	for range c.Changes {
		if r.IntN(3) == 0 {
			id := 1 + r.IntN(c.Users)
			old, ok := h.Users[id]
			switch {
			case !ok:
				u := user(id)
				h.Users[id] = u
				emit("users", "c", nil, u)
			case r.IntN(3) == 0:
				delete(h.Users, id)
				emit("users", "d", old, nil)
			default:
				u := user(id)
				h.Users[id] = u
				emit("users", "u", old, u)
			}
			continue
		}
		id := 1 + r.IntN(c.Domains)
		old, ok := h.Domains[id]
		switch {
		case !ok:
			d := domain(id)
			h.Domains[id] = d
			emit("domains", "c", nil, d)
		case r.IntN(4) == 0:
			delete(h.Domains, id)
			emit("domains", "d", old, nil)
		default:
			d := domain(id) // may move to another user
			if r.IntN(2) == 0 {
				d["user_id"] = old["user_id"]
			}
			h.Domains[id] = d
			emit("domains", "u", old, d)
		}
	}
	return h
}

// LeftJoin returns the rows of users LEFT JOIN domains over the final tables,
// as "user_id,domain_id" -> "firstname|lastname|domain_name" (domain_id
// "null" and domain_name "" for a user without domains), for comparing with a
// join result projected to user_id, firstname, lastname, domain_id, domain_name.
func (h *History) LeftJoin() map[string]string {
	out := map[string]string{}
	ids := make([]int, 0, len(h.Domains))
	for id := range h.Domains {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for uid, u := range h.Users {
		n := 0
		for _, did := range ids {
			d := h.Domains[did]
			if d["user_id"] == uid {
				out[fmt.Sprintf("%d,%d", uid, did)] = fmt.Sprintf("%v|%v|%v", u["firstname"], u["lastname"], d["domain_name"])
				n++
			}
		}
		if n == 0 {
			out[fmt.Sprintf("%d,null", uid)] = fmt.Sprintf("%v|%v|", u["firstname"], u["lastname"])
		}
	}
	return out
}
