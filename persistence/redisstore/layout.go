package redisstore

import (
	"hash/fnv"
	"strconv"
	"strings"
	"sync"

	"github.com/joinery/joinery/record"
)

// groups is the number of slot groups of a job (see the package doc, "Key
// layout"). It is part of the layout: data written with one value is not
// found with another.
const groups = 256

// clusterSlots is the number of Redis Cluster hash slots.
const clusterSlots = 16384

// groupWidth is the slot window of one group: group g's tag hashes into
// slots [g*groupWidth, (g+1)*groupWidth).
const groupWidth = clusterSlots / groups

// maxTagSearch bounds the search for a group's tag suffix. A window is
// 1/groups of the slots, so the search takes about groups tries; no job
// name needs more than a few thousand (TestLayoutTagSearch), and past the
// bound the tag keeps suffix 0 (the group still works, only its slot is
// outside its window).
const maxTagSearch = 1 << 20

// tagEscaper makes a job name safe inside a hash tag; the mapping is
// injective because "%" itself is escaped.
var tagEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// groupOf is the slot group of a join key or a partition id: FNV-1a (64
// bit) of its bytes, modulo groups.
func groupOf(s string) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return int(h.Sum64() % groups)
}

// groupTag returns the hash tag of group g of job: "<escaped job>:<g>:<n>"
// with the least n >= 0 whose CRC16 slot lies in the group's window.
// The candidates are built in one buffer; only the tag found becomes a
// string.
func groupTag(job string, g int) string {
	base := tagEscaper.Replace(job) + ":" + strconv.Itoa(g) + ":"
	lo := g * groupWidth
	tag := make([]byte, 0, len(base)+8)
	for n := range maxTagSearch {
		tag = strconv.AppendInt(append(tag[:0], base...), int64(n), 10)
		if s := int(crc16(tag) % clusterSlots); s >= lo && s < lo+groupWidth {
			return string(tag)
		}
	}
	return base + "0"
}

// jobLayout holds the key prefixes "<prefix>:{<tag>}:" of a job's groups
// and the keys of each group that Save names in every call (made once, so
// a Save builds none of them).
type jobLayout struct {
	prefixes [groups]string
	timers   [groups]string // timersKey of each group
	gens     [groups]string // genKey of each group
}

// layouts caches the jobLayout of every job a store has touched, by
// "<prefix>\x00<job>": 256 prefixes, some 10 KB per job; computing one
// takes about 65,000 CRC16s of the tag, a few milliseconds, once.
var layouts sync.Map

// layoutOf returns the (cached) layout of job under prefix.
func layoutOf(prefix, job string) *jobLayout {
	id := prefix + "\x00" + job
	if l, ok := layouts.Load(id); ok {
		return l.(*jobLayout)
	}
	l := new(jobLayout)
	for g := range groups {
		l.prefixes[g] = prefix + ":{" + groupTag(job, g) + "}:"
		l.timers[g] = timersKey(l.prefixes[g])
		l.gens[g] = genKey(l.prefixes[g])
	}
	actual, _ := layouts.LoadOrStore(id, l)
	return actual.(*jobLayout)
}

// keyPrefix returns the group prefix of key.
func (l *jobLayout) keyPrefix(key record.Key) string { return l.prefixes[groupOf(string(key))] }

// keyHash2 is a join key's hash in layout version 2: epoch, base and
// parts, under the group prefix.
func keyHash2(gp string, key record.Key) string { return gp + hashKind + string(key) }

// A jobNames is what a store knows of a job in layout version 3 (see the
// package doc, "Key layout"): its id in the store's job registry, the
// short hash tag of each group, and whether the store may still hold the
// job's keys in an earlier layout (then every access to a key first moves
// it: migrate.go).
type jobNames struct {
	*jobLayout
	id     string         // two letters
	short  [groups]string // "{<id><letters>}", in the slot of the group's prefix
	legacy bool
}

// keyHash is the name of key's hash: its group's short tag, then the key.
func (n *jobNames) keyHash(key record.Key) string {
	return n.short[groupOf(string(key))] + string(key)
}

// outboxHash is the name of key's outbox hash: outboxMark, the short tag,
// the key.
func (n *jobNames) outboxHash(key record.Key) string {
	return outboxMark + n.short[groupOf(string(key))] + string(key)
}

// outboxMark starts an outbox hash's name, before its short tag; a key
// hash's name starts with the tag's "{".
const outboxMark = "o"

// tagLetters are the characters of a short tag: the job's id is two of
// them, the rest one to four more, so a SCAN pattern "{<id>*" matches one
// job's key hashes.
const tagLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// maxTagLetters bounds a short tag's letters: 52^4 candidates, where the
// search below needs some 100,000.
const maxTagLetters = 4

// shortTags returns the short tag of every group of the job of id in
// layout l: "{<id><s>}" with the first letter string s (shortest first,
// then in tagLetters order) whose CRC16 slot is the slot of the group's
// prefix.
// So a key's hash lies in the slot its layout-2 name had, and on a Redis
// Cluster a key moves to its new name by RENAME inside the script that
// reads or writes it. One pass over the candidates fills every group:
// each hits one of the 256 slots with a chance of 1/64, so all are found
// after some 100,000 CRC16s; about 1 job in 25 needs four letters for one
// group. ok is false when a group found none (it cannot happen for the
// lengths searched; a test checks 200 ids).
func shortTags(l *jobLayout, id string) (tags [groups]string, ok bool) {
	want := make(map[uint16]int, groups)
	for g := range groups {
		want[crc16(l.prefixes[g][strings.IndexByte(l.prefixes[g], '{')+1:strings.IndexByte(l.prefixes[g], '}')])%clusterSlots] = g
	}
	base := id
	buf := make([]byte, 0, len(base)+maxTagLetters)
	var digits [maxTagLetters]int
	left := groups
	for n := 1; n <= maxTagLetters && left > 0; n++ {
		clear(digits[:])
		for {
			buf = append(buf[:0], base...)
			for i := range n {
				buf = append(buf, tagLetters[digits[i]])
			}
			if g, hit := want[crc16(buf)%clusterSlots]; hit && tags[g] == "" {
				tags[g] = "{" + string(buf) + "}"
				if left--; left == 0 {
					break
				}
			}
			i := n - 1
			for i >= 0 && digits[i] == len(tagLetters)-1 {
				digits[i] = 0
				i--
			}
			if i < 0 {
				break
			}
			digits[i]++
		}
	}
	return tags, left == 0
}

func timersKey(gp string) string  { return gp + "timers" }
func offsetsKey(gp string) string { return gp + "offsets" }

// hashKind is what follows the group prefix in a key hash's name in
// layout version 2.
const hashKind = "k:"

// outboxPrefix starts the names of the parts kept in a key's outbox hash,
// apart from its key hash. The key core names its outbox entries
// "o:<16 hex digits>" (keycore, parts.go): outputs kept until the sources
// commit past their input, so they come and go with every input and are
// larger than a row (a few hundred bytes of output JSON). In the key hash
// one such value would turn the hash from Redis's compact listpack
// encoding into a hashtable for good (Redis never converts back when the
// value goes); in a hash of their own they leave the key hash compact, and
// the outbox hash disappears when its last entry is deleted.
const outboxPrefix = "o:"

// isOutbox reports whether part name lives in the outbox hash.
func isOutbox(name string) bool {
	return len(name) >= len(outboxPrefix) && name[:len(outboxPrefix)] == outboxPrefix
}

// outboxHash2 is the name of key's outbox hash in layout version 2.
func outboxHash2(gp string, key record.Key) string { return gp + "o:" + string(key) }

// The reserved fields of a key hash (see the package doc, "Key hash"):
// the owner epoch and the base (the encoded snapshot value). Part names
// starting with partEscape are stored with one more partEscape in front,
// so no part's field is ever one of these.
const (
	epochField = "_e"
	baseField  = "_b"
	partEscape = '_'
)

// The names of layout version 1, read only to move a key into its hash
// (migrate.go): per key a state string, a parts hash and an epoch string,
// and per group a keys set.
func stateKey1(gp string, key record.Key) string { return gp + "state:" + string(key) }
func epochKey1(gp string, key record.Key) string { return gp + "epoch:" + string(key) }
func partsKey1(gp string, key record.Key) string { return gp + "parts:" + string(key) }
func keysKey1(gp string) string                  { return gp + "keys" }

// crc16 is Redis Cluster's key hash: CRC-16/XMODEM (polynomial 0x1021,
// initial value 0), of which HASH_SLOT takes the low 14 bits.
func crc16[T ~string | ~[]byte](s T) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^s[i]]
	}
	return crc
}

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
