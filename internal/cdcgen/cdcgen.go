// Package cdcgen generates deterministic users ⋈ domains CDC histories as
// Debezium JSON lines, for tests, demos and benchmarks: a snapshot (op r),
// then random inserts, updates (including domains moving to another user),
// deletes and re-inserts, with some domains arriving before their user. The
// generator keeps the true final tables so callers can check a join result.
//
// Config.Settings and Config.Companies add tables for multi-way and chained
// joins: user_settings rows (id, user_id, theme) pointing at users, and
// companies rows (id, company_name) with a company_id on every user. Their
// changes are drawn from a second random source and put between the
// users and domains changes, so a config without them generates exactly
// what it did before they existed (and with user_settings alone, the same
// users and domains changes, their ts_ms aside).
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
	// Settings, when > 0, adds the user_settings table (ids 1..Settings).
	Settings int
	// Companies, when > 0, adds the companies table (ids 1..Companies) and
	// a company_id column (1..Companies+1: some point at no company) to
	// every users row.
	Companies int
	// Pad, when > 0, adds that many string columns extra_column_01,
	// extra_column_02... to every users and domains row (wide rows whose
	// extra columns no join reads), each value PadBytes long, made from the
	// column and the row's id without a random draw: the history is
	// otherwise the same.
	Pad int
	// LSN, when set, gives every change a Postgres log position,
	// source.lsn, ascending with the line (its index + 1), as Debezium's
	// Postgres connector does: a consumer that deduplicates by source
	// position keeps one per row.
	LSN bool
}

// PadBytes is the length of each value of Config.Pad's columns.
const PadBytes = 24

// PadColumn is the name of Config.Pad's i-th column (from 1).
func PadColumn(i int) string { return fmt.Sprintf("extra_column_%02d", i) }

// pad adds c.Pad's columns to row (id: the row's id).
func (c Config) pad(row map[string]any, id int) map[string]any {
	for i := 1; i <= c.Pad; i++ {
		row[PadColumn(i)] = fmt.Sprintf("p%02d-%020d", i%100, id) // PadBytes long
	}
	return row
}

// History is a generated input and the tables it leaves.
type History struct {
	Lines   [][]byte               // Debezium envelopes (bare), with source.table set
	Users   map[int]map[string]any // final users rows by id
	Domains map[int]map[string]any // final domains rows by id
	// Settings and Companies are the final user_settings and companies
	// rows by id (empty unless configured).
	Settings  map[int]map[string]any
	Companies map[int]map[string]any
}

// Generate makes a history. The same Config always gives the same history.
func Generate(c Config) *History {
	r := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))
	h := &History{Users: map[int]map[string]any{}, Domains: map[int]map[string]any{},
		Settings: map[int]map[string]any{}, Companies: map[int]map[string]any{}}
	r2 := rand.New(rand.NewPCG(c.Seed^0x5bd1e995, c.Seed+0x632be59bd9b4e019)) // the extra tables' draws
	emit := func(table, op string, before, after map[string]any) {
		src := map[string]any{"table": table}
		if c.LSN {
			src["lsn"] = len(h.Lines) + 1
		}
		env := map[string]any{"op": op, "before": before, "after": after,
			"source": src, "ts_ms": 1_700_000_000_000 + len(h.Lines)}
		b, err := json.Marshal(env)
		if err != nil {
			panic(err)
		}
		h.Lines = append(h.Lines, b)
	}
	user := func(id int) map[string]any {
		u := map[string]any{"id": id, "firstname": fmt.Sprintf("F%d-%d", id, r.IntN(100)), "lastname": fmt.Sprintf("L%d", r.IntN(1000))}
		if c.Companies > 0 {
			u["company_id"] = 1 + r2.IntN(c.Companies+1)
		}
		return c.pad(u, id)
	}
	// extra makes one change of user_settings or companies, if configured,
	// about every other base change.
	extra := func() {
		if c.Settings == 0 && c.Companies == 0 || r2.IntN(2) == 0 {
			return
		}
		table, rows, n := "user_settings", h.Settings, c.Settings
		if c.Settings == 0 || c.Companies > 0 && r2.IntN(3) == 0 {
			table, rows, n = "companies", h.Companies, c.Companies
		}
		row := func(id int) map[string]any {
			if table == "companies" {
				return map[string]any{"id": id, "company_name": fmt.Sprintf("C%d-%d", id, r2.IntN(100))}
			}
			return map[string]any{"id": id, "user_id": 1 + r2.IntN(c.Users), "theme": fmt.Sprintf("t%d", r2.IntN(50))}
		}
		id := 1 + r2.IntN(n)
		old, ok := rows[id]
		switch {
		case !ok:
			rows[id] = row(id)
			emit(table, "c", nil, rows[id])
		case r2.IntN(4) == 0:
			delete(rows, id)
			emit(table, "d", old, nil)
		default:
			nw := row(id)
			if table == "user_settings" && r2.IntN(2) == 0 {
				nw["user_id"] = old["user_id"]
			}
			rows[id] = nw
			emit(table, "u", old, nw)
		}
	}
	domain := func(id int) map[string]any {
		return c.pad(map[string]any{"id": id, "user_id": 1 + r.IntN(c.Users), "domain_name": fmt.Sprintf("d%d-%d", id, r.IntN(100))}, id)
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
		extra()
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
