package redisstore

import (
	"fmt"
	"strconv"

	"github.com/joinery/joinery/persistence"
)

// parseSave reads saveScript's reply for part: the fenced snapshots, or
// (nothing written) one *persistence.StaleStoreError per generation key
// found behind; the generations the call bumped are noted as seen.
func parseSave(part *saveGroup, reply any) ([]refusal, []error, error) {
	res, ok := reply.([]any)
	if !ok || len(res) < 2 {
		return nil, nil, fmt.Errorf("redisstore: save: unexpected script reply %v", reply)
	}
	if passed, _ := res[0].(int64); passed != 1 {
		st, ok := res[1].([]any)
		if !ok || len(st)%2 != 0 || len(st) == 0 {
			return nil, nil, fmt.Errorf("redisstore: save: unexpected script reply %v", reply)
		}
		var errs []error
		for i := 0; i < len(st); i += 2 {
			j, ok1 := st[i].(int64)
			cur, ok2 := st[i+1].(string)
			if !ok1 || !ok2 || j < 1 || j > int64(len(part.gens)) {
				return nil, nil, fmt.Errorf("redisstore: save: unexpected script reply %v", reply)
			}
			found, err := strconv.ParseInt(cur, 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("redisstore: save: write generation %q: %w", cur, err)
			}
			r := part.gens[j-1]
			errs = append(errs, &persistence.StaleStoreError{Job: r.job, Shard: r.group, Seen: r.seen.Load(), Found: found})
		}
		return nil, errs, nil
	}
	gens, ok := res[2].([]any)
	if len(res) != 3 || !ok || len(gens) != len(part.gens) {
		return nil, nil, fmt.Errorf("redisstore: save: unexpected script reply %v", reply)
	}
	for j, v := range gens {
		g, ok := v.(int64)
		if !ok {
			return nil, nil, fmt.Errorf("redisstore: save: unexpected write generation %v", v)
		}
		part.gens[j].note(g)
	}
	r, err := parseFenced(part.idx, res[1])
	return r, nil, err
}

// refusal is one fenced snapshot: its batch index and the holder's epoch.
type refusal struct {
	index  int
	holder int64
}

// parseFenced reads saveScript's reply for a call whose snapshots have the
// batch indexes idx.
func parseFenced(idx []int, reply any) ([]refusal, error) {
	res, ok := reply.([]any)
	if !ok || len(res)%2 != 0 {
		return nil, fmt.Errorf("redisstore: save: unexpected script reply %v", reply)
	}
	var out []refusal
	for i := 0; i < len(res); i += 2 {
		j, ok1 := res[i].(int64)
		holder, ok2 := res[i+1].(string)
		if !ok1 || !ok2 || j < 1 || j > int64(len(idx)) {
			return nil, fmt.Errorf("redisstore: save: unexpected script reply %v, %v", res[i], res[i+1])
		}
		h, err := strconv.ParseInt(holder, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redisstore: save: owner epoch %q: %w", holder, err)
		}
		out = append(out, refusal{index: idx[j-1], holder: h})
	}
	return out, nil
}
