package streamshard

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Assign assigns shards 0…shards-1 to members, the live members of a fleet
// (order does not matter, duplicates count once): owner[i] is the member
// that should read shard i — and, for sources whose shards follow the join
// key, the member that hosts key group i's key actors (KeyGroup; for Kafka
// topics keyed by the join key, partition i, which sources/kafka's
// KeyGroupBalancer assigns by Assign too). It is
// rendezvous hashing with bounded load: shard i goes to the member with the
// highest hash of (member, i) among those below their share — every member
// gets floor or ceil of shards/len(members) shards, never more than
// FairShare — so every member computes the same assignment from the same
// member list, and a member joining or leaving moves few shards. No
// members: nil.
func Assign(shards int, members []string) []string {
	ms := Dedup(members)
	if len(ms) == 0 || shards <= 0 {
		return nil
	}
	base, extra := shards/len(ms), shards%len(ms)
	load := make(map[string]int, len(ms))
	owner := make([]string, shards)
	for i := range shards {
		best, bestScore := "", uint64(0)
		for _, m := range ms {
			if l := load[m]; l > base || (l == base && extra == 0) {
				continue
			}
			if s := rendezvous(m, i); best == "" || s > bestScore {
				best, bestScore = m, s
			}
		}
		owner[i] = best
		if load[best]++; load[best] > base {
			extra--
		}
	}
	return owner
}

// FairShare is the most shards one of members live members gets:
// ceil(shards/members).
func FairShare(shards, members int) int {
	if members <= 0 {
		return shards
	}
	return (shards + members - 1) / members
}

// Dedup returns members sorted, each once.
func Dedup(members []string) []string {
	out := slices.Clone(members)
	slices.Sort(out)
	return slices.Compact(out)
}

// rendezvous scores member for shard: FNV-1a 64 of "member\x00shard",
// finished with a 64-bit mixer (FNV alone keeps similar names close).
func rendezvous(member string, shard int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(strconv.AppendInt(nil, int64(shard), 10))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// KeyGroup is the key group of a join key among shards groups: the shard a
// producer that partitions by the join key puts the key's rows in, Of of
// the key as a one-element JSON array (KeyJSON) — the rule the row's
// primary key follows (`[42]`), applied to the join column. A source whose
// shards follow the join key (sources[].partitioned_by: join_key) thus has
// shard i hold exactly the keys of group i, and the node that reads shard i
// hosts their key actors.
func KeyGroup(key string, shards int) int { return Of(KeyJSON(key), shards) }

// KeyJSON is a join key's text form (record.Key: strings as they are,
// numbers in their JSON text) as a one-element JSON array: `[42]` for a key
// that is a JSON number, `["eu"]` otherwise. A string join column whose
// values look like numbers is grouped as the number; its keys still join
// exactly, only their actors may live away from their shard's reader.
func KeyJSON(key string) []byte {
	b := make([]byte, 0, len(key)+4)
	b = append(b, '[')
	if isJSONNumber(key) {
		b = append(b, key...)
	} else {
		b = appendJSONString(b, key)
	}
	return append(b, ']')
}

// isJSONNumber reports whether s is a number in JSON's grammar.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// appendJSONString appends s as a JSON string the way a compact encoder
// without HTML escaping writes it (encoding/json with SetEscapeHTML(false)).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\ufffd"):
			b = append(b, `\ufffd`...) // invalid UTF-8, as encoding/json writes it
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		case r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, string(r)...)
		}
	}
	return append(b, '"')
}
