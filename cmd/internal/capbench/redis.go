package capbench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// redisClient reads what the benchmark measures from one redis-server.
type redisClient struct {
	c *goredis.Client
}

func newRedis(addr string) *redisClient {
	return &redisClient{c: goredis.NewClient(&goredis.Options{Addr: addr})}
}

func (r *redisClient) Close() error { return r.c.Close() }

// memInfo is what the benchmark reads of INFO memory.
type memInfo struct {
	Used      int64  // used_memory
	Allocator string // mem_allocator
}

func (r *redisClient) memory(ctx context.Context) (memInfo, error) {
	f, err := r.info(ctx, "memory")
	if err != nil {
		return memInfo{}, err
	}
	used, err := strconv.ParseInt(f["used_memory"], 10, 64)
	if err != nil {
		return memInfo{}, fmt.Errorf("INFO memory: used_memory %q: %w", f["used_memory"], err)
	}
	return memInfo{Used: used, Allocator: f["mem_allocator"]}, nil
}

func (r *redisClient) version(ctx context.Context) string {
	f, _ := r.info(ctx, "server")
	return f["redis_version"]
}

// info returns the fields of an INFO section.
func (r *redisClient) info(ctx context.Context, section string) (map[string]string, error) {
	txt, err := r.c.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, l := range strings.Split(txt, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// keyInfo is one Redis key as the survey saw it.
type keyInfo struct {
	name, kind, joinKey, typ, enc string
	bytes                         int64
}

// splitName cuts a key's name into its kind and join key: a join key's
// hash is named by a short hash tag and the key ("{<tag>}<key>", kind
// "k"), its outbox hash the same after "o" (kind "o"); a slot group's or
// the job's keys are "<prefix>:{<tag>}:<kind>". Any other name is of kind
// "other".
func splitName(name string) (kind, joinKey string) {
	for _, k := range []string{"k", "o"} {
		rest := name
		if k == "o" {
			rest = strings.TrimPrefix(name, "o")
			if rest == name {
				continue
			}
		}
		if strings.HasPrefix(rest, "{") {
			if i := strings.IndexByte(rest, '}'); i > 0 {
				return k, rest[i+1:]
			}
		}
	}
	i := strings.Index(name, "}:")
	if i < 0 {
		return "other", ""
	}
	kind, joinKey, _ = strings.Cut(name[i+2:], ":")
	return kind, joinKey
}

// surveyBatch is how many keys one pipeline asks about.
const surveyBatch = 512

// survey reads every key's type, encoding and memory usage (SCAN, then
// pipelines of TYPE, OBJECT ENCODING and MEMORY USAGE SAMPLES 0) and fills
// res's DBSize, Kinds, PerJoinKey and Samples.
func (r *redisClient) survey(ctx context.Context, res *Result) error {
	n, err := r.c.DBSize(ctx).Result()
	if err != nil {
		return err
	}
	res.DBSize = n
	var keys []keyInfo
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		p := r.c.Pipeline()
		types := make([]*goredis.StatusCmd, len(batch))
		encs := make([]*goredis.StringCmd, len(batch))
		mems := make([]*goredis.IntCmd, len(batch))
		for i, k := range batch {
			types[i] = p.Type(ctx, k)
			encs[i] = p.ObjectEncoding(ctx, k)
			mems[i] = p.MemoryUsage(ctx, k, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("survey: %w", err)
		}
		for i, k := range batch {
			ki := keyInfo{name: k, typ: types[i].Val(), enc: encs[i].Val(), bytes: mems[i].Val()}
			ki.kind, ki.joinKey = splitName(k)
			keys = append(keys, ki)
		}
		batch = batch[:0]
		return nil
	}
	it := r.c.Scan(ctx, 0, "*", 1000).Iterator()
	for it.Next(ctx) {
		if batch = append(batch, it.Val()); len(batch) == surveyBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}

	kinds := map[string]*KeyKind{}
	perKey := map[string][]int{} // join key -> indexes into keys
	for i, k := range keys {
		id := k.kind + " " + k.typ
		kk := kinds[id]
		if kk == nil {
			kk = &KeyKind{Kind: k.kind, Type: k.typ, Encodings: map[string]int64{}}
			kinds[id] = kk
		}
		kk.Keys++
		kk.Bytes += k.bytes
		kk.Encodings[k.enc]++
		if k.joinKey != "" {
			kk.PerJoinKey = true
			perKey[k.joinKey] = append(perKey[k.joinKey], i)
		}
		res.MemoryUsageSum += k.bytes
	}
	for _, kk := range kinds {
		kk.MeanBytes = float64(kk.Bytes) / float64(kk.Keys)
		res.Kinds = append(res.Kinds, *kk)
	}
	slices.SortFunc(res.Kinds, func(a, b KeyKind) int {
		if c := cmp.Compare(b.Bytes, a.Bytes); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})

	// Per join key: the sum of its keys' MEMORY USAGE.
	type jk struct {
		key   string
		bytes int64
	}
	var jks []jk
	for key, idx := range perKey {
		var b int64
		for _, i := range idx {
			b += keys[i].bytes
		}
		jks = append(jks, jk{key, b})
	}
	if len(jks) == 0 {
		return nil
	}
	slices.SortFunc(jks, func(a, b jk) int {
		if c := cmp.Compare(a.bytes, b.bytes); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	at := func(q float64) int64 { return jks[min(len(jks)-1, int(q*float64(len(jks))))].bytes }
	res.StoredJoinKeys = len(jks)
	res.PerJoinKey = Quantiles{P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: jks[len(jks)-1].bytes}
	for _, pick := range []struct {
		what string
		jk   jk
	}{{"median", jks[len(jks)/2]}, {"largest", jks[len(jks)-1]}} {
		s := Sample{Which: pick.what, JoinKey: pick.jk.key, Bytes: pick.jk.bytes}
		for _, i := range perKey[pick.jk.key] {
			k := keys[i]
			rk := RedisKey{Name: k.name, Kind: k.kind, Type: k.typ, Encoding: k.enc, Bytes: k.bytes}
			rk.Length, err = r.length(ctx, k.name, k.typ)
			if err != nil {
				return err
			}
			if k.typ == "hash" {
				if rk.Fields, err = r.fields(ctx, k.name); err != nil {
					return err
				}
			}
			s.Keys = append(s.Keys, rk)
		}
		slices.SortFunc(s.Keys, func(a, b RedisKey) int { return strings.Compare(a.Kind, b.Kind) })
		res.Samples = append(res.Samples, s)
	}
	return nil
}

// length is a key's length as its type counts it: a string's bytes, a
// hash's fields, a set's or a sorted set's members, a list's elements.
func (r *redisClient) length(ctx context.Context, key, typ string) (int64, error) {
	switch typ {
	case "string":
		return r.c.StrLen(ctx, key).Result()
	case "hash":
		return r.c.HLen(ctx, key).Result()
	case "set":
		return r.c.SCard(ctx, key).Result()
	case "zset":
		return r.c.ZCard(ctx, key).Result()
	case "list":
		return r.c.LLen(ctx, key).Result()
	}
	return 0, nil
}

// fields lists a hash's fields, sorted by name, with their sizes.
func (r *redisClient) fields(ctx context.Context, key string) ([]Field, error) {
	m, err := r.c.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	out := make([]Field, 0, len(m))
	for name, v := range m {
		shown := name
		if strconv.Quote(name) != `"`+name+`"` {
			shown = strconv.Quote(name)
		}
		out = append(out, Field{Name: shown, NameBytes: len(name), ValueBytes: len(v)})
	}
	slices.SortFunc(out, func(a, b Field) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
