package redisstore

import (
	"strconv"
	"strings"

	"github.com/joinery/joinery/record"
)

// luaMigrate defines migrate(hk, sk, pk, ek), which moves a key stored in
// layout version 1 into its key hash (see the package doc, "Earlier
// layouts"): when the hash hk does not exist and the layout-1 state
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

// luaMigrate3 defines migrate3(hk, ok, hk2), which moves a key of a
// store that may hold layouts 1 and 2 to its layout-3 names: when its hash
// hk does not exist, a key in layout 1 is first moved into its layout-2
// hash hk2 (migrate), the fields of hk2 are renamed as fieldOf names them
// (a field that is an integer gains intEscape, then a right row's
// "r:<integer>" becomes the integer; canonical is canonicalInt), and then
// hk2 and the key's layout-2 outbox hash (hk2's name with "o:" for "k:")
// are renamed to hk and the outbox hash ok. Both names of a key lie in one
// slot (shortTags), so RENAME is legal on a cluster, and it runs inside
// the script that reads or writes the key.
const luaMigrate3 = luaMigrate + `
local function canonical(d)
  local u, neg = d, string.sub(d, 1, 1) == '-'
  if neg then
    u = string.sub(d, 2)
  end
  if #u == 0 or #u > 19 or not string.find(u, '^%d+$') then
    return false
  end
  if string.sub(u, 1, 1) == '0' and (#u > 1 or neg) then
    return false
  end
  if #u == 19 then
    if neg then
      return u <= '9223372036854775808'
    end
    return u <= '9223372036854775807'
  end
  return true
end
local function fields3(hk)
  for pass = 1, 2 do
    local f = redis.call('HKEYS', hk)
    for i = 1, #f do
      local n, to = f[i], nil
      if pass == 1 and canonical(n) then
        to = '_=' .. n
      elseif pass == 2 and string.sub(n, 1, 2) == 'r:' and canonical(string.sub(n, 3)) then
        to = string.sub(n, 3)
      end
      if to then
        redis.call('HSET', hk, to, redis.call('HGET', hk, n))
        redis.call('HDEL', hk, n)
      end
    end
  end
end
local function migrate3(hk, ok, hk2)
  if redis.call('EXISTS', hk) == 1 then
    return
  end
  migrate(hk2, names1(hk2))
  if redis.call('EXISTS', hk2) == 1 then
    fields3(hk2)
    redis.call('RENAME', hk2, hk)
  end
  local b = string.find(hk2, '}', 1, true)
  local ok2 = string.sub(hk2, 1, b + 1) .. 'o:' .. string.sub(hk2, b + 4)
  if redis.call('EXISTS', ok2) == 1 then
    redis.call('RENAME', ok2, ok)
  end
end
`

// keyNames appends the names of key the scripts take, in their order:
// its hash, its outbox hash and, for a job that may hold keys of an
// earlier layout, its layout-2 hash (for migrate3).
func (n *jobNames) keyNames(keys []string, key record.Key) []string {
	keys = append(keys, n.keyHash(key), n.outboxHash(key))
	if n.legacy {
		keys = append(keys, keyHash2(n.keyPrefix(key), key))
	}
	return keys
}

// rowPrefix starts the names of the key core's right rows ("r:<primary
// key>"). A right row whose primary key is an integer is stored under the
// integer alone, which a listpack holds in 2 to 10 bytes instead of the
// name's characters (see the package doc, "Key hash").
const rowPrefix = "r:"

// intEscape starts the field of a part whose name is itself an integer:
// "_=" and the name, so that it is not read as a right row's.
const intEscape = "_="

// canonicalInt reports whether s is the decimal of an int64 as
// strconv.FormatInt writes it: an optional "-", no leading zero (but "0"
// itself), not "-0". Redis stores such a field as an integer.
func canonicalInt(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > 19 || (d[0] == '0' && (len(d) > 1 || len(s) > 1)) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// fieldOf is the hash field of part name: the integer of a right row
// "r:<integer>", intEscape in front of a name that is an integer, one
// more partEscape in front of a name that starts with one, else the name.
func fieldOf(name string) string {
	switch {
	case len(name) > 0 && name[0] == partEscape:
		return string(partEscape) + name
	case strings.HasPrefix(name, rowPrefix) && canonicalInt(name[len(rowPrefix):]):
		return name[len(rowPrefix):]
	case canonicalInt(name):
		return intEscape + name
	}
	return name
}

// partOf is the part name of a key hash field (fieldOf's inverse), and
// false for a reserved field (one starting with a single partEscape, not
// intEscape).
func partOf(field string) (string, bool) {
	switch {
	case canonicalInt(field):
		return rowPrefix + field, true
	case len(field) == 0 || field[0] != partEscape:
		return field, true
	case strings.HasPrefix(field[1:], string(partEscape)):
		return field[1:], true
	case strings.HasPrefix(field, intEscape) && canonicalInt(field[len(intEscape):]):
		return field[len(intEscape):], true
	}
	return "", false
}
