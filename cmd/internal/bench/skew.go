package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// SkewConfig sizes a skewed users 1:N domains history (cdc-skew): domain
// owners follow a Zipf law over the users, and one user (id 1) owns a fixed
// share of all domains on top of that.
type SkewConfig struct {
	Seed     uint64
	Users    int     // ids 1..Users, all in the snapshot
	Domains  int     // ids 1..Domains, all in the snapshot
	Changes  int     // changes after the snapshot
	ZipfS    float64 // Zipf exponent (> 1), default 1.2
	HotShare float64 // share of domains owned by user 1, default 0.2
}

// GenerateSkew makes a skewed history as Debezium lines, in the format of
// internal/cdcgen: a snapshot (op r) of every user and domain, then
// changes: one in five on a uniformly chosen user (insert, rename or
// delete), the rest on a uniformly chosen domain (insert, rename, move to a
// new Zipf/hot owner, or delete). The same config gives the same lines.
// hot is the share of the lines on user 1's join key (its own rows, and
// domain rows it owns before or after the change).
func GenerateSkew(c SkewConfig) (lines [][]byte, hot float64) {
	if c.ZipfS == 0 {
		c.ZipfS = 1.2
	}
	if c.HotShare == 0 {
		c.HotShare = 0.2
	}
	r := rand.New(rand.NewPCG(c.Seed, c.Seed^0xbb67ae8584caa73b))
	zipf := rand.NewZipf(r, c.ZipfS, 1, uint64(c.Users-1))
	onHot := 0
	emit := func(table, op string, before, after map[string]any) {
		col := "user_id"
		if table == "users" {
			col = "id"
		}
		if before != nil && before[col] == 1 || after != nil && after[col] == 1 {
			onHot++
		}
		env := map[string]any{"op": op, "before": before, "after": after,
			"source": map[string]any{"table": table}, "ts_ms": 1_700_000_000_000 + len(lines)}
		b, err := json.Marshal(env)
		if err != nil {
			panic(err)
		}
		lines = append(lines, b)
	}
	owner := func() int {
		if r.Float64() < c.HotShare {
			return 1
		}
		return 1 + int(zipf.Uint64())
	}
	user := func(id int) map[string]any {
		return map[string]any{"id": id, "firstname": fmt.Sprintf("F%d-%d", id, r.IntN(100)), "lastname": fmt.Sprintf("L%d", r.IntN(1000))}
	}
	domain := func(id, uid int) map[string]any {
		return map[string]any{"id": id, "user_id": uid, "domain_name": fmt.Sprintf("d%d-%d.example", id, r.IntN(100))}
	}
	users := map[int]map[string]any{}
	domains := map[int]map[string]any{}
	for id := 1; id <= c.Users; id++ {
		users[id] = user(id)
		emit("users", "r", nil, users[id])
	}
	for id := 1; id <= c.Domains; id++ {
		domains[id] = domain(id, owner())
		emit("domains", "r", nil, domains[id])
	}
	for range c.Changes {
		if r.IntN(5) == 0 {
			id := 1 + r.IntN(c.Users)
			old, ok := users[id]
			switch {
			case !ok:
				users[id] = user(id)
				emit("users", "c", nil, users[id])
			case r.IntN(4) == 0 && id != 1:
				delete(users, id)
				emit("users", "d", old, nil)
			default:
				users[id] = user(id)
				emit("users", "u", old, users[id])
			}
			continue
		}
		id := 1 + r.IntN(c.Domains)
		old, ok := domains[id]
		switch {
		case !ok:
			domains[id] = domain(id, owner())
			emit("domains", "c", nil, domains[id])
		case r.IntN(4) == 0:
			delete(domains, id)
			emit("domains", "d", old, nil)
		case r.IntN(2) == 0:
			domains[id] = domain(id, old["user_id"].(int))
			emit("domains", "u", old, domains[id])
		default:
			domains[id] = domain(id, owner())
			emit("domains", "u", old, domains[id])
		}
	}
	return lines, float64(onHot) / float64(len(lines))
}
