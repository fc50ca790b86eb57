package redisstore

import (
	"strings"

	"github.com/joinery/joinery/record"
)

// luaMigrate defines migrate(hk, sk, pk, ek), which moves a key stored in
// layout version 1 into its key hash (see the package doc, "Layout
// version 1"): when the hash hk does not exist and the layout-1 state
// string sk or epoch string ek does, it writes the epoch, the value and
// each field of the parts hash pk (a part name starting with "_" gains one
// more, as in every key hash) into hk, deletes sk, pk and ek, and removes
// the key from its group's layout-1 keys set. The epoch moves as it is, so
// it never goes back. Everything it touches is in the key's slot, and it
// runs inside the script that reads or writes the key, so no other command
// sees the key half moved.
//
// luaNames1 defines names1(hk), the layout-1 names (sk, pk, ek) of the key
// of hash hk: the group prefix is hk up to the first "}" and the ":" after
// it (a tag holds no "}", a key prefix no brace), the key what follows
// hashKind.
const luaMigrate = `
local function migrate(hk, sk, pk, ek)
  if redis.call('EXISTS', hk) == 1 then
    return
  end
  local e = redis.call('GET', ek)
  local v = redis.call('GET', sk)
  if not e and not v then
    return
  end
  local f = {}
  if e then
    f[#f + 1] = '_e'
    f[#f + 1] = e
  end
  if v then
    f[#f + 1] = '_b'
    f[#f + 1] = v
    local ps = redis.call('HGETALL', pk)
    for i = 1, #ps, 2 do
      local n = ps[i]
      if string.byte(n, 1) == 95 then
        n = '_' .. n
      end
      f[#f + 1] = n
      f[#f + 1] = ps[i + 1]
    end
  end
  local i = 1
  while i <= #f do
    local j = math.min(i + 399, #f)
    redis.call('HSET', hk, unpack(f, i, j))
    i = j + 1
  end
  redis.call('DEL', sk, pk, ek)
  local b = string.find(hk, '}', 1, true)
  redis.call('SREM', string.sub(hk, 1, b + 1) .. 'keys', string.sub(hk, b + 4))
end
local function names1(hk)
  local b = string.find(hk, '}', 1, true)
  local gp, key = string.sub(hk, 1, b + 1), string.sub(hk, b + 4)
  return gp .. 'state:' .. key, gp .. 'parts:' .. key, gp .. 'epoch:' .. key
end
`

// keyNames1 appends the key hash of key, its outbox hash and its layout-1
// names, in the order loadScript takes them: hash, outbox, then migrate's
// state, parts, epoch.
func keyNames1(keys []string, gp string, key record.Key) []string {
	return append(keys, keyHash(gp, key), outboxHash(gp, key), stateKey1(gp, key), partsKey1(gp, key), epochKey1(gp, key))
}

// fieldOf is the hash field of part name: the name, or with one more
// partEscape in front when it starts with one.
func fieldOf(name string) string {
	if len(name) > 0 && name[0] == partEscape {
		return string(partEscape) + name
	}
	return name
}

// partOf is the part name of a key hash field, and false for a reserved
// field (one starting with a single partEscape).
func partOf(field string) (string, bool) {
	if len(field) == 0 || field[0] != partEscape {
		return field, true
	}
	if strings.HasPrefix(field[1:], string(partEscape)) {
		return field[1:], true
	}
	return "", false
}
